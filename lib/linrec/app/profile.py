"""Loading a profile: `load_profile` reads params/<name>.yaml over the declared defaults, checks it and hands back
one `Profile`. Every parameter is declared once (its type, its one default and what it does) in the profile's schema,
`linrec.studies.stages`: the run's own sections (`Run`, `Outputs`) and each study's beside its row (`CeilingParams`,
…); `linrec studies NAME` lists a study's.

A profile file sets only what it changes. Every notebook's parameters cell declares just what papermill injects
(`profile_file`, `overrides`), and its next cell binds `p = load_profile(profile_file, overrides, lab=True)
.notebook(NN)`, the profile whole, which it hands to its study's `run(p)`: Run All in Jupyter loads
params/default.yaml with the values of `notebooks/overrides.yaml` where that file exists (an experiment that git
ignores: `lab_overrides`), `linrec figures` the profile it is given with its `-p NAME VALUE` overrides and nothing
else. A wrong key, type, corpus or model name is one line naming it and the fix, at load, before any notebook runs.

The declared defaults are the default profile's values (params/default.yaml states only its output paths, which differ
from any other profile's: `with_output_defaults`); a change of one moves every profile that leaves it out.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import yaml

from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.base.params import fits, type_words
from linrec.base.progress import NOTEBOOK_ENV
from linrec.claims.rules import joined
from linrec.collect.config import CaptureConfig, capture_settings
from linrec.inputs.offline import check_corpus_name, check_model_name, suggest
from linrec.studies.stages import DECLARED, SECTIONS, Profile  # the profile's schema


def profile_path(source: str | Path, root: Path | None = None) -> Path:
    """The file of a profile given by name ("smoke": params/smoke.yaml) or path (relative to the project root)."""
    root = root or project_root()
    text = str(source)
    if "/" not in text and not text.endswith((".yaml", ".yml")):
        return root / "params" / f"{text}.yaml"
    return Path(text) if Path(text).is_absolute() else root / text


LAB_OVERRIDES = "notebooks/overrides.yaml"  # Lab's experiments (relative to the project root); .gitignore names it


def lab_overrides(root: Path) -> tuple[dict, Path]:
    """The values of `LAB_OVERRIDES` under `root` (a YAML mapping of parameters, as `-p` gives them) and its path:
    how a notebook opened in Jupyter Lab is run with other values without editing the tracked `.py`. {} where the
    file is absent or empty, and under `linrec figures` (its notebooks' kernels carry `NOTEBOOK_ENV`: a run reads
    only its profile and its `-p`, never a file left in the checkout)."""
    path = root / LAB_OVERRIDES
    if os.environ.get(NOTEBOOK_ENV, "").strip() or not path.is_file():
        return {}, path
    return read_profile(path), path


def load_profile(
    source: str | Path = "default", overrides: dict | None = None, root: Path | None = None, lab: bool = False
) -> Profile:
    """The profile `source` names (`profile_path`) with `overrides` {name: value} in place of its values, over the
    defaults declared here; every key, type, section and name checked (`check_values`, `check_names`): one line
    naming the fix. `lab` (a notebook's own load cell): the values of `notebooks/overrides.yaml` too, under
    `overrides` (`lab_overrides`; never under `linrec figures`)."""
    if lab:
        extra, where = lab_overrides(root or project_root())
        if extra:
            check_values(extra, where)
            check_names(extra, where, root or project_root())
            overrides = {**extra, **(overrides or {})}
            shown = ", ".join(f"{k}={v!r}" for k, v in extra.items())
            print(f"[linrec] {LAB_OVERRIDES} sets {shown} (git ignores the file; empty it to run the profile as it is)")
    path = profile_path(source, root)
    values = read_profile(path)
    check_values(values, path)
    check_names(values, path, root or project_root())
    if overrides:  # each checked alone, then together (a capture setting and a seed from different places)
        check_values(overrides, "-p")
        check_names(overrides, "-p", root or project_root())
        check_nested({**values, **overrides}, path)
    values = with_output_defaults({**values, **(overrides or {})}, path.stem)
    sections = {
        section: cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})
        for section, cls in SECTIONS.items()
    }
    return Profile(name=path.stem, sections=sections, given=frozenset(values))


def read_profile(path: Path) -> dict:
    """A profile file's mapping as written (no defaults, no checks beyond being a YAML mapping)."""
    if not path.is_file():
        there = sorted(p.name for p in path.parent.glob("*.yaml")) if path.parent.is_dir() else []
        raise LinrecError(f"parameter file {path} not found; profiles live in params/ (in {path.parent}: "
                          f"{', '.join(there) or 'none'})")  # fmt: skip
    try:
        values = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise LinrecError(f"{path}{where}: not valid YAML ({problem}); fix that line") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LinrecError(f"cannot read parameter file {path} ({err}); give a readable YAML file") from None
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise LinrecError(f"{path} must be a YAML mapping of parameter names to values")
    return values


def check_values(values: dict, where: Path | str) -> None:
    """Every key a parameter declared here, each value of its declared type, the sections well formed; `where`
    names where the values came from (a file, or "-p") in the one-line error."""
    unknown = sorted(str(k) for k in values if k not in DECLARED)
    if unknown:
        hint = suggest(unknown[0], DECLARED)
        raise LinrecError(
            f"{where}: unknown parameter(s) {', '.join(unknown)}{hint}; known: {', '.join(sorted(DECLARED))}"
        )
    runs = values.get("notebooks")
    if runs is not None and (not isinstance(runs, list) or not all(isinstance(n, str) and n for n in runs)):
        raise LinrecError(f'{where}: notebooks must be a list of notebook numbers as strings, e.g. ["08"]')
    for name, value in values.items():
        d = DECLARED[name]
        if not fits(value, d.hint):
            raise LinrecError(
                f"{where}: {name} must be {type_words(d.hint)} ({d.where} declares {d.declaration()}), got "
                f"{value!r}; fix that line"
            )
    check_nested(values, where)


# The parameters that name corpora and models: checked as names at load (`check_names`), before any notebook starts
CORPUS_KEYS = ("corpus", "corpora", "route_corpora")
MODEL_KEYS = ("models", "encoder_models")


def check_names(values: dict, where: Path | str, root: Path) -> None:
    """Every corpus and model a profile's values name (`CORPUS_KEYS`, `MODEL_KEYS`, `cross_pairs`) is one a run could
    find: an offline name, a hub name or an existing path (relative to the project `root`, where the notebooks run),
    as far as the name alone tells (`linrec.inputs.offline`: no torch, no model loaded). One line with "did you
    mean" naming the parameter and where it came from: `linrec figures -p corpus cod` is refused before any
    notebook starts."""
    pairs = [n for p in values.get("cross_pairs") or [] if isinstance(p, list) for n in p]
    named = [(key, check_corpus_name, name) for key in CORPUS_KEYS for name in _listed(values.get(key))]
    named += [(key, check_model_name, name) for key in MODEL_KEYS for name in _listed(values.get(key))]
    named += [("cross_pairs", check_model_name, name) for name in _listed(pairs)]
    for key, check, name in named:
        try:
            check(name, root)
        except LinrecError as err:
            raise LinrecError(f"{where}: {key}: {err}") from None


def _listed(value) -> list:
    """A parameter's value as a list of names: one name, a list of them, or [] (None; a wrong type is
    `check_values`' to say)."""
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def parse_overrides(pairs: list[list[str]] | None) -> dict:
    """`-p NAME VALUE` pairs (`linrec figures`) as {name: value}, each VALUE read as papermill reads `-p`: a whole
    number, a number, True/False, None, else the string as given; and, beyond papermill, a YAML list or mapping
    (`-p models "[smollm2-135m]"`, `-p capture "{tokens: 2560}"`)."""
    return {name: _override_value(name, text) for name, text in pairs or []}


def _override_value(name: str, text: str) -> object:
    words = {"true": True, "false": False, "none": None, "null": None}
    if text.lower() in words:
        return words[text.lower()]
    for number in (int, float):
        try:
            return number(text)
        except ValueError:
            pass
    if text.strip()[:1] in ("[", "{"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            problem = getattr(err, "problem", None) or str(err).splitlines()[0]
            raise LinrecError(f"-p {name} {text}: not a valid YAML list or mapping ({problem}); quote it") from None
    return text


# The lists a notebook reads an element of, or runs nothing useful without: [] stops here, not in a notebook's cell
# (`models: []` was an IndexError in notebook 01). The others take [] as "skip it" (replicate_samples,
# curve_train_tokens, first_variants, route_corpora, encoder_models).
NON_EMPTY = ("models", "corpora", "init_seeds", "train_variants", "train_init_seeds", "train_data_seeds")


def check_nested(values: dict, where: Path | str) -> None:
    """What the types alone do not say: the lists that must not be empty (`NON_EMPTY`), and the sections' own keys
    and values: `capture:` (CaptureConfig's fields, each of its type, the whole a valid capture), `training:`
    (TrainConfig's, likewise), `heal:` and `heal_trained:` (Heal's) and `cross_pairs:` (pairs of model names). One
    line naming the fix, at load."""

    for name in NON_EMPTY:
        if name in values and not values[name]:
            raise LinrecError(f"{where}: {name} is empty; give at least one (e.g. {name}: {_example(name)})")
    if "capture" in values:  # its keys and the type of each value, as CaptureConfig declares them
        settings = capture_settings(values["capture"], where=f"{where}: capture")
        try:
            CaptureConfig("model", seed=values.get("seed", 0), **settings).validate()
        except LinrecError as err:
            raise LinrecError(f"{where}: capture: {err}") from None
    if values.get("training"):
        # here, not at the top: torch only where a profile trains (linrec.app.notebooks' forkserver imports this module)
        from linrec.inputs.training import training_settings

        training_settings(values["training"], where=f"{where}: training", device=str(values.get("device", "cpu")))
    if values.get("heal") or values.get("heal_trained"):
        # here, not at the top: torch only where a profile heals (the forkserver imports this module)
        from linrec.analyses.healing import Heal

        if values.get("heal"):
            Heal.of(values["heal"], where=f"{where}: heal")
        if values.get("heal_trained"):
            Heal.of_trained(values["heal_trained"], where=f"{where}: heal_trained")
    pairs = values.get("cross_pairs")
    if pairs is not None and not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(m, str) for m in p) for p in pairs
    ):
        raise LinrecError(
            f"{where}: cross_pairs must be a list of [inputs model, FFN model] pairs, e.g. [[gpt2, init:0:gpt2]], or "
            f"null; got {pairs!r}"
        )


def _example(name: str) -> str:
    return {"models": "[smollm2-135m]", "corpora": "[wiki]", "train_variants": "[gelu, swiglu]"}.get(name, "[0]")


def with_output_defaults(values: dict, stem: str) -> dict:
    """`values` with every output path the notebooks write to made explicit: a profile that names none of them
    writes under results/<its name>/ and leaves the README alone. Only a profile that names the repository's
    figures/, paper/report.md and README.md (params/default.yaml) writes there."""
    out = dict(values)
    if out.get("results_dir") is None:
        out["results_dir"] = f"results/{stem}"
    if out.get("figures_dir") is None:
        out["figures_dir"] = f"{out['results_dir']}/figures"
    if out.get("report_path") is None:
        out["report_path"] = f"{out['results_dir']}/report.md"
    out.setdefault("readme", None)
    return out


SHARED = ("corpus", "models", "seed", "capture")  # what another profile's run must share with this one to be quoted


def results(p: Profile, root: Path):
    """The results folder of profile `p` as its notebooks read it (`linrec.outputs.results.Results`, its `get`): a
    table `p` does not compute is the last run of the profile declared to stand in for it, quoted only where that
    profile measured what `p` measures (`SHARED`); one that did not is named in the source's `differs`, with how
    ("corpus 'wiki', not this run's 'code'"), and not read. Capture settings are compared without `sample_rows` (rows
    kept change no number the quoted tables hold)."""
    here = {key: getattr(p, key) for key in SHARED}

    def differs(profile: str) -> str | None:
        other = load_profile(profile, root=root)
        for name, mine in here.items():
            theirs = getattr(other, name)
            if name == "capture":
                theirs, mine = capture_settings(theirs), capture_settings(mine)
                for key in (k for k in mine if k != "sample_rows" and mine[k] != theirs[k]):
                    return f"capture {key} {_said(theirs[key])}, not this run's {_said(mine[key])}"
            elif theirs != mine:
                return f"{name} {_said(theirs)}, not this run's {_said(mine)}"
        return None

    from linrec.outputs.results import Results  # here, not at the top: it imports torch; the command line does not

    return Results(root / p.results_dir, applies=differs)


def _said(value) -> str:
    """A setting as a sentence says it: 'wiki'; a list as words, "smollm2-135m and gemma3-270m", not a Python repr
    (issue 90: notebook 02 printed "['smollm2-135m', 'gemma3-270m']")."""
    if isinstance(value, list | tuple):
        return joined(value) or "none"
    return repr(value) if isinstance(value, str) else str(value)
