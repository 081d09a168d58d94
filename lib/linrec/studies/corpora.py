"""Notebook 05's study (the paper's Fig. 5, claim 5): the closed-form ceiling of every block of every model on each
corpus, how alike the per-block profiles are, and claim 5's verdict on each pair of corpora's shift in level and shape.

`run(p)` reads the captures (`linrec.collect.capture.get_captures`: the model loaded once for all corpora; only
the profile's main corpus keeps raw rows), and writes `corpora` (R²_lin per model × corpus × block with its window
interval), `corpora_agreement` (per pair of corpora: the profiles' correlations and differences,
`linrec.analyses.uncertainty.profile_agreement`, and the profile's shift in level and shape with its window-jackknife
interval, claim 2a's convention, `linrec.analyses.recoverability.corpus_pairs`: the per-window sums it needs are in the
captures, not the tables) and `corpora_verdict`
(`linrec.claims.corpora.corpus_verdicts`: the shares of depth, level and shape beside claim 5's word)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from linrec.analyses.recoverability import ceiling_table, corpus_pairs, corpus_shape_level
from linrec.analyses.uncertainty import profile_agreement
from linrec.base.registry import TABLES
from linrec.claims.corpora import LEVEL_EX_FIRST, corpus_verdicts, overlay_words
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
    tables, shapes, pairs = [], [], []
    for m in p.models:  # raw rows kept on the run's own corpus only
        configs = [p.capture_config(m, c) for c in dict.fromkeys(p.corpora)]
        configs = [c if c.corpus == p.corpus else replace(c, sample_rows=0) for c in configs]
        caps = get_captures(configs, p.capture_run())
        tables += [ceiling_table(c) for c in caps.values()]
        label = next(iter(caps.values())).model_label
        shapes.append({"model": label, **corpus_shape_level(caps)})
        pairs += [{"model": label, **r} for r in corpus_pairs(caps)]
    table = pd.concat(tables, ignore_index=True)
    keys = ["model", "corpus_a", "corpus_b"]
    agreement = profile_agreement(table).merge(pd.DataFrame(pairs).drop(columns="n_blocks"), on=keys, how="left",
                                               validate="one_to_one")  # fmt: skip
    agreement = agreement[list(TABLES["corpora_agreement"].columns)]
    verdicts = corpus_verdicts(table, agreement, p.corpora, pd.DataFrame(shapes), agreement)
    return CorporaResult(table, agreement, verdicts).write(p.results_dir)


def summarise(tables: Tables, p: Settings) -> Tables:
    """Claim 5's word (`overlay_verdict`, `linrec.claims.corpora.model_word` on each model's pairs of corpora) written
    again into `corpora_verdict` from `corpora_agreement`'s level and shape; the level share without position 0,
    where a former linrec did not measure it, NaN. A folder whose `corpora_agreement` has no level and shape (written
    before claim 5 read them: it is not loaded), or whose `corpora_verdict` has the percentile bootstrap's intervals
    (it counts `n_boot`, not `n_windows`), is left as it is: its claim stays "rerun notebook 05"."""
    t, pairs = tables.get("corpora_verdict"), tables.get("corpora_agreement")
    if t is None or pairs is None or "shape_hi" not in t or "n_windows" not in t:
        return {}
    t = t.assign(**{c: t[c] if c in t else float("nan") for c in LEVEL_EX_FIRST})
    t["overlay_verdict"] = overlay_words(t["model"], pairs)
    return {"corpora_verdict": t[list(TABLES["corpora_verdict"].columns)]}


CORPORA = Summary("corpora_verdict", ("corpora_verdict", "corpora_agreement"), summarise,
                  as_written=("corpora_verdict",))  # fmt: skip
