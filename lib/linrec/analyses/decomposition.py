"""Claim 2b (notebook 07, section 4): is a block's R²_lin a property of its own weights or of the inputs it is fed?
Each block's norm gain is folded into its FFN (`folded_ffn`), so "the weights" are everything between the residual
stream and the FFN's output; null ensembles (random-init FFNs, `random_init_ffn`, and weight-shuffled FFNs,
`linrec.analyses.controls.shuffled_weights`) and the cross matrix "FFN i on the inputs of block j" are scored as maps
on the same stored rows (`SharedRows`, `inputs_or_weights`), and the R² matrix is decomposed into the weights' and
the inputs' shares with a bootstrap interval (`two_factor_shares`, `decomposition`).

Its summaries, table to table: each block against the null ensembles (`null_blocks`), the weights' minus the inputs'
share with the blocks' and the windows' variability (`decomposition_intervals`, `wmi_interval`) and at every cross
band (`band_table`; why every band: `linrec.claims.bands`, whose rule reads it).
"""

from __future__ import annotations

import copy
import functools
import threading
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from scipy import stats
from scipy.stats import t as student

from linrec.analyses.controls import MapScores, SharedRows, shuffled_weights, split_windows
from linrec.analyses.parallel import run_jobs
from linrec.analyses.uncertainty import benjamini_hochberg
from linrec.base.errors import LinrecError
from linrec.base.tables import require
from linrec.stats import N_BOOT
from linrec.stats.heldout import HeldOut, r2_of_counts

Z975 = 1.959964  # the normal quantile of a 95 % percentile interval: its half-width / Z975 = se (claims read it too)
CLAIM2_FDR = 0.05  # 2b: a block stands out from a null ensemble at Benjamini–Hochberg q below this, over the blocks
# transformers' `_init_weights` draws from torch's global generator: one job at a time seeds it and draws
# (`random_init_ffn`), or a block's draws on one thread would depend on another thread's seeding
_GLOBAL_RNG = threading.Lock()
INTERVAL_2B = "95 % over the blocks measured (jackknife) and the held-out windows (bootstrap), fits held fixed"


def norm_affine(norm: torch.nn.Module) -> tuple[np.ndarray, np.ndarray]:
    """(g, b), float64, with norm(h) = g ⊙ n(h) + b, where n is the norm's own unit normalisation (LayerNorm: centre
    and scale to unit variance; RMSNorm: scale to unit RMS). g is read from the module's `weight` (Gemma-3's
    RMSNorm multiplies by 1 + weight; which of the two applies is decided by evaluating the module), b from its
    `bias` (0 without one). Checked by evaluation on h = ±c·s, s = (1, −1, 1, …) (mean 0, RMS 1) and a large c,
    where n(±h) = ±s, and on a seeded random h with mean 0 and RMS 1: a norm of another form (anything whose output
    is not g ⊙ n(h) + b) gets a one-line error."""
    w = getattr(norm, "weight", None)
    if not isinstance(w, torch.Tensor) or w.ndim != 1:
        raise LinrecError(f"the pre-MLP norm {type(norm).__name__} has no gain vector `weight`; add its form to "
                          "linrec.analyses.decomposition.norm_affine")  # fmt: skip
    d = w.numel()
    if d % 2:
        raise LinrecError(
            f"cannot read the gain of a norm of odd width {d}; add its form to "
            f"linrec.analyses.decomposition.norm_affine"
        )
    s = torch.ones(d, dtype=torch.float64)
    s[1::2] = -1.0
    with torch.no_grad():
        plus, minus = (norm((sign * 1e4 * s)[None].to(w.device, w.dtype)).double()[0].cpu() for sign in (1.0, -1.0))
    g_seen, b_seen = (plus - minus) / 2 * s, (plus + minus) / 2
    wd = w.detach().double().cpu()
    g = min((wd, 1.0 + wd), key=lambda c: float((c - g_seen).abs().max()))
    bias = getattr(norm, "bias", None)
    b = bias.detach().double().cpu() if isinstance(bias, torch.Tensor) else torch.zeros(d, dtype=torch.float64)
    r = torch.randn(d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    r = r - r.mean()
    r = r / r.pow(2).mean().sqrt()  # mean 0, RMS 1: n(c·r) = r for either norm, and for no other map of this form
    with torch.no_grad():
        seen = norm((3.0 * r)[None].to(w.device, w.dtype)).double()[0].cpu()
    tol = 1e-4 * float(g.abs().max()) + 1e-6
    if (float((g - g_seen).abs().max()) > tol or float((b - b_seen).abs().max()) > tol
            or float((g * r + b - seen).abs().max()) > 1e-3 * float(g.abs().max()) + 1e-5):  # fmt: skip
        raise LinrecError(f"the pre-MLP norm {type(norm).__name__} is not g ⊙ n(h) + b with g from its weight; add its "
                          "form to linrec.analyses.decomposition.norm_affine")  # fmt: skip
    return g.numpy(), b.numpy()


def _input_layers(ffn: torch.nn.Module, d_in: int) -> list[torch.nn.Module]:
    """The FFN's layers that read its input x itself (Linear or GPT-2's Conv1D): found by running the FFN once and
    recording which weighted submodules receive the very tensor that was passed in."""
    p = next(ffn.parameters())
    probe = torch.zeros(1, 1, d_in, dtype=p.dtype, device=p.device)
    found, hooks = [], []
    for m in ffn.modules():
        w = getattr(m, "weight", None)
        if isinstance(w, torch.Tensor) and w.ndim == 2:
            hooks.append(m.register_forward_pre_hook(lambda mod, args: found.append(mod) if args and args[0] is probe
                                                     else None))  # fmt: skip
    try:
        with torch.no_grad():
            ffn(probe)
    finally:
        for h in hooks:
            h.remove()
    if not found:
        raise LinrecError(
            "no layer of this FFN reads its input directly; add its form to linrec.analyses.controls._input_layers"
        )
    return list(dict.fromkeys(found))


def folded_ffn(site) -> tuple[torch.nn.Module, np.ndarray, np.ndarray]:
    """(ffn', g, b): a copy of the site's FFN with its pre-MLP norm's gain g and bias b folded into the layers that
    read x, so that ffn'(u) = ffn(g ⊙ u + b) for the norm's unit output u = (x − b) / g (`unscale`). The block's
    learned scale then belongs to its weights, and "inputs" means the normalised hidden state before it."""

    if site.pre_norm is None:
        raise LinrecError(f"block {site.index}: no pre-MLP norm is known for this architecture; set pre_norm in its "
                          "linrec.inputs.sites.FFN_SITES row")  # fmt: skip
    g, b = norm_affine(site.pre_norm)
    ffn = copy.deepcopy(site.ffn)
    for layer in _input_layers(ffn, len(g)):
        W = layer.weight
        gt, bt = (torch.from_numpy(a).to(W.dtype) for a in (g, b))
        conv = W.shape[0] == len(g) and type(layer).__name__ == "Conv1D"  # GPT-2: weight [in, out], y = x W + bias
        with torch.no_grad():
            shift = bt @ W if conv else W @ bt  # the bias b, carried through the layer
            if layer.bias is None:
                if bool((bt != 0).any()):
                    layer.bias = torch.nn.Parameter(shift.clone(), requires_grad=False)
            else:
                layer.bias += shift
            W.mul_(gt[:, None] if conv else gt[None, :])
    return ffn, g, b


def unscale(x, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The norm's unit output u = (x − b) / g, float32, from captured inputs x (features with g = 0 carry nothing:
    0)."""
    x = np.asarray(x, np.float64)
    live = g != 0
    u = np.zeros_like(x)
    u[:, live] = (x[:, live] - b[live]) / g[live]
    return u.astype(np.float32)


def random_init_ffn(model: torch.nn.Module, ffn: torch.nn.Module, seed: int | list[int]) -> torch.nn.Module:
    """A copy of `ffn` re-drawn with the architecture's own initialisation (transformers' `_init_weights` of `model`,
    the initialisation of the random-init twin, `linrec.inputs.models.random_init_spec`), seeded."""

    init = getattr(model, "_init_weights", None)
    if init is None:
        raise LinrecError(f"{type(model).__name__} has no _init_weights; random-init FFNs need a transformers model")
    out = copy.deepcopy(ffn)
    with _GLOBAL_RNG, torch.random.fork_rng(devices=[]), torch.no_grad():  # `_init_weights` draws from it
        torch.manual_seed(int(np.random.default_rng(seed).integers(2**62)))
        for m in out.modules():
            init(m)
    return out


@dataclass
class InputsOrWeights:
    """What `inputs_or_weights` measured for one model (see there)."""

    nulls: pd.DataFrame  # model block ffn draw r2: the trained FFN and its null ensembles on the block's inputs
    matrix: pd.DataFrame  # model ffn_block input_block r2: FFN i (folded) on the inputs u of block j
    heldout: dict[tuple[int, int], HeldOut]  # (ffn_block, input_block) → held-out per-window sums of that entry
    _draws: dict = field(default_factory=dict, repr=False, compare=False)  # (n_boot, seed) → `window_draws`

    def window_draws(self, n_boot: int, seed: int) -> dict[tuple[int, int], np.ndarray]:
        """Every entry's R² on `n_boot` resamples of the held-out windows ({(ffn_block, input_block): [n_boot]}), the
        same resamples for every entry (seeded by `seed` alone: the entries share their rows' windows). Drawn once
        per (n_boot, seed) and kept: the decomposition and each band's window bootstrap (`band_windows`) read the
        same draws, which were recomputed per band (29 bands on a 30-block matrix)."""
        key = (int(n_boot), seed)
        if key not in self._draws:
            hs = list(self.heldout.values())
            if any(not np.array_equal(h.windows, hs[0].windows) for h in hs):
                raise LinrecError("the cross matrix's entries were scored on different windows; score them on the "
                                  "same rows")  # fmt: skip
            W = hs[0].n_windows
            counts = np.random.default_rng(seed).multinomial(W, np.full(W, 1.0 / W), size=n_boot)
            self._draws[key] = {k: r2_of_counts(h, counts) for k, h in self.heldout.items()}
        return self._draws[key]


@dataclass(frozen=True)
class NullDraws:
    """The null ensembles each block's trained FFN is set against (`inputs_or_weights`): `n_init` random-init FFNs
    and `n_shuffled` copies of the trained FFN with each weight matrix's entries permuted."""

    n_init: int = 10
    n_shuffled: int = 10


def inputs_or_weights(
    capture,
    loaded,
    null_draws: NullDraws = NullDraws(),
    band: int | None = 2,
    n_rows: int | None = None,
    seed: int = 0,
    progress: bool = True,
    scores: MapScores | None = None,
) -> InputsOrWeights:
    """Claim 2b's measurements on one model, all on the same stored rows (at most `n_rows`, the capture's window
    split) and with every block's pre-MLP norm gain folded into its FFN (`folded_ffn`), so that the inputs are the
    normalised hidden states u before any learned scale:

    - per block i, on u_i: the trained FFN (R² equal to the block's R²_lin on these rows, since an invertible
      rescaling of the inputs leaves the closed form's fit unchanged), `null_draws.n_init` random-init FFNs
      (`random_init_ffn`, seeds [seed, i, k]) and `null_draws.n_shuffled` copies of the folded trained FFN with
      each weight matrix's entries permuted (`shuffled_weights`, seeds [seed, i, k]);
    - the cross matrix: the folded FFN i on u_j for every |i − j| ≤ `band` (None: every pair), with each entry's
      held-out per-window sums for the window bootstrap of the decomposition (`two_factor_shares`, `decomposition`).

    Cost: one FFN pass and one solve per entry, the Gram of each block's rows factored once (`SharedRows`). The
    trained entry is the trained FFN on its own rows, which `input_controls` also scores: pass the same `scores`
    (`MapScores`) and it runs once. The blocks run as jobs on the caller's torch threads
    (`linrec.analyses.parallel.run_jobs`), each on its own rows and seeded draws: the same tables at any count."""
    scores = MapScores() if scores is None else scores
    n_init, n_shuffled = null_draws.n_init, null_draws.n_shuffled
    sites = loaded.sites
    if len(sites) != capture.n_blocks:
        raise LinrecError(
            f"the capture has {capture.n_blocks} blocks but the model has {len(sites)}; pass the capture of this model"
        )
    n = capture.n_blocks
    band = n if band is None else int(band)
    tr, te = split_windows(capture, n_rows, seed)
    if min(len(tr), len(te)) < 2:
        raise LinrecError("too few stored rows for a control; capture with sample_rows ≥ a few thousand")
    windows = capture.row_index()[te, 0]
    folded = [folded_ffn(s) for s in sites]
    label = capture.model_label

    def block(j: int):  # a job: its own rows and draws (seeded by [seed, j, k]); the memo is locked, the rest read
        x, _ = capture.rows(j)
        g, b = folded[j][1], folded[j][2]
        rows = SharedRows(unscale(x[tr], g, b), unscale(x[te], g, b), windows, block=j)
        heldout = {(j, j): scores.heldout(sites[j].ffn, capture, j, n_rows, seed, j)}  # folded or not: the same fit
        nulls, matrix = [], []
        draws = [("trained", 0, None)]
        draws += [("random init", k, random_init_ffn(loaded.model, sites[j].ffn, [seed, j, k])) for k in range(n_init)]
        draws += [("shuffled", k, shuffled_weights(folded[j][0], [seed, j, k])) for k in range(n_shuffled)]
        for kind, k, module in draws:
            h = heldout[(j, j)] if module is None else rows.score(module)
            nulls.append({"model": label, "block": j, "ffn": kind, "draw": k, "r2": h.r2()})
        for i in range(max(0, j - band), min(n, j + band + 1)):
            if i != j:
                heldout[(i, j)] = rows.score(folded[i][0])
            matrix.append({"model": label, "ffn_block": i, "input_block": j, "r2": heldout[(i, j)].r2()})
        return nulls, matrix, heldout

    done = run_jobs(block, range(n), None, desc=f"inputs or weights {label}", unit="block", progress=progress)
    nulls = [r for d in done for r in d[0]]
    matrix = [r for d in done for r in d[1]]
    heldout = {k: h for d in done for k, h in d[2].items()}
    return InputsOrWeights(pd.DataFrame(nulls), pd.DataFrame(matrix), heldout)


@functools.lru_cache(maxsize=512)
def _basis(n: int, *designs: bytes) -> np.ndarray:
    """An orthonormal basis [n, r] of the columns' span: one-hot columns of each design (its levels' codes, int64
    bytes) and an intercept. The same SVD and cutoff as `numpy.linalg.pinv`, so D pinv(D) = U Uᵀ: the hat matrix is
    applied as (R U) Uᵀ, never formed (on a 30-block matrix it was [870, 870], rebuilt for every resample set, band
    and jackknife drop). Memoised on the design: the point, its resamples and every band's call with the same
    entries share one factorisation."""
    cols = [np.eye(int(c.max()) + 1)[c] for c in (np.frombuffer(d, np.int64) for d in designs)]
    D = np.column_stack([*cols, np.ones(n)])
    u, s, _ = np.linalg.svd(D, full_matrices=False)
    U = np.ascontiguousarray(u[:, s > 1e-15 * s.max()])
    U.setflags(write=False)  # shared by every caller of this design
    return U


def two_factor_shares(ffn_block, input_block, r2) -> dict[str, np.ndarray]:
    """The additive two-factor decomposition R²(FFN i, inputs j) ≈ μ + a_i + b_j, fitted by least squares over the
    given entries; `r2` is [n_entries] or [B, n_entries] (B resampled matrices at once).

    Returns, per matrix, shares of the entries' variance that sum to 1: `weights`, what a_i explains that no function
    of j can (R² of the additive fit minus R² of b alone); `inputs`, likewise for b_j; `shared`, what either factor
    explains (the additive fit's R² less both unique parts); `residual`, what the additive fit leaves (interactions).
    On a full matrix (every i with every j) the factors are orthogonal, `shared` is 0 and the two unique shares are
    var(a)/var and var(b)/var. Within a band |i − j| ≤ k a smooth trend over depth can be written as either factor,
    so `shared` holds it and the unique shares are lower bounds: the variance only one factor can carry."""
    fi, fj = (np.unique(np.asarray(v), return_inverse=True)[1].astype(np.int64).tobytes()
              for v in (ffn_block, input_block))  # fmt: skip
    R = np.atleast_2d(np.asarray(r2, np.float64))
    Rc = R - R.mean(1, keepdims=True)
    total = (Rc**2).sum(1)

    def explained(U):
        return 1.0 - ((R - (R @ U) @ U.T) ** 2).sum(1) / total

    with np.errstate(divide="ignore", invalid="ignore"):
        both, a_only, b_only = (explained(_basis(R.shape[1], *d)) for d in ((fi, fj), (fi,), (fj,)))
        out = {"weights": both - b_only, "inputs": both - a_only, "residual": 1.0 - both}
    out["shared"] = both - out["weights"] - out["inputs"]
    return {k: v if np.ndim(r2) > 1 else v[0] for k, v in out.items()}


def decomposition(
    result: InputsOrWeights, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95, band: int | None = None
) -> dict:
    """`two_factor_shares` of one model's cross matrix (with `band`, of its entries with |i − j| ≤ band only), with
    percentile intervals from resampling the held-out windows (the same draw for every entry: they share their rows'
    windows), the fits held fixed."""
    m = result.matrix
    if band is not None:
        m = m[(m["ffn_block"] - m["input_block"]).abs() <= band]
    keys = list(zip(m["ffn_block"], m["input_block"], strict=True))
    W = result.heldout[keys[0]].n_windows
    every = result.window_draws(n_boot, seed)  # drawn once for every entry, whichever band asks first
    draws = np.stack([every[k] for k in keys], axis=1)  # [B, entries]
    point = two_factor_shares(m["ffn_block"], m["input_block"], m["r2"].to_numpy(float))
    boot = two_factor_shares(m["ffn_block"], m["input_block"], draws)
    alpha = (1 - level) / 2
    out = {"n_entries": len(m), "n_windows": W}
    boot["weights_minus_inputs"] = boot["weights"] - boot["inputs"]
    point["weights_minus_inputs"] = point["weights"] - point["inputs"]
    for k, v in point.items():
        lo, hi = np.nanquantile(boot[k], [alpha, 1 - alpha])
        out.update({f"share_{k}": float(v), f"share_{k}_lo": float(lo), f"share_{k}_hi": float(hi)})
    return out


def band_windows(result: InputsOrWeights, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Per band k = 1 … the widest |i − j| of the matrix: the held-out windows' standard error of the weights' minus
    the inputs' share on the entries |i − j| ≤ k (`decomposition` with `band`: its 95 % half-width / 1.96), the part of
    claim 2b's interval that `linrec.analyses.decomposition.band_table` cannot recompute from the stored matrix."""
    m = result.matrix
    widest = int((m["ffn_block"] - m["input_block"]).abs().max()) if len(m) else 0
    rows = []
    for k in range(1, widest + 1):
        d = decomposition(result, n_boot=n_boot, seed=seed, band=k)
        se = (d["share_weights_minus_inputs_hi"] - d["share_weights_minus_inputs_lo"]) / (2 * Z975)
        rows.append({"model": m["model"].iloc[0], "band": k, "se_windows": se, "windows_band": k})
    return pd.DataFrame(rows, columns=["model", "band", "se_windows", "windows_band"])


def _mean_pair_gap(v: np.ndarray) -> float:
    """Mean |v_s − v_t| over pairs of draws s ≠ t (NaN with fewer than two)."""
    v = np.asarray(v, float)
    if len(v) < 2:
        return np.nan
    return float(np.abs(v[:, None] - v[None, :]).sum() / (len(v) * (len(v) - 1)))


def null_blocks(nulls: pd.DataFrame) -> pd.DataFrame:
    """Per block (`linrec.analyses.decomposition.inputs_or_weights`' `nulls`): the trained FFN's R² against each null
    ensemble on
    the same rows. z = (trained − mean) / sd; p from the prediction interval of a new draw (t with k − 1 degrees of
    freedom, (trained − mean) / (sd √(1 + 1/k)), one-sided: the trained FFN *above* the null, assuming the null draws
    are normal); q: Benjamini–Hochberg over the model's blocks, per null. A block `stands_out` when q < CLAIM2_FDR
    for both nulls: its trained weights make its map more linear than weights of its shape drawn at random or
    shuffled would on the same inputs. What the nulls can show is one-sided (a trained FFN far *below* its random-init
    draws is common, and says only that training made the block less linear); `below_init` counts it apart, at the
    same q."""
    require(nulls, ["model", "block", "ffn", "draw", "r2"], "null_blocks")
    rows = []
    for (model, block), t in nulls.groupby(["model", "block"], sort=False):
        row = {"model": model, "block": int(block), "r2_trained": float(t.loc[t["ffn"] == "trained", "r2"].iloc[0])}
        for kind, name in (("random init", "init"), ("shuffled", "shuffled")):
            v = t.loc[t["ffn"] == kind, "r2"].to_numpy(float)
            k, m = len(v), float(np.mean(v)) if len(v) else np.nan
            sd = float(np.std(v, ddof=1)) if k > 1 else np.nan
            diff = row["r2_trained"] - m
            z = p = np.nan
            p_below = np.nan
            if k > 1 and sd > 0:
                z = diff / sd
                p = float(stats.t.sf(diff / (sd * np.sqrt(1 + 1 / k)), k - 1))
                p_below = float(stats.t.cdf(diff / (sd * np.sqrt(1 + 1 / k)), k - 1))
            elif k > 1:  # identical draws: the trained FFN is either one of them or outside all of them
                z = 0.0 if diff == 0 else np.copysign(np.inf, diff)
                p, p_below = (1.0, 1.0) if diff == 0 else (float(diff < 0), float(diff > 0))
            if name == "init":
                row["p_below_init"] = p_below
            row.update({f"n_{name}": k, f"{name}_mean": m, f"{name}_sd": sd, f"{name}_pair_gap": _mean_pair_gap(v),
                        f"z_{name}": z, f"p_{name}": p})  # fmt: skip
        rows.append(row)
    out = pd.DataFrame(rows)
    for name in ("init", "shuffled"):
        out[f"q_{name}"] = np.nan
        for _, idx in out.groupby("model", sort=False).groups.items():
            out.loc[idx, f"q_{name}"] = benjamini_hochberg(out.loc[idx, f"p_{name}"].to_numpy(float))
    out["stands_out"] = (out["q_init"] < CLAIM2_FDR) & (out["q_shuffled"] < CLAIM2_FDR)
    out["below_init"] = False
    for _, idx in out.groupby("model", sort=False).groups.items():
        out.loc[idx, "below_init"] = benjamini_hochberg(out.loc[idx, "p_below_init"].to_numpy(float)) < CLAIM2_FDR
    return out.drop(columns="p_below_init")


def decomposition_intervals(decomposition: pd.DataFrame, matrix: pd.DataFrame, blocks: pd.DataFrame | None = None):
    """Claim 2b's interval with every source of its variability (issue 45): per model, the weights' minus the
    inputs' unique share of the cross matrix (`linrec.analyses.decomposition.two_factor_shares`) with

    - `wmi_se_jack`: a leave-one-block-out jackknife over the blocks (dropping every entry of block b, as FFN or
      as inputs): how much the number owes to which blocks were measured, and to the fits on their rows;
    - `wmi_se_windows`: the held-out windows' part, read from the window-bootstrap interval (half-width / 1.96);
    - `wmi_lo`, `wmi_hi`: the 95 % interval point ± t_{blocks − 1} · √(se_blocks² + se_windows²);
    - `wmi_band1`: the same share difference on the entries with |i − j| ≤ 1 only (the cross band's sensitivity);
    - `n_standout`, `n_below_init` from `blocks` (`null_blocks`): blocks whose trained FFN is above both null
      ensembles, and below its random-init draws (one-sided, Benjamini–Hochberg q < CLAIM2_FDR).

    Returns `decomposition` with these columns (replaced where present)."""

    out = decomposition.copy()
    for col in ("wmi_se_jack", "wmi_se_windows", "wmi_lo", "wmi_hi", "wmi_band1"):
        out[col] = np.nan
    for k, row in out.iterrows():
        m = matrix[matrix["model"] == row["model"]]
        se_w = float(row["share_weights_minus_inputs_hi"] - row["share_weights_minus_inputs_lo"]) / (2 * Z975)
        w = wmi_interval(m, se_w)
        if not np.isfinite(w["wmi"]):
            continue
        band1 = m[band_of(m) <= 1]
        out.loc[k, ["wmi_se_jack", "wmi_se_windows", "wmi_lo", "wmi_hi", "wmi_band1"]] = [
            w["se_jack"], se_w, w["wmi_lo"], w["wmi_hi"], wmi(band1) if len(band1) > w["n_blocks"] else np.nan
        ]  # fmt: skip
    if blocks is not None:
        counts = blocks.groupby("model", sort=False).agg(n_standout=("stands_out", "sum"),
                                                         n_below_init=("below_init", "sum"))  # fmt: skip
        out["n_standout"] = out["model"].map(counts["n_standout"]).astype(float)
        out["n_below_init"] = out["model"].map(counts["n_below_init"]).astype(float)
    return out


def wmi(m: pd.DataFrame) -> float:
    """The weights' minus the inputs' unique share of one model's cross-matrix entries `m` (ffn_block, input_block,
    r2)."""
    s = two_factor_shares(m["ffn_block"].to_numpy(), m["input_block"].to_numpy(), m["r2"].to_numpy(float))
    return float(s["weights"] - s["inputs"])


def wmi_interval(m: pd.DataFrame, se_windows: float, level: float = 0.95) -> dict:
    """`wmi` of the entries `m` with its interval (`INTERVAL_2B`): point, se_jack, lo, hi and the number of blocks;
    NaN where fewer than 3 blocks are present."""
    ids = np.unique(np.concatenate([m["ffn_block"].to_numpy(), m["input_block"].to_numpy()]))
    n = len(ids)
    if n < 3:
        return {"n_blocks": n, "wmi": np.nan, "se_jack": np.nan, "wmi_lo": np.nan, "wmi_hi": np.nan}
    point = wmi(m)
    jack = np.array([wmi(m[(m["ffn_block"] != b) & (m["input_block"] != b)]) for b in ids])
    se_b = float(np.sqrt((n - 1) / n * ((jack - jack.mean()) ** 2).sum()))
    half = float(student.ppf(0.5 + level / 2, n - 1)) * np.sqrt(se_b**2 + se_windows**2)
    return {"n_blocks": n, "wmi": point, "se_jack": se_b, "wmi_lo": point - half, "wmi_hi": point + half}


def band_of(m: pd.DataFrame) -> np.ndarray:
    """|i − j| of each entry."""
    return (m["ffn_block"] - m["input_block"]).abs().to_numpy()


def band_table(decomposition: pd.DataFrame, matrix: pd.DataFrame, measured: pd.DataFrame | None = None):
    """Per model and band k = 1 … the widest |i − j| its matrix holds: `wmi_interval` on the entries with |i − j| ≤ k
    (`controls_decomposition_bands`). The windows' se of each band is `measured`'s (a bands table the study wrote with
    its own window bootstrap per band: its `se_windows` where `windows_band` equals the band) or else the widest
    band's, from `decomposition` (its `share_weights_minus_inputs_lo` / `_hi`)."""
    have = {} if measured is None else {(r["model"], int(r["band"])): r for r in measured.to_dict("records")}
    rows = []
    for d in decomposition.to_dict("records"):
        m = matrix[matrix["model"] == d["model"]]
        if m.empty:
            continue
        widest = int(band_of(m).max())
        se_wide = float(d["share_weights_minus_inputs_hi"] - d["share_weights_minus_inputs_lo"]) / (2 * Z975)
        for k in range(1, widest + 1):
            r = have.get((d["model"], k), {})
            own = r.get("windows_band") == k and np.isfinite(r.get("se_windows", np.nan))
            se_w, from_band = (float(r["se_windows"]), k) if own else (se_wide, widest)
            mk = m[band_of(m) <= k]
            rows.append({"model": d["model"], "band": k, "n_entries": len(mk), "n_pairs": int((band_of(mk) > 0).sum()),
                         **wmi_interval(mk, se_w), "se_windows": se_w, "windows_band": from_band,
                         "interval": INTERVAL_2B})  # fmt: skip
    cols = "model band n_entries n_pairs n_blocks wmi se_jack se_windows windows_band wmi_lo wmi_hi interval"
    return pd.DataFrame(rows, columns=cols.split())
