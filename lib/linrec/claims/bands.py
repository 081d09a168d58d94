"""Claim 2b over every cross band (issue 64): the weights' minus the inputs' unique share of the cross matrix
R²(FFN i, inputs of block j) (`linrec.analyses.decomposition.two_factor_shares`) on the entries with |i − j| ≤ k, for
every band k the stored matrix holds (`linrec.analyses.decomposition.band_table`), and the per-model word that claim
2b's rule reads from it (`band_word`): a model is decided only where its sign holds at every band ≥ `CLAIM2B_MIN_BAND`.

Why every band: the share moves with the band an analyst picks (full profile, SmolLM2 +0.14 / +0.28 / +0.46 at bands
1 / 2 / 3, Gemma-3 0.00 / −0.06 / −0.18), so a verdict read at one band is that choice's. Band 1 is left out of the
decision: with only the diagonal and its neighbours, a smooth trend over depth can be written as either factor and
lands in the shared part (`two_factor_shares`), so the unique shares there are the weakest lower bounds.

The interval is the one claim 2b has read since issue 45, named for what it covers
(`linrec.analyses.decomposition.INTERVAL_2B`, `wmi_interval`): the point ±
t_{blocks − 1} · √(se_jack² + se_windows²), se_jack from a leave-one-block-out jackknife over the blocks in the
band (every entry of block b dropped, as FFN or as inputs), se_windows from the held-out windows' bootstrap of the
same band's shares (`linrec.analyses.decomposition.decomposition`, half-width / 1.96). The fitted maps are held fixed:
it is an interval for this matrix's share, over which blocks were measured and which held-out windows scored them.
A table written before the bands were measured has the windows' bootstrap of its widest band only; that se then
serves every narrower band (`windows_band` says which band it was measured on).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from linrec.claims.rules import NOT_TESTABLE, PARTLY, REPRODUCED, tally_every

CLAIM2B_MIN_BAND = 2  # the narrowest band that decides: a model's sign must hold at this band and every wider one


def sign_word(row: Mapping) -> str | None:
    """One band of one model: "weights" if its interval lies above 0, "inputs" if below, "undecided" if it includes
    0 (equality included); None where it was not measured."""
    lo, hi = row.get("wmi_lo", np.nan), row.get("wmi_hi", np.nan)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    return "weights" if lo > 0 else "inputs" if hi < 0 else "undecided"


def band_word(bands: pd.DataFrame, min_band: int = CLAIM2B_MIN_BAND) -> str | None:
    """Claim 2b for one model from its rows of `band_table`: "weights" (or "inputs") if every band ≥ `min_band` has
    that word (`sign_word`), "undecided" if any band ≥ `min_band` differs; None where no band ≥ `min_band` was
    measured (a matrix narrower than `min_band`)."""
    words = [sign_word(r) for r in bands[bands["band"] >= min_band].to_dict("records")]
    if not words or any(w is None for w in words):
        return None
    return words[0] if words[0] != "undecided" and all(w == words[0] for w in words) else "undecided"


def lean_word(bands: pd.DataFrame, min_band: int = CLAIM2B_MIN_BAND) -> tuple[str | None, str]:
    """Claim 2b for one model that `band_word` leaves undecided, and the bands that leave it so: ("weights", "band
    2") where the interval lies above 0 at more than half of the bands ≥ `min_band` and below 0 at none (the bands
    whose interval includes 0 named: they veto the strict word), likewise "inputs"; ("undecided", "") where the bands
    point both ways or neither side holds a majority; (None, "") where no band ≥ `min_band` was measured. It is read
    only where no model is decided by `band_word` (claim 2b's rule: decided per model, but each with a band that
    vetoes), so it can lift "not testable" to a per-model answer, never make a strict answer stronger."""
    rows = bands[bands["band"] >= min_band].sort_values("band").to_dict("records")
    words = [sign_word(r) for r in rows]
    if not words or any(w is None for w in words):
        return None, ""
    for side, other in (("weights", "inputs"), ("inputs", "weights")):
        if other not in words and 2 * words.count(side) > len(words):
            return side, _listed([int(r["band"]) for r, w in zip(rows, words) if w != side])
    return "undecided", ""


def lean_verdict(ev: list[dict], bands: pd.DataFrame, min_band: int = CLAIM2B_MIN_BAND) -> tuple[str, str]:
    """Claim 2b's verdict and reason where no model is decided at every band: each model's `lean_word` (set on its
    evidence row `ev` as `lean`, `vetoed_by`) tallied as the strict words are, but at most partly (every word is
    vetoed by a band); not testable where no model is decided that way either."""
    for e in ev:
        b = bands[bands["model"] == e["model"]]
        e["lean"], e["vetoed_by"] = lean_word(b, min_band) if len(b) else (None, "")
    word = tally_every([e["lean"] for e in ev if e["lean"] is not None], yes="weights", undecided="undecided")
    why = f"at some band ≥ {min_band} the interval of weights − inputs includes 0"
    if word == NOT_TESTABLE:
        return NOT_TESTABLE, f"undecided for every model: {why}"
    return (
        PARTLY if word == REPRODUCED else word,
        f"no model decided at every band ({why} for each); read at most bands: {lean_text(ev)}",
    )


def lean_text(ev: list[dict]) -> str:
    """Claim 2b's per-model words where each rests on most bands: "weights in smollm2-135m (band 2 includes 0),
    inputs in gemma3-270m (bands 2–3 include 0), minilm-l6 undecided"."""
    said = []
    for e in ev:
        lean, veto = e.get("lean"), e.get("vetoed_by", "")
        if lean in ("weights", "inputs"):
            said.append(f"{lean} in {e['model']} ({veto} include{'' if veto.startswith('bands') else 's'} 0)")
        else:
            said.append(f"{e['model']} {lean or 'not measured'}")
    return ", ".join(said)


def _listed(ks: list[int]) -> str:
    """Band numbers in words, consecutive ones as a range: "band 2", "bands 2–3", "bands 2, 5"."""
    if not ks:
        return ""
    runs: list[list[int]] = []
    for k in ks:
        runs[-1].append(k) if runs and k == runs[-1][-1] + 1 else runs.append([k])
    items = [f"{r[0]}" if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs]
    return f"band{'s' if len(ks) > 1 else ''} {', '.join(items)}"


def bands_text(bands: pd.DataFrame, min_band: int = CLAIM2B_MIN_BAND) -> str:
    """The bands that decide, in words: each band as "band 2 +0.28 [−0.06, 0.62]", except that a run of three or more
    consecutive bands with the same `sign_word` is one item, "bands 3–29 each above 0 (+0.39 to +0.65, lower bounds
    from 0.08)" (the full matrix has 29 bands; listing each buried the one that decides)."""
    rows = bands[bands["band"] >= min_band].sort_values("band").to_dict("records")
    runs: list[list[dict]] = []
    for r in rows:
        if runs and sign_word(runs[-1][-1]) == sign_word(r) and int(r["band"]) == int(runs[-1][-1]["band"]) + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    side = {"weights": "above 0", "inputs": "below 0", "undecided": "includes 0", None: "not measured"}
    out = []
    for run in runs:
        if len(run) < 3:
            out += [f"band {int(r['band'])} {r['wmi']:+.2f} [{r['wmi_lo']:.2f}, {r['wmi_hi']:.2f}]" for r in run]
            continue
        w, lo, hi = sign_word(run[0]), min(r["wmi_lo"] for r in run), max(r["wmi_hi"] for r in run)
        bound = {"weights": f"lower bounds from {lo:.2f}", "inputs": f"upper bounds up to {hi:.2f}"}
        spread = f"{min(r['wmi'] for r in run):+.2f} to {max(r['wmi'] for r in run):+.2f}"
        out.append(f"bands {int(run[0]['band'])}–{int(run[-1]['band'])} each {side[w]} ({spread}, "
                   f"{bound.get(w, f'intervals within [{lo:.2f}, {hi:.2f}]')})")  # fmt: skip
    return "; ".join(out)


def covered(bands: pd.DataFrame) -> str:
    """Which bands a table covers: "1–3" (or "1")."""
    ks = sorted({int(k) for k in bands["band"]})
    return "none" if not ks else f"{ks[0]}" if len(ks) == 1 else f"{ks[0]}–{ks[-1]}"
