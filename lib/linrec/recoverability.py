"""Linear recoverability per block: the table of notebook 02 and `linrec measure`.

`ceiling_table(capture)` gives, per FFN block, the held-out R²_lin of the closed-form map
(`Capture.fit`), its bootstrap interval over held-out windows, per-feature quartiles, the
first-position numbers, the train-split (in-sample) R² and the conditioning of the solve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from linrec.ceiling import first_position
from linrec.heldout import bootstrap_r2

if TYPE_CHECKING:
    import pandas


def ceiling_table(capture, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pandas.DataFrame:
    """One row per block of `capture` (a `linrec.capture.Capture`): the closed-form ceiling and its conditioning.

    `r2_lo`, `r2_hi`: the `level` percentile bootstrap interval of `r2_lin` over the
    `n_test_windows` held-out windows (`linrec.heldout.bootstrap_r2`, `n_boot` resamples, seeded);
    NaN for a capture without held-out sums.
    `first_var_share`, `r2_ex_first`: `first_position` (NaN for a capture without first-position
    statistics).
    `r2_train`: the same map scored on its own train split (in-sample). A large gap
    `r2_train − r2_lin` means the map memorised the train rows instead of finding a relation that
    holds on unseen windows (few effectively distinct inputs for d_in + 1 parameters per output).
    """
    import pandas as pd

    heldout = getattr(capture, "heldout", None)
    rows = []
    for i in range(capture.n_blocks):
        train, test = capture.stats["train"][i], capture.stats["test"][i]
        fit, s = capture.fit(i), capture.score(i)
        q25, q75 = s.r2_feature_quartiles
        h = heldout[i] if heldout is not None else None
        lo, hi = bootstrap_r2(h, n_boot, level, seed) if h is not None else (np.nan, np.nan)
        n_windows = h.n_windows if h is not None else capture.meta.get("n_windows", {}).get("test", np.nan)
        rows.append(
            {
                "model": capture.model_label,
                "corpus": capture.config.corpus,
                "block": i,
                "r2_lin": s.r2,
                "r2_lo": lo,
                "r2_hi": hi,
                "r2_train": capture.score(i, "train").r2,
                "r2_feature_median": s.r2_feature_median,
                **first_position(test, capture.without_first(i), block=i),
                "r2_feature_q25": q25,
                "r2_feature_q75": q75,
                "cond_gram": fit.cond_gram,
                "cond_scaled": fit.cond_scaled,
                "rank": fit.rank,
                "dead_inputs": fit.dead_inputs,
                "d_in": train.d_in,
                "d_out": train.d_out,
                "n_train": train.n,
                "n_test": test.n,
                "n_test_windows": n_windows,
            }
        )
    return pd.DataFrame(rows)
