"""linrec.analyses.screening: the swap study's choices on train windows only: leave-screening-out fits, the
predictors against stored rows, the greedy swap within its budget, none of them reading a held-out window."""

import numpy as np
import pytest
import torch

from helpers import perturbed_test_windows, swap_study, tiny_tokenizer, tiny_windows
from linrec.analyses.screening import GREEDY_ORDERS, greedy_swap, screening_ids
from linrec.analyses.swap import SwapStudy
from linrec.analyses.uncertainty import SWAP_LEVEL
from linrec.base.errors import LinrecError
from linrec.collect.capture import run_capture
from linrec.collect.config import CaptureConfig
from linrec.inputs.corpora import Windows
from linrec.inputs.hf import LoadedModel
from linrec.stats.ceiling import fit_affine


def test_screening_fit_leaves_the_screening_windows_out(tiny_model):
    """The leave-screening-out map equals a fit on a capture of the other train windows only."""
    st = swap_study(tiny_model("qwen2"), screening_windows=3)
    ids = screening_ids(st.windows, 3)
    w = st.windows
    keep = np.array([i for i in w.train if not any(torch.equal(w.ids[i], r) for r in ids)])
    assert len(keep) == len(w.train) - 3
    rest = Windows(w.ids, keep, w.test, w.corpus, w.identity, w.bos)
    ref = run_capture(st.loaded, rest, CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=0), progress=False)
    for i in range(2):
        a, b = st.screening.screening_fit(i).W, fit_affine(ref.stats["train"][i]).W
        assert np.abs(a - b).max() <= 1e-6 * np.abs(b).max()


def test_greedy_respects_the_budget(affine_llama):
    st = swap_study(affine_llama)
    ev = st.screening.evaluator
    d0 = st.screening.alone(0)
    r = st.greedy(budget_ppl=d0 / 10)  # block 1 (R² = 1) first, costs ~0; block 0 exceeds the budget alone
    assert r.swapped == [1] and r.order == "r2_lin"
    assert list(r.steps["block"]) == [1, 0] and list(r.steps["kept"]) == [True, False]
    assert list(r.steps["tried"]) == [True, False]  # block 0 is over the budget alone: not tried
    assert r.delta_ppl <= d0 / 10
    assert r.params_removed == 32 * 32 + 32 and r.params_added == 32 * 32 + 32
    assert r.test is not None and abs(r.test.delta) < 1e-6 * r.test.ppl_base  # the affine block costs nothing
    everything = st.greedy(budget_ppl=1e12, order="screening")
    assert sorted(everything.swapped) == [0, 1] and list(everything.steps["block"]) == [1, 0]
    mods = {i: st.screening.screening_module(i) for i in (0, 1)}  # selection used the leave-screening-out maps …
    assert abs(everything.ppl_final - ev.ppl(mods)) <= 1e-12 * everything.ppl_final
    joint = st.heldout.joint([0, 1])  # … and the held-out report the capture's maps
    assert abs(everything.test.ppl - joint["ppl"]) <= 1e-12 * joint["ppl"]
    assert (everything.test.lo, everything.test.hi) == (joint["delta_lo"], joint["delta_hi"])
    row = everything.row()
    assert row["blocks_swapped"] == "0 1" and row["heldout_minus_screening"] == pytest.approx(
        everything.test.delta - everything.delta_ppl
    )
    assert everything.params_removed == 3 * 32 * 64 + 32 * 32 + 32
    assert "blocks [0, 1] kept" in everything.summary()
    assert everything.test.level == joint["delta_level"] == SWAP_LEVEL and "99% CI [" in everything.summary()
    nothing = greedy_swap(ev, {0: st.heldout.module(0)}, [0], budget_ppl=0.0, progress=False)
    assert nothing.swapped == [] and nothing.ppl_final == ev.base_ppl and nothing.row()["test_delta_ppl"] == 0
    with pytest.raises(LinrecError, match="budget"):
        st.greedy(budget_ppl=-1)
    with pytest.raises(LinrecError, match="greedy order"):
        st.greedy(order="test")


def test_no_choice_reads_the_test_windows(tiny_model):
    """Orderings, the reduced-rank block, greedy acceptance and the predictors stay the same when every test window
    is replaced by random tokens (capture included); the reported test numbers do change."""
    model = tiny_model("llama", seed=3)
    tok = tiny_tokenizer()
    w = tiny_windows(tok, 2048, 32)
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    cfg = CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=0)

    def choices(windows):
        cap = run_capture(loaded, windows, cfg, progress=False)
        st = SwapStudy(cap, loaded, windows=windows, batch_size=8, progress=False, screening_windows=4)
        p = st.screening.predictors()
        greedy = {o: st.greedy(budget_ppl=1e12 if o == "r2_lin" else 0.0,
                               order=o) for o in GREEDY_ORDERS}  # fmt: skip
        out = {
            "predictors": p.drop(columns=["model"]).to_numpy(),
            "orders": [st.screening.order(o) for o in GREEDY_ORDERS],
            "curve_block": st.screening.curve_block(p),
            "greedy": [(g.swapped, g.steps["tried"].tolist(), g.ppl_final) for g in greedy.values()],
            "first_share": [st.screening.first_share(i) for i in range(st.n_blocks)],
        }
        # the screening part is built from train statistics and train windows only: it holds nothing held out
        held = {id(cap), id(windows), id(cap.stats["test"]), id(cap.heldout), id(st.heldout.report_ids)}
        assert not [k for k, v in vars(st.screening).items() if id(v) in held or isinstance(v, Windows)]
        assert {tuple(r) for r in st.screening.ids.tolist()} <= {tuple(r) for r in windows.split("train").tolist()}
        return out, st.heldout.table()["delta_ppl"].to_numpy()

    a, test_a = choices(w)
    b, test_b = choices(perturbed_test_windows(w))
    assert np.array_equal(a.pop("predictors"), b.pop("predictors"), equal_nan=True)
    assert a == b
    assert not np.allclose(test_a, test_b)  # the perturbation reached what is reported


def test_predictors_against_stored_rows(tiny_model, tmp_path):
    """Every predictor recomputed from the capture's stored rows, numpy least squares and HF hidden states."""
    model = tiny_model("gemma3_text")  # post-FFN norm
    tok = tiny_tokenizer()
    w = tiny_windows(tok, 2048, 32)
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    cap = run_capture(loaded, w, CaptureConfig("tiny", tokens=2048, seq_len=32, sample_rows=4096),
                      out_dir=tmp_path / "cap", progress=False)  # fmt: skip
    st = SwapStudy(cap, loaded, windows=w, progress=False, screening_windows=5)
    p = st.screening.predictors(alone=False).set_index("block")
    ids = st.screening.ids
    screen = [i for i in w.train if any(torch.equal(w.ids[i], r) for r in ids)]
    index = cap.row_index()
    with torch.no_grad():
        hidden = model(input_ids=ids, output_hidden_states=True).hidden_states
    for block in range(st.n_blocks - 1):  # HF's last hidden state is after the final norm
        x, y = (np.asarray(a, dtype=np.float64) for a in cap.rows(block))
        train = index[:, 2] == 0
        in_screen = np.isin(index[:, 0], screen)
        fit_rows = train & ~in_screen
        X = np.hstack([x[fit_rows], np.ones((fit_rows.sum(), 1))])
        coef = np.linalg.lstsq(X, y[fit_rows], rcond=None)[0]
        sel = train & in_screen
        order = np.lexsort((index[sel, 1], [screen.index(i) for i in index[sel, 0]]))  # screening window, position
        xs, ys, pos = x[sel][order], y[sel][order], index[sel, 1][order]
        e = ys - (xs @ coef[:-1] + coef[-1])
        r2 = 1 - (e**2).sum() / ((ys - ys.mean(0)) ** 2).sum()
        rest = pos > 0
        r2_ex = 1 - (e[rest] ** 2).sum() / ((ys[rest] - ys[rest].mean(0)) ** 2).sum()
        h = hidden[block + 1].reshape(-1, hidden[block + 1].shape[-1]).double().numpy()
        post = st.heldout.sites[block].post_norm
        with torch.no_grad():
            ny = post(torch.from_numpy(ys).float()).double().numpy()
            nh = post(torch.from_numpy(ys - e).float()).double().numpy()
        row = p.loc[block]
        assert row["r2_lin"] == pytest.approx(r2, rel=1e-4, abs=1e-5)
        assert row["r2_ex_first"] == pytest.approx(r2_ex, rel=1e-4, abs=1e-5)
        assert row["mse_out"] == pytest.approx((e**2).sum() / len(e), rel=1e-4)
        assert row["err_rel_resid"] == pytest.approx((e**2).sum() / (h**2).sum(), rel=1e-4)
        assert row["err_post_norm_rel_resid"] == pytest.approx(((nh - ny) ** 2).sum() / (h**2).sum(), rel=1e-3)
        assert row["depth_from_end"] == min(block, st.n_blocks - 1 - block)
    llama = swap_study(tiny_model("llama"), screening_windows=4).screening.predictors(alone=False)
    assert llama["err_post_norm_rel_resid"].isna().all()  # llama adds y as it is: no post-FFN norm
