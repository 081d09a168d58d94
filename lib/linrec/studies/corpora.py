"""Notebook 05's study (the paper's Fig. 5, claim 5): the closed-form ceiling of every block of every model on each
corpus, how alike the per-block profiles are, and claim 5's verdict on shape and level.

`run(p)` reads the captures (`linrec.collect.capture.get_captures`: the model loaded once for all corpora; only
the profile's main corpus keeps raw rows), and writes `corpora` (R²_lin per model × corpus × block with its window
interval), `corpora_agreement` (each pair of corpora's profile correlations and differences,
`linrec.analyses.uncertainty.profile_agreement`) and `corpora_verdict` (`linrec.claims.corpora.corpus_verdicts`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from linrec.analyses.recoverability import ceiling_table, corpus_shape_level
from linrec.analyses.uncertainty import profile_agreement
from linrec.base.registry import TABLES
from linrec.claims.corpora import LEVEL_EX_FIRST, corpus_verdicts, overlay_word
from linrec.collect.capture import get_captures
from linrec.studies.base import Result, Settings, Summary, Tables
from linrec.studies.stages import Profile


@dataclass
class CorporaResult(Result):
    corpora: pd.DataFrame
    corpora_agreement: pd.DataFrame
    corpora_verdict: pd.DataFrame

    def wide(self) -> pd.DataFrame:
        """R²_lin with one column per corpus (in the profile's order), one row per model and block."""
        order = list(dict.fromkeys(self.corpora["corpus"]))
        return self.corpora.pivot_table(index=["model", "block"], columns="corpus", values="r2_lin", sort=False)[order]


def run(p: Profile) -> CorporaResult:
    """Every model on every corpus of `p.corpora`: the tables above, written under `p.results_dir`."""
    tables, shapes = [], []
    for m in p.models:  # raw rows kept on the run's own corpus only
        configs = [p.capture_config(m, c) for c in dict.fromkeys(p.corpora)]
        configs = [c if c.corpus == p.corpus else replace(c, sample_rows=0) for c in configs]
        caps = get_captures(configs, p.capture_run())
        tables += [ceiling_table(c) for c in caps.values()]
        shapes.append({"model": next(iter(caps.values())).model_label, **corpus_shape_level(caps)})
    table = pd.concat(tables, ignore_index=True)
    agreement = profile_agreement(table)
    verdicts = corpus_verdicts(table, agreement, p.corpora, pd.DataFrame(shapes))
    return CorporaResult(table, agreement, verdicts).write(p.results_dir)


def summarise(tables: Tables, p: Settings) -> Tables:
    """Claim 5's word (`overlay_verdict`, shape and level) on `corpora_verdict`'s own shares; the level without
    position 0, where a former linrec did not measure it, NaN (the study measures it). A table whose intervals are
    the percentile bootstrap's (it counts `n_boot`, not `n_windows`) is left out: its claim stays "rerun notebook
    05"."""
    t = tables.get("corpora_verdict")
    if t is None or "shape_hi" not in t or "n_windows" not in t:
        return {}
    t = t.assign(**{c: t[c] if c in t else float("nan") for c in LEVEL_EX_FIRST})
    t["overlay_verdict"] = [overlay_word(r) for r in t.to_dict("records")]
    return {"corpora_verdict": t[list(TABLES["corpora_verdict"].columns)]}


CORPORA = Summary("corpora_verdict", ("corpora_verdict",), summarise, as_written=("corpora_verdict",))
