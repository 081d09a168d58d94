"""linrec.analyses.probe: the bilinear residual probe and the trained linear baselines on planted problems, the rows
they fit on, and a rank that would not fit in memory."""

import pandas as pd
import pytest
import torch

from helpers import on_threads, thread_rows
from linrec.analyses.probe import ProbeTraining, Rows, Schedule, closed_form_on_rows, fit_probe, train_affine


def _inputs(n, d, seed, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    scales = torch.logspace(0, spread, d)
    return torch.randn(n, d, generator=g) * scales + 0.5, scales, g


def _split(x, y, n_train):
    return Rows(x[:n_train], y[:n_train], x[n_train:], y[n_train:])


def test_probe_recovers_a_planted_bilinear_residual():
    n, d, do, k = 8000, 24, 16, 6
    x, scales, g = _inputs(n, d, 0)
    A = torch.randn(d, do, generator=g) / d**0.5
    U = torch.randn(k, d, generator=g) / d**0.5 / scales
    V = torch.randn(k, d, generator=g) / d**0.5 / scales
    C = torch.randn(do, k, generator=g)
    y = x @ A + ((x @ U.T) * (x @ V.T)) @ C.T + 0.01 * torch.randn(n, do, generator=g)
    rows = _split(x, y, 6400)
    fit, r2_cf = closed_form_on_rows(rows)
    res = fit_probe(rows, fit, rank=16, training=ProbeTraining(max_epochs=60))
    assert res.r2_lin < 0.95  # the linear map clearly misses the bilinear part …
    assert res.r2_poly >= 0.99  # … which the probe recovers
    assert res.converged
    assert abs(res.r2_lin - r2_cf) < 1e-6


def test_gain_is_zero_on_a_linear_target():
    n, d, do = 6000, 24, 16
    x, _, g = _inputs(n, d, 1)
    y = x @ torch.randn(d, do, generator=g) + 0.3 * torch.randn(n, do, generator=g)
    rows = _split(x, y, 4800)
    fit, _ = closed_form_on_rows(rows)
    res = fit_probe(rows, fit, rank=16)
    assert abs(res.gain) < 2e-3  # noise level: 0.3² / Var(y) ≈ 4e-3 of the variance is noise
    assert res.gain > -2e-3


def test_trained_baseline_reaches_the_ceiling_only_when_well_conditioned():
    n, d, do = 24000, 32, 8  # 20k train rows: 5 epochs of batch 256 are ~390 Adam steps
    g = torch.Generator().manual_seed(2)
    W = torch.randn(d, do, generator=g) / (4 * d**0.5)  # weights ~0.04 on unit-scale inputs: in reach of 390 steps
    well = torch.randn(n, d, generator=g)
    ill = well * torch.logspace(-3, 0, d)  # feature scales over 3 decades: κ(Gram) ≈ 1e6
    for x, expect_gap in ((well, False), (ill, True)):
        y = x @ (W / x.std(0)[:, None]) + 0.01 * torch.randn(n, do, generator=g)
        rows = _split(x, y, 20000)
        fit, ceiling = closed_form_on_rows(rows)
        adam = train_affine(rows, "adam", Schedule(epochs=5), seed=0)
        if expect_gap:
            assert fit.cond_gram >= 1e6
            assert ceiling - adam.r2_test > 0.05  # same budget, clearly short of the ceiling
            whitened = train_affine(rows, "adam", Schedule(epochs=5), whiten=True, seed=0)
            assert ceiling - whitened.r2_test < 5e-3  # conditioning, not capacity
        else:
            assert (
                ceiling - adam.r2_test < 5e-3
            )  # within 0.5 % of the ceiling, 10x closer than the ill-conditioned case


def test_results_are_bit_identical_for_a_fixed_seed():
    n, d, do = 3000, 16, 8
    x, _, g = _inputs(n, d, 3)
    y = torch.tanh(x @ torch.randn(d, do, generator=g) / 4)
    rows = _split(x, y, 2400)
    fit, _ = closed_form_on_rows(rows)
    a, b = (fit_probe(rows, fit, rank=4, training=ProbeTraining(max_epochs=5), seed=7) for _ in range(2))
    assert a.r2_poly == b.r2_poly and a.losses == b.losses
    s1, s2 = train_affine(rows, "sgd", seed=3), train_affine(rows, "sgd", seed=3)
    assert s1.r2_test == s2.r2_test and s1.losses == s2.losses
    assert train_affine(rows, "sgd", seed=4).losses != s1.losses


# ---- the convergence check: closed-form quadratic on the top input components ------------------------------
def test_quadratic_closed_form_matches_lstsq_on_its_features():
    """Independent reference: numpy lstsq of y on [1, x, z_i z_j] with z the top-k PCs of the standardised train x."""
    import numpy as np

    from linrec.analyses.probe import quadratic_closed_form
    from linrec.stats.ceiling import r2_rows

    n, d, do, k = 4000, 12, 5, 4
    x, _, g = _inputs(n, d, 7, spread=0.5)
    x = x.double()
    y = torch.tanh(x @ torch.randn(d, do, generator=g, dtype=torch.float64)) + 0.05 * torch.randn(
        n, do, generator=g, dtype=torch.float64
    )
    rows = _split(x.float(), y.float(), 3200)
    xtr, xte = rows.xtr.double().numpy(), rows.xte.double().numpy()
    mu, sd = xtr.mean(0), xtr.std(0, ddof=1)
    lam, vec = np.linalg.eigh(((xtr - mu) / sd).T @ ((xtr - mu) / sd))
    P = vec[:, -k:]
    iu = np.triu_indices(k)

    def feats(a):
        z = ((a - mu) / sd) @ P
        return np.c_[np.ones(len(a)), a, (z[:, :, None] * z[:, None, :])[:, iu[0], iu[1]]]

    coef = np.linalg.lstsq(feats(xtr), rows.ytr.double().numpy(), rcond=None)[0]
    ref = r2_rows(rows.yte, feats(xte) @ coef)
    assert abs(quadratic_closed_form(rows, k=k) - ref) < 1e-9


def test_quadratic_closed_form_recovers_a_planted_quadratic():
    from linrec.analyses.probe import quadratic_closed_form

    n, d, do = 6000, 16, 8
    g = torch.Generator().manual_seed(8)
    s = torch.randn(n, 2, generator=g)  # two latent factors, each copied into half the features: the top 2 PCs
    x = s.repeat_interleave(d // 2, dim=1) + 0.05 * torch.randn(n, d, generator=g)
    product = x[:, : d // 2].mean(1, keepdim=True) * x[:, d // 2 :].mean(1, keepdim=True)
    y = 0.2 * x @ torch.randn(d, do, generator=g) + 3 * product @ torch.randn(1, do, generator=g)
    rows = _split(x, y, 4800)
    _, r2_lin = closed_form_on_rows(rows)
    assert r2_lin < 0.9 and quadratic_closed_form(rows, k=2) > 0.995


# ---- the pitfall's mechanism ------------------------------------------------------------------------------------
def test_scaled_targets_are_scored_on_the_raw_targets():
    """Large, offset targets on well-conditioned inputs: Adam's bounded steps cannot reach the map; standardising the
    targets can, and its R² is the raw one (checked against the ceiling on the same rows)."""
    n, d, do = 30_000, 16, 4  # 24k train rows: 470 Adam steps of ≤ 1e-3 each, enough for the standardised map only
    g = torch.Generator().manual_seed(9)
    x = torch.randn(n, d, generator=g)
    y = 300 * (x @ torch.randn(d, do, generator=g)) + 1000 + torch.randn(n, do, generator=g)
    rows = _split(x, y, 24_000)
    _, ceiling = closed_form_on_rows(rows)
    plain = train_affine(rows, "adam").r2_test
    scaled = train_affine(rows, "adam", scale_targets=True).r2_test
    assert ceiling > 0.999 and plain < 0 and scaled > 0.85


def test_adam_reach_counts_parameters_in_units_of_the_budget():
    import numpy as np

    from linrec.analyses.probe import TRAIN_DEFAULTS, adam_reach
    from linrec.stats.ceiling import AffineFit

    W = np.zeros((100, 1))
    W[:, 0] = np.arange(100.0)  # |θ| = 0 … 99, plus b = 0
    fit = AffineFit(W=W, b=np.zeros(1), cond_gram=1.0, cond_scaled=1.0, rank=100, n_train=1000, dead_inputs=0)
    cfg = TRAIN_DEFAULTS["adam"]
    steps = cfg["epochs"] * -(-1000 // cfg["batch_size"])
    theta = np.r_[np.arange(100.0), 0.0]
    assert adam_reach(fit, 1000) == np.quantile(theta, 0.99) / (cfg["lr"] * steps)


def test_mechanism_and_sweep_blocks_use_no_held_out_data():

    from linrec.analyses.probe import mechanism_blocks, sweep_blocks

    cond = pd.Series([5.0, 1.0, 9.0, 3.0, 7.0, 2.0], index=[0, 1, 2, 3, 4, 5])
    assert mechanism_blocks(cond, 2) == [1, 5, 4, 2]  # best two first, then the two worst
    assert mechanism_blocks(cond, 3) == [1, 5, 3, 0, 4, 2]
    assert sweep_blocks(30) == [5, 15, 24] and sweep_blocks(18) == [3, 9, 14] and sweep_blocks(1) == [0]


def test_standardised_inputs_fix_scales_but_not_correlations():
    """Independent features on scales 1 … 1000: per-feature standardisation is all SGD needs. Two nearly collinear
    features: standardising leaves the correlation (κ of the scaled Gram ≈ 2/(1 − ρ)), whitening removes it."""
    n, d = 20_000, 8
    g = torch.Generator().manual_seed(10)
    x = torch.randn(n, d, generator=g) * torch.logspace(0, 3, d)
    y = (x / torch.logspace(0, 3, d)) @ torch.randn(d, 3, generator=g) + 0.1 * torch.randn(n, 3, generator=g)
    rows = _split(x, y, 16_000)
    _, ceiling = closed_form_on_rows(rows)
    slow = Schedule(lr=1e-8, decay=True)  # a step small enough not to diverge on 1e3 scales
    raw = train_affine(rows, "sgd", slow).r2_test
    std = train_affine(rows, "sgd", Schedule(decay=True), standardise=True).r2_test
    assert raw < ceiling - 0.3 and abs(std - ceiling) < 0.01
    z = torch.randn(n, 1, generator=g)
    xc = torch.cat([z + 1e-3 * torch.randn(n, 1, generator=g), z - 1e-3 * torch.randn(n, 1, generator=g)], dim=1)
    yc = (xc[:, :1] - xc[:, 1:]) * 300 + 0.01 * torch.randn(n, 1, generator=g)  # lives in the tiny direction
    rows = _split(xc, yc, 16_000)
    _, ceiling = closed_form_on_rows(rows)
    std = train_affine(rows, "sgd", Schedule(decay=True), standardise=True).r2_test
    white = train_affine(rows, "sgd", Schedule(decay=True), whiten=True).r2_test
    assert ceiling > 0.9 and std < ceiling - 0.3 and abs(white - ceiling) < 0.01


def test_max_train_draws_seeded_rows_from_the_whole_train_split():
    """`Rows.from_capture(max_train=k)`: k distinct train rows drawn by the capture's seed (not the first k, which
    would be the corpus's first windows), the same for every block; every test row; too few rows is one line."""
    from types import SimpleNamespace

    import numpy as np
    import pytest

    from linrec.base.errors import LinrecError

    n, d = 400, 3
    x = np.arange(n * d, dtype=np.float32).reshape(n, d)  # row i holds 3i, 3i+1, 3i+2
    stored = {"train": (x[:300], x[:300] * 2), "test": (x[300:], x[300:] * 2)}
    cap = SimpleNamespace(rows=lambda block, split: stored[split], config=SimpleNamespace(seed=0))
    rows = Rows.from_capture(cap, 0, max_train=50)
    idx = (rows.xtr[:, 0] / 3).long()
    assert len(idx) == 50 == len(set(idx.tolist())) and idx.max() < 300
    assert idx.tolist() == sorted(idx.tolist()) and idx.tolist() != list(range(50)) and idx.max() > 150
    assert torch.equal(rows.ytr, rows.xtr * 2)  # x and y rows stay paired
    assert torch.equal(Rows.from_capture(cap, 5, max_train=50).xtr, rows.xtr)  # same rows for every block
    assert len(rows.xte) == 100 and len(Rows.from_capture(cap, 0).xtr) == 300
    assert len(Rows.from_capture(cap, 0, max_train=1000).xtr) == 300
    with pytest.raises(LinrecError, match="max_train=4"):
        Rows.from_capture(cap, 0, max_train=4)


def test_without_first_drops_every_first_position_row_and_fits_on_the_rest(tiny_model_dir, tiny_corpus):
    """Claim 3's robustness check: `Rows.from_capture(without_first=True)` keeps exactly the stored rows at positions
    ≥ 1 of each split (against the capture's row index), and `probe_table(without_first=True)` scores the
    closed-form map fitted on those train rows: its R²_lin equals numpy's lstsq on the same rows."""
    import numpy as np

    from helpers import capture_with
    from linrec.analyses.probe import probe_table

    cap = capture_with(tiny_model_dir, tiny_corpus(8000), seq_len=32, tokens=3200, sample_rows=10_000, progress=False)
    index = cap.row_index()
    for k in (0, 1):  # train, test
        assert (index[index[:, 2] == k, 1] == 0).sum() > 0  # the capture has first-position rows to drop
    rows = Rows.from_capture(cap, 1, without_first=True)
    xtr, ytr = cap.rows(1, "train")
    xte, yte = cap.rows(1, "test")
    keep_tr, keep_te = index[index[:, 2] == 0, 1] > 0, index[index[:, 2] == 1, 1] > 0
    assert np.array_equal(rows.xtr.numpy(), xtr[keep_tr]) and np.array_equal(rows.yte.numpy(), yte[keep_te])
    table = probe_table(cap, rank=2, trained=False, progress=False, without_first=True)
    A = np.c_[xtr[keep_tr], np.ones(keep_tr.sum())].astype(np.float64)
    coef = np.linalg.lstsq(A, ytr[keep_tr].astype(np.float64), rcond=None)[0]
    pred = np.c_[xte[keep_te], np.ones(keep_te.sum())] @ coef
    y = yte[keep_te].astype(np.float64)
    ref = 1 - ((y - pred) ** 2).sum() / ((y - y.mean(0)) ** 2).sum()
    assert abs(table.loc[1, "r2_lin_rows"] - ref) < 1e-5 and table.loc[1, "r2_lin"] == table.loc[1, "r2_lin_rows"]
    assert table.loc[1, "n_test_rows"] == keep_te.sum()


def test_a_probe_rank_that_would_not_fit_in_memory_names_the_largest_that_does():
    from linrec.analyses.probe import check_rank, quadratic_bytes
    from linrec.base.errors import LinrecError

    gib = 2**30
    check_rank(16, 576, 576, 24_000, available=4 * gib)  # the paper's rank on SmolLM2: 0.2 GiB
    with pytest.raises(LinrecError) as err:
        check_rank(576, 576, 576, 24_000, available=24 * gib)  # the 224 GB case of the issue
    msg = str(err.value)
    fits = int(msg.split("use --rank ")[1].split()[0])
    assert quadratic_bytes(576, fits, 24_000) <= 12 * gib < quadratic_bytes(576, fits + 1, 24_000)
    with pytest.raises(LinrecError, match="outside 1 … 64"):
        check_rank(65, 64, 128, 100, available=24 * gib)


def test_the_probe_and_the_trained_baselines_give_the_same_numbers_on_1_and_2_threads():
    """Issue 64, item 8: a notebook's kernel gets 1 or 2 threads by how busy the machine is, and the probe's numbers
    must not follow. Rows 96 wide in batches of 1,024: the probe's per-batch loss reduces 98,304 elements, which torch
    splits by thread unguarded (its losses then differ at 1e-7 and its stopping epoch can move); every number equal,
    bit for bit, and the caller's thread count is back afterwards. Planted (the guard taken off `fit_probe`): the
    losses differ and this fails."""
    rows = thread_rows()
    fit, _ = closed_form_on_rows(rows)
    training = ProbeTraining(max_epochs=3, batch_size=1024)

    def numbers():
        p = fit_probe(rows, fit, rank=8, training=training)
        adam = train_affine(rows, "adam", Schedule(epochs=2, batch_size=512))
        sgd = train_affine(rows, "sgd", Schedule(epochs=2, batch_size=512))
        return [p.r2_lin, p.r2_poly, p.epochs, p.stop, *p.losses, adam.r2_test, *adam.losses, sgd.r2_test, *sgd.losses]

    one, two = on_threads(1, numbers), on_threads(2, numbers)
    assert len(one) == 13 and one == two
    assert on_threads(2, torch.get_num_threads) == 2
