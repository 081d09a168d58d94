"""Notebook 01's study (the paper's Fig. 1: "a frozen language model is run once over a corpus"): one forward pass per
model over the profile's corpus, each FFN block's float64 statistics cached on disk for the notebooks after it.

`run(p)` captures every model of `p.models` (`linrec.collect.capture.get_capture`: read from the cache where an entry
of the same settings is there, else computed and cached) and writes `capture`, one row per model: its architecture,
number of blocks, width, train and held-out rows, tokens used, whether a BOS token was prepended, and the seconds the
capture took with whether it came from the cache (`timings/capture.csv`: those two vary between runs).
`site_table(sites)` is the notebook's view of where a model's FFNs are (`linrec.inputs.sites.find_ffn_sites`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from linrec.base.errors import LinrecError
from linrec.base.registry import TABLES
from linrec.collect.capture import Capture, get_capture
from linrec.inputs.hf import LoadedModel
from linrec.inputs.sites import FfnSite
from linrec.stats.heldout import window_icc
from linrec.studies.base import Result
from linrec.studies.stages import Profile


@dataclass
class CaptureResult(Result):
    capture: pd.DataFrame
    window_icc: pd.DataFrame | None = None  # None: no capture kept rows
    captures: list[Capture] = field(default_factory=list, repr=False)  # one per model, in the profile's order


def site_table(sites: list[FfnSite]) -> pd.DataFrame:
    """One row per FFN site: its block, the module the hooks read (its path in the model) and that module's kind."""
    return pd.DataFrame(
        {
            "block": [s.index for s in sites],
            "FFN module": [s.path for s in sites],
            "kind": [type(s.ffn_in).__name__ for s in sites],
        }
    )


def capture_row(name: str, capture: Capture) -> dict:
    """`capture`'s row of the `capture` table, `name` being the model as the profile gives it."""
    m = capture.meta
    return {
        "model": name,
        "model_type": m["model_type"],
        "n_blocks": m["n_blocks"],
        "d_model": m["dims"][0][0],
        "n_train_rows": m["n_rows"]["train"],
        "n_test_rows": m["n_rows"]["test"],
        "tokens": m["tokens_used"],
        "bos": m["bos"],
        "seconds": round(m["seconds"], 1),
        "from_cache": capture.cached,
    }


def window_icc_table(name: str, capture: Capture) -> pd.DataFrame | None:
    """One row per block of `capture`: the intraclass correlation within a held-out window (`window_icc`) of its
    affine map's residuals y − Wᵀx − b and of its inputs x, on the stored held-out rows (float64); None where the
    capture kept no rows. A block whose fit failed at capture time is left out. The methods table's planted blocks
    take the largest residual value (`linrec.analyses.coverage.coverage`): rows of one window alike beyond what the map
    explains are what a window jackknife resamples together, and what makes a refit vary more than independent rows
    would."""
    if not capture.config.sample_rows or capture.path is None:
        return None
    index = capture.row_index()
    windows = index[index[:, 2] == 1, 0]  # the stored held-out rows' windows, as `rows(block, "test")` orders them
    n_windows = len(np.unique(windows))
    rows = []
    for block in range(capture.n_blocks):
        if capture.heldout is not None and capture.heldout[block] is None:
            continue
        try:
            fit = capture.fit(block)
        except LinrecError:  # no map (singular statistics, NaN rows): nothing to measure its residuals by
            continue
        x, y = (np.asarray(a, dtype=np.float64) for a in capture.rows(block, "test"))
        resid = y - fit.predict(x)
        rows.append({"model": name, "block": block, "resid_icc": window_icc(resid, windows),
                     "input_icc": window_icc(x, windows), "n_rows": len(x), "n_windows": n_windows})  # fmt: skip
    return pd.DataFrame(rows, columns=list(TABLES["window_icc"].columns))


def run(p: Profile, loaded: LoadedModel | None = None) -> CaptureResult:
    """Every model of `p.models` captured on `p.corpus` with the profile's capture settings; `loaded` (a model
    already loaded, e.g. to show its FFN sites) serves the model it is instead of a second load. Writes `capture`
    under `p.results_dir`."""
    captures = [
        get_capture(
            p.capture_config(name),
            p.capture_run(),
            loaded=loaded if loaded is not None and name == loaded.name else None,
        )
        for name in p.models
    ]
    table = pd.DataFrame([capture_row(name, c) for name, c in zip(p.models, captures)])
    icc = [t for name, c in zip(p.models, captures) if (t := window_icc_table(name, c)) is not None]
    return CaptureResult(table, pd.concat(icc, ignore_index=True) if icc else None, captures).write(p.results_dir)
