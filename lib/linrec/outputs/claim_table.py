"""The report's claim table, judged once for the report and the README's results block (`claim_table`): each
claim's verdict, its robustness and fresh-text cells, the tally (`tally_line`), and the verdicts of the other profiles
a profile names (`beside`, its `beside` key: `results/full`, `results/zoo`, `results/zoo_paper`) in a column and a
tally line each, the zoo's on the claims judged on its tables (`judged_here`). `linrec.outputs.report` lays the
document out around them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from linrec.base.errors import LinrecError
from linrec.claims.rules import PARTLY, VERDICTS
from linrec.claims.synthesis import Analysis, Answer, answer, plain_sentence, widest
from linrec.outputs import catalog
from linrec.outputs.claim_text import Said, sentence
from linrec.outputs.results import Results

# why the claim table's other fresh-text cells read "one sample"
ONE_SAMPLE = (
    "Claims 2, 3, 5, 6 and 7 rest on sample 0 alone: the samples keep the float64 statistics only, which is all "
    "claims 1 and 4 need, while the others need stored rows (probes, baselines, controls), random-init captures, the "
    "other corpora or the swapped model run again, each several minutes per sample and model."
)


def _fresh_text(r: Results) -> dict:
    """The claim table's fresh-text column per claim: claims 1 and 4 from the replication on disjoint samples of text
    (this profile's, else `results/full/`'s), every other claim on the one sample it was measured on."""
    out = {entry.id: "one sample" for entry in catalog.CATALOG}
    for claim, name in ((1, "r2_replicates_summary"), (4, "spectrum_replicates_summary")):
        rep, source = r.get(name)
        if rep is not None:
            n = int(rep["n_samples"].min())
            steady = rep["replication"].isin(["holds on every sample", "fails on every sample"]).all()
            where = f" ({source.profile} profile)" if source.profile else ""
            out[claim] = (f"same on {n} samples" if steady else "sample-dependent") + where
    return out


def verdict_table(results_dir: str | Path) -> pd.DataFrame:
    """One row per claim of the catalog on the tables in `results_dir`: its number, what it is about, its verdict."""
    return pd.DataFrame(
        [{"claim": c.number, "what": c.title, "verdict": c.verdict} for c in catalog.build(Results(results_dir))]
    )


TALLY_LEAD = "**Does the paper hold?** Of"  # the tally line's lead for the profile the report is about
# this profile's own lead where the answer comes from wider evidence (`Evidence.tally` leads then)
THIS_RUN = "**This run** ({}; its `this run` column, what this profile's own run regenerates), of"


def tally_line(verdicts: Iterable[str], lead: str = TALLY_LEAD) -> str:
    """One line counting `verdicts` (one word per claim judged), in the order of `linrec.claims.VERDICTS`, after
    `lead` ("**Does the paper hold?** Of" for this profile's; another profile's names it)."""
    verdicts = list(verdicts)
    counts = [(w, verdicts.count(w)) for w in VERDICTS]
    return f"{lead} {len(verdicts)} checks: " + ", ".join(f"{k} {w}" for w, k in counts if k) + "."


@dataclass(frozen=True)
class Beside:
    """Another profile's verdicts, shown beside this one's (a profile's `beside`): its column's head `name` (the
    results folder's name), the `folder` as shown, what it `measured` (its models, or the zoo's runs) and its verdict
    per claim it judges (`verdicts`: claim id as text → verdict; a claim it does not judge is absent)."""

    name: str
    folder: str
    measured: str
    verdicts: dict[str, str]

    def tally(self) -> str:
        """This profile's tally line, named."""
        lead = f"**Profile {self.name}** (its column; `{self.folder}/`: {self.measured}), of"
        return tally_line(self.verdicts.values(), lead)


def built(folder: str | Path, memo: dict | None = None) -> list[Said]:
    """Every claim judged on the tables of `folder` (`catalog.build`), once per `memo` (a dict the caller keeps: a
    claim table judges a folder shown beside it and read as evidence for the answer only once)."""
    memo = {} if memo is None else memo
    key = Path(folder).resolve()
    if key not in memo:
        memo[key] = catalog.build(Results(folder))
    return memo[key]


def beside(folder: str | Path, here: str | Path, root: Path | None = None, memo: dict | None = None) -> Beside | None:
    """The verdicts judged on the last run of another profile, in results folder `folder` (`built`: every claim of
    the catalog, by today's rules on that folder's tables; for a folder that measured no model, a zoo's, the claims
    judged on its own tables, `judged_here`). None where `folder` is `here` (this profile's own), absent, holds no
    verdict, or cannot be judged (an older linrec wrote it). `root`: the checkout the folder is shown relative to;
    `memo`: `built`'s."""
    folder, here = Path(folder), Path(here)
    if not folder.is_dir() or folder.resolve() == here.resolve():
        return None
    shown = folder.resolve().relative_to(root.resolve()) if root and folder.resolve().is_relative_to(root.resolve()) \
        else folder  # fmt: skip
    try:
        o = Results(folder)
        verdicts = {str(c.number): c.verdict for c in judged_here(o, built(folder, memo))}
        cap, runs = o.table("capture"), o.table("zoo_runs")
        models = ", ".join(dict.fromkeys(cap["model"])) if cap is not None else "its models"
        if cap is None and runs is not None:  # a zoo's runs
            models = f"{len(runs)} decoders trained here"
            if "block_params" in runs:
                models += f", about {runs['block_params'].median() / 1e6:.3g} M block parameters each"
    except LinrecError:
        return None
    return Beside(folder.name, str(shown), models, verdicts) if verdicts else None


def judged_here(r: Results, claims: list[Said]) -> list[Said]:
    """The claims a folder speaks for: every one where it measured models (`_models`: a claim whose notebook did not
    run is "not testable" there), else (a zoo's folder) those judged on its own tables (`_judged`)."""
    if _models(r) is not None:
        return claims
    ids = _judged(r, claims)
    return [c for c in claims if str(c.number) in ids]


@dataclass(frozen=True)
class Evidence:
    """The answer from the widest evidence (`linrec.claims.synthesis`): the folder that decided (`widest`, as shown),
    the models it measured, the alternative analyses read (`alternatives`: their folders' names) and each claim's
    `Answer`."""

    widest: str
    models: tuple[str, ...]
    alternatives: tuple[str, ...]
    answers: dict[str, Answer]
    own: str = ""  # this profile's folder, as shown, and its models
    own_models: tuple[str, ...] = ()

    def tally(self) -> str:
        """The answer's tally line, saying where it comes from."""
        alternatives = ", ".join([*self.alternatives, "without position 0", "fresh text"])
        lead = (f"**Does the paper hold?** On the widest evidence (each claim judged on `{self.widest}/`: "
                f"{', '.join(self.models)}; lowered, never raised, where an alternative analysis ({alternatives}) "
                "does not confirm it), of")  # fmt: skip
        return tally_line((a.verdict for a in self.answers.values()), lead)

    def cell(self, claim: str) -> str:
        """The claim table's answer cell: the verdict, the folder and models that decided it, and the alternatives
        that did not confirm it ("lowered by" where they moved it)."""
        a = self.answers[claim]
        said = f"{Path(self.widest).name}: {', '.join(a.decided.models)}"
        if a.unconfirmed:
            said += f"; {'lowered by' if a.lowered else 'not confirmed by'} {', '.join(a.unconfirmed)}"
        return f"**{a.verdict}** ({said})"


@dataclass
class ClaimTable:
    """What the claim table shows, judged once for the report and the README block alike (`claim_table`): this
    profile's results `r`, its `claims` and their fresh-text cells, the other profiles' verdicts (`beside`) and, where
    the evidence reaches beyond this profile, the answer per claim from the widest evidence (`answers`)."""

    r: Results
    claims: list[Said]
    fresh: dict
    beside: list[Beside] = field(default_factory=list)
    answers: Evidence | None = None


def _models(r: Results) -> tuple[str, ...] | None:
    """The models a profile's folder measured (its capture table's, else its R²_lin table's: the learning curve's
    folder has no capture table); None for a folder of neither (a zoo's)."""
    t = r.table("capture")
    t = r.table("r2_lin") if t is None else t
    return None if t is None else tuple(dict.fromkeys(str(m) for m in t["model"]))


def _judged(r: Results, claims: list[Said]) -> dict[str, str]:
    """The verdicts of `claims` (judged on `r`) whose rule found every table it reads there (its own, or the zoo's,
    `Rule.zoo`): a folder that did not run a claim's notebook is no evidence on it."""
    found = lambda names: bool(names) and all(r.table(name) is not None for name in names)  # noqa: E731
    zoo = r.table("zoo_runs") is not None  # a zoo's folder: every claim with a zoo row is judged (no run converged too)
    return {str(c.number): c.verdict for c in claims
            if found(catalog.rule(c.number).reads) or (zoo and catalog.rule(c.number).zoo)}  # fmt: skip


def evidence(results_dir: str | Path, claims: list[Said], folders: Iterable[str | Path],
             alternatives: Iterable[str | Path] = (), root: Path | None = None,
             memo: dict | None = None) -> Evidence | None:  # fmt: skip
    """The answer per claim from the widest evidence (`linrec.claims.synthesis`): among this profile's folder and the
    profile folders beside it (those with a capture table: a zoo is not one), the one that measured every model the
    others did decides; the `alternatives` folders (another split, more train tokens), its verdicts without
    position 0 and its fresh text lower it where they do not confirm it. None where nothing reaches beyond this
    profile (no alternative and no wider folder) or no folder is the widest. `claims`: this profile's, judged;
    `memo`: `built`'s, so a folder already judged beside this one is not judged again."""
    shown: dict[str, tuple[Path, tuple[str, ...]]] = {}
    for f in [Path(results_dir), *map(Path, folders)]:
        inside = root is not None and f.resolve().is_relative_to(root.resolve())
        name = str(f.resolve().relative_to(root.resolve())) if inside else str(f)
        if f.is_dir() and (m := _models(Results(f))) is not None:
            shown.setdefault(name, (f, m))
    alternatives = [Path(a) for a in alternatives]
    own = next(iter(shown), None)
    main = widest({k: m for k, (_, m) in shown.items()})
    if main is None or (main == own and not alternatives):
        return None
    folder, models = shown[main]
    r = Results(folder)
    judged = claims if folder.resolve() == Path(results_dir).resolve() else built(folder, memo)
    fresh = _fresh_text(r)
    others = []
    for a in alternatives:
        if a.is_dir() and (m := _models(ra := Results(a))) is not None:
            others.append((a.name, m, _judged(ra, built(a, memo))))
    answers = {}
    for c in judged:
        k = str(c.number)
        alts = [Analysis(name, v[k], m) for name, m, v in others if k in v]
        if c.without_first in VERDICTS:  # judged without position 0 ("" or "not measured": no evidence either way)
            alts.append(Analysis("without position 0", c.without_first, models))
        if str(fresh.get(c.number, "")).startswith("sample-dependent"):
            alts.append(Analysis("fresh text", PARTLY, models))  # holds on some samples of text, not on every one
        answers[k] = answer(Analysis(folder.name, c.verdict, models), alts)
    return Evidence(main, models, tuple(name for name, _, _ in others), answers, own, shown[own][1])


def claim_table(results_dir: str | Path, folders: Iterable[str | Path] = (), root: Path | None = None,
                alternatives: Iterable[str | Path] = ()) -> ClaimTable:  # fmt: skip
    """Every claim judged on the tables in `results_dir`, the verdicts of the profiles in `folders` (`beside`: those
    absent or unjudgeable left out) to show beside them, and the answer from the widest evidence (`evidence`, reading
    the `alternatives` folders too)."""
    r = Results(results_dir)
    claims = catalog.build(r)  # on `r` itself: the tables an older linrec wrote are named in `r.stale`
    folders, memo = list(folders), {Path(results_dir).resolve(): claims}  # each folder judged once
    others = [b for f in folders if (b := beside(f, results_dir, root, memo)) is not None]
    answers = evidence(results_dir, claims, folders, alternatives, root, memo)
    return ClaimTable(r, claims, _fresh_text(r), others, answers)


def claim_rows(t: ClaimTable) -> list[str]:
    """The tally and one row per claim; with other profiles' verdicts (`t.beside`), one tally line per profile (a
    list: this one's first) and a column each after the verdict, so a claim judged differently on more models, or on
    the zoo, is seen on the first screen ("—" where that profile does not judge the claim)."""
    # every interval [lo, hi] of the "ours" column is a 95 % one unless its sentence names its own level (6a's ΔPPL:
    # 99 %); a number without brackets (2a's effects) has none (issue 90: the header said "95 % CI" for all)
    # with an answer from wider evidence (`t.answers`), its tally and a plain sentence lead and its column comes first;
    # this profile's own verdict is then the "this run" column
    e = t.answers
    head = f"| # | claim | the paper | {'answer (decided by) | ' if e else ''}ours ([lo, hi]: 95 % CI unless the row "
    head += f"names its level) | without position 0 | fresh text | {'this run' if e else 'verdict'} |"
    own = tally_line((c.verdict for c in t.claims), THIS_RUN.format(f"`{e.own}/`: {', '.join(e.own_models)}") if e
                     else TALLY_LEAD)  # fmt: skip
    tallies = [
        *([f"{e.tally()} {plain_sentence(e.answers, e.models)}"] if e else []),
        own,
        *(b.tally() for b in t.beside),
    ]
    rows = ["## Claim by claim", "", *([f"- {x}" for x in tallies] if len(tallies) > 1 else tallies), ""]
    head += "".join(f" {b.name} |" for b in t.beside)
    rows += [head, "|---" * head.count(" | ") + "|---|"]
    for c in t.claims:
        answered = [e.cell(str(c.number)) if str(c.number) in e.answers else "—"] if e else []
        cells = [f"[{c.number}](#{c.anchor})", c.title, c.paper, *answered, sentence(c.headline), without_first(c),
                 t.fresh[c.number], c.verdict if e else f"**{c.verdict}**"]  # fmt: skip
        cells += [b.verdicts.get(str(c.number), "—") for b in t.beside]
        rows.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return rows


def without_first(c: Said) -> str:
    """The claim table's robustness column: "holds" where the verdict is the same without position 0, else that
    verdict; "—" for a claim the check does not apply to."""
    if not c.without_first:
        return "—"
    return "same" if c.without_first == c.verdict else c.without_first
