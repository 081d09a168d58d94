"""Claim 1's numbers (notebook 02): the shape of each model's R²_lin profile over blocks (`profile_summary`), its moves
tested against a false-discovery rate (`move_tests`), and its replication on disjoint samples of text
(`replication_summary`, claim 1's rule given by its caller: `linrec.claims.profile`); and the first token's shares that
the regimes and the swap's position variants read (`FIRST_TOKEN_SHARE`, `FIRST_TOKEN_OVERLAP`).

No torch: `linrec.claims.rules` re-exports its thresholds, and `linrec.app.profile` imports that without it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from linrec.analyses.uncertainty import benjamini_hochberg
from linrec.base.errors import LinrecError
from linrec.base.tables import blocks, require
from linrec.stats.jackknife import from_replicates

FIRST_TOKEN_SHARE = 0.5  # a block "sits on the first token" when that token holds ≥ this share of its output variance
FIRST_TOKEN_OVERLAP = (
    0.2  # notebook 04: an outlier-concentrated block "overlaps" the first-token regime above this share
)

# the paper's own extremes, "ranging from near-linear (>0.99) to strongly nonlinear (<0.3) between adjacent blocks"
# (arXiv 2606.19379, abstract; paper/claims.md): a second, stated result beside claim 1's rule
PAPER_HIGH, PAPER_LOW = 0.99, 0.3

# claim 1: the moves the rule counts (adjacent blocks with disjoint intervals, and the anchor-to-anchor moves of
# `disjoint_moves`) are each tested by a paired window jackknife (t test); only those with a Benjamini–Hochberg
# q ≤ MOVES_FDR over that family count (many blocks give many chances for two intervals to miss each other by luck)
MOVES_FDR = 0.05


def direction_changes(values) -> int:
    """How often a sequence turns from rising to falling or back (strict turns; flat steps do not count)."""
    r = np.asarray(values, dtype=float)
    return int(((r[2:] - r[1:-1]) * (r[1:-1] - r[:-2]) < 0).sum())


def disjoint_move_pairs(lo, hi) -> list[tuple[int, int]]:
    """The (anchor, block) pairs of `disjoint_moves`: from an anchor block (the first) to the next block whose
    interval [lo, hi] is disjoint from the anchor's, which becomes the next anchor. Blocks with a missing interval
    never form a move."""
    lo, hi = (np.asarray(v, dtype=float) for v in (lo, hi))
    pairs, a = [], 0
    for j in range(1, len(lo)):
        if lo[j] > hi[a] or lo[a] > hi[j]:  # NaN compares False: not disjoint
            pairs.append((a, j))
            a = j
    return pairs


def disjoint_moves(values, lo, hi) -> list[float]:
    """The profile's moves that its intervals resolve (`disjoint_move_pairs`): each move's change in value."""
    r = np.asarray(values, dtype=float)
    return [float(r[j] - r[a]) for a, j in disjoint_move_pairs(lo, hi)]


def disjoint_direction_changes(values, lo, hi) -> int:
    """Direction changes counted on `disjoint_moves` only: a turn needs a resolved rise and a resolved fall."""
    signs = np.sign(disjoint_moves(values, lo, hi))
    return int((signs[1:] * signs[:-1] < 0).sum())


def max_disjoint_jump(values, lo, hi) -> float:
    """The largest |difference| between adjacent blocks whose intervals are disjoint (0 if no pair is)."""
    r = np.asarray(values, dtype=float)
    sep = _adjacent_disjoint(lo, hi)
    return float(np.abs(np.diff(r))[sep].max()) if sep.any() else 0.0


def _adjacent_disjoint(lo, hi) -> np.ndarray:
    lo, hi = (np.asarray(v, dtype=float) for v in (lo, hi))
    return (lo[1:] > hi[:-1]) | (lo[:-1] > hi[1:])


def move_tests(t: pd.DataFrame, loo: np.ndarray, positions: str = "all") -> pd.DataFrame:
    """Claim 1's moves of one model's profile, each with a paired test. `t`: its ceiling table (one row per block,
    in block order; with `positions="ex_first"` the `r2_ex_first` columns are used); `loo` [W, n_blocks]: R²_lin with
    each held-out window left out in turn, the same window for every block
    (`linrec.analyses.recoverability.profile_replicates`), so a difference's replicates keep what two blocks' errors
    share. The family: every adjacent pair with disjoint intervals (`kind` "adjacent", the jump) and every move of
    `disjoint_move_pairs` (`kind` "move", the turns). `p`: the jackknife t test of the difference
    (`linrec.stats.jackknife.from_replicates`, W − 1 degrees of freedom); `q`: Benjamini–Hochberg over the family;
    `counts`: q ≤ MOVES_FDR."""
    t = t.sort_values("block")
    col, lo_c, hi_c = ("r2_ex_first", "r2_ex_first_lo", "r2_ex_first_hi") if positions == "ex_first" else (
        "r2_lin", "r2_lo", "r2_hi")  # fmt: skip
    r, lo, hi = (t[c].to_numpy(float) for c in (col, lo_c, hi_c))
    loo = np.asarray(loo, dtype=float)
    if loo.ndim != 2 or loo.shape[1] != len(r):
        raise LinrecError(f"move_tests: replicates of shape {loo.shape} for a profile of {len(r)} blocks")
    pairs = [("adjacent", i, i + 1) for i in np.flatnonzero(_adjacent_disjoint(lo, hi))]
    pairs += [("move", a, j) for a, j in disjoint_move_pairs(lo, hi)]
    rows = [
        {"model": t["model"].iloc[0], "positions": positions, "kind": kind, "from_block": int(t["block"].iloc[a]),
         "to_block": int(t["block"].iloc[j]), "change": float(r[j] - r[a]),
         "p": float(from_replicates(r[j] - r[a], loo[:, j] - loo[:, a]).p())}
        for kind, a, j in pairs
    ]  # fmt: skip
    out = pd.DataFrame(rows, columns=["model", "positions", "kind", "from_block", "to_block", "change", "p"])
    out["q"] = benjamini_hochberg(out["p"].to_numpy(float)) if len(out) else []
    out["counts"] = out["q"] <= MOVES_FDR
    return out


def _fdr_shape(moves: pd.DataFrame | None, model: str, positions: str) -> dict:
    """Jump and turns counted on the moves that survive the false-discovery rate (`move_tests`)."""
    sfx = "" if positions == "all" else "_ex_first"
    keys = [f"moves_tested{sfx}", f"moves_fdr{sfx}", f"max_jump_fdr{sfx}", f"direction_changes_fdr{sfx}"]
    m = None if moves is None else moves[(moves["model"] == model) & (moves["positions"] == positions)]
    if m is None or m.empty:  # not tested (or no move to test: the disjoint counts are 0 as well)
        return dict.fromkeys(keys, np.nan)
    kept = m[m["counts"].astype(bool)]
    adj, mv = kept[kept["kind"] == "adjacent"], kept[kept["kind"] == "move"]
    signs = np.sign(mv.sort_values("to_block")["change"].to_numpy(float))
    return dict(zip(keys, [len(m), len(kept), float(adj["change"].abs().max()) if len(adj) else 0.0,
                           int((signs[1:] * signs[:-1] < 0).sum())]))  # fmt: skip


def as_extreme_as_paper(values) -> bool:
    """The paper's own extremes: some adjacent pair of blocks with one above PAPER_HIGH (0.99) and the other below
    PAPER_LOW (0.3)."""
    r = np.asarray(values, dtype=float)
    hi, lo = np.maximum(r[1:], r[:-1]), np.minimum(r[1:], r[:-1])
    return bool(((hi > PAPER_HIGH) & (lo < PAPER_LOW)).any())


def _ex_first_shape(t: pd.DataFrame) -> dict:
    """Claim 1's numbers on R²_lin without the windows' first position (`r2_ex_first` and its interval)."""
    r = t["r2_ex_first"].to_numpy(float)
    if "r2_ex_first_lo" not in t or not np.isfinite(r).all():
        return {"r2_ex_first_min": np.nan, "max_jump_disjoint_ex_first": np.nan,
                "direction_changes_disjoint_ex_first": np.nan}  # fmt: skip
    lo, hi = t["r2_ex_first_lo"], t["r2_ex_first_hi"]
    return {
        "r2_ex_first_min": float(r.min()),
        "max_jump_disjoint_ex_first": max_disjoint_jump(r, lo, hi),
        "direction_changes_disjoint_ex_first": disjoint_direction_changes(r, lo, hi),
    }


def profile_summary(r2: pd.DataFrame, moves: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per model, the shape of its R²_lin profile over blocks (claim 1's numbers); jumps and turns both as seen and
    counted only where the blocks' bootstrap intervals are disjoint (`disjoint_moves`), and, with `moves`
    (`move_tests` of this profile), only on the moves that survive the false-discovery rate (`max_jump_fdr`,
    `direction_changes_fdr`, out of `moves_tested`; NaN without). `profile_tokens`: the train tokens behind the
    profile (the table's `profile_tokens`, see `linrec.collect.curves.with_profile`, else its `n_train`)."""
    require(
        r2, ["model", "block", "r2_lin", "r2_lo", "r2_hi", "cond_gram", "r2_ex_first", "first_var_share"],
        "profile_summary",
    )  # fmt: skip
    rows = []
    for model, t in r2.groupby("model", sort=False):
        t = t.sort_values("block")
        r = t["r2_lin"].to_numpy()
        rows.append(
            {
                "model": model,
                "n_blocks": len(r),
                "r2_min": float(r.min()),
                "r2_max": float(r.max()),
                "max_adjacent_jump": float(np.abs(np.diff(r)).max()) if len(r) > 1 else np.nan,
                "direction_changes": direction_changes(r),
                "max_jump_disjoint": max_disjoint_jump(r, t["r2_lo"], t["r2_hi"]),
                "direction_changes_disjoint": disjoint_direction_changes(r, t["r2_lo"], t["r2_hi"]),
                "as_extreme_as_paper": as_extreme_as_paper(r),
                **_ex_first_shape(t),
                **_fdr_shape(moves, model, "all"),
                **_fdr_shape(moves, model, "ex_first"),
                "cond_gram_median": float(t["cond_gram"].median()),
                "r2_ex_first_max": float(t["r2_ex_first"].max()),
                "first_token_blocks": blocks(t, t["first_var_share"] >= FIRST_TOKEN_SHARE),
                "profile_tokens": next((float(t[c].iloc[0]) for c in ("profile_tokens", "n_train") if c in t), np.nan),
            }
        )
    return pd.DataFrame(rows)


def replication_summary(reps: pd.DataFrame, holds: Callable[[pd.DataFrame], bool]) -> pd.DataFrame:
    """Per model, over disjoint samples of text (`reps`: ceiling tables with a `sample` column, one per sample): each
    block's between-sample SD of R²_lin (median and largest, and where), beside the median half-width of one
    sample's bootstrap interval; and claim 1's rule on each sample's profile (`holds`: the rule, given one model's
    `profile_summary` on one sample; `linrec.claims.profile.claim1_holds`), with `replication`: "holds on every
    sample", "fails on every sample" or "sample-dependent"."""
    require(reps, ["model", "sample", "block", "r2_lin", "r2_lo", "r2_hi"], "replication_summary")
    rows = []
    for model, t in reps.groupby("model", sort=False):
        wide = t.pivot_table(index="block", columns="sample", values="r2_lin")
        sd = wide.std(axis=1, ddof=1)
        passes = [bool(holds(profile_summary(g))) for _, g in t.groupby("sample", sort=True)]
        rows.append(
            {
                "model": model,
                "n_samples": wide.shape[1],
                "samples": " ".join(str(int(c)) for c in wide.columns),
                "sd_median": float(sd.median()),
                "sd_max": float(sd.max()),
                "sd_max_block": int(sd.idxmax()),
                "ci_half_width_median": float(((t["r2_hi"] - t["r2_lo"]) / 2).median()),
                "n_claim1_passes": int(sum(passes)),
                "replication": "holds on every sample" if all(passes) else "fails on every sample"
                if not any(passes) else "sample-dependent",
            }
        )  # fmt: skip
    return pd.DataFrame(rows)
