"""Loading a profile: `load_profile` reads params/<name>.yaml over the declared defaults, checks it and hands back
one `Profile`. Every parameter is declared once (its type, its one default and what it does) in the profile's schema,
`linrec.studies.stages`: the run's own sections (`Run`, `Outputs`) and each study's beside its row (`CeilingParams`,
…); `linrec studies NAME` lists a study's.

A profile file sets only what it changes. Every notebook's parameters cell declares just what papermill injects
(`profile_file`, `overrides`), and its next cell binds `p = load_profile(profile_file, overrides).notebook(NN)`, the
profile whole, which it hands to its study's `run(p)`: Run All in Jupyter loads params/default.yaml, `linrec figures`
the profile it is given with its `-p NAME VALUE` overrides. A wrong key or type is one line naming the key and the fix,
at load, before any notebook runs.

The declared defaults are the default profile's values (params/default.yaml states only its output paths, which differ
from any other profile's: `with_output_defaults`); a change of one moves every profile that leaves it out.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import yaml

from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.base.params import fits, type_words
from linrec.measure.config import CaptureConfig, capture_settings
from linrec.studies.stages import DECLARED, SECTIONS, Profile  # the profile's schema


def profile_path(source: str | Path, root: Path | None = None) -> Path:
    """The file of a profile given by name ("smoke": params/smoke.yaml) or path (relative to the project root)."""
    root = root or project_root()
    text = str(source)
    if "/" not in text and not text.endswith((".yaml", ".yml")):
        return root / "params" / f"{text}.yaml"
    return Path(text) if Path(text).is_absolute() else root / text


def load_profile(source: str | Path = "default", overrides: dict | None = None, root: Path | None = None) -> Profile:
    """The profile `source` names (`profile_path`) with `overrides` {name: value} in place of its values, over the
    defaults declared here; every key, type and section checked (`check_values`): one line naming the fix."""
    path = profile_path(source, root)
    values = read_profile(path)
    check_values(values, path)
    if overrides:  # each checked alone, then together (a capture setting and a seed from different places)
        check_values(overrides, "-p")
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
        raise LinrecError(
            f"parameter file {path} not found; profiles live in params/ (default.yaml, smoke.yaml, paper.yaml)"
        )
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
        raise LinrecError(f"{where}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(DECLARED))}")
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


def measured_elsewhere(root: Path, profile: str, **here) -> str | None:
    """Why the results of another profile (`params/<profile>.yaml`), which a notebook quotes where this run does not
    compute them, do not apply to this run: the first of `here` (this run's corpus, models, seed, capture settings…)
    that the other profile sets otherwise, in words ("corpus 'wiki', not 'code'"); None when it measured the same.
    Capture settings are compared without `sample_rows` (rows kept change no number the quoted tables hold)."""

    other = load_profile(profile, root=root)
    for name, mine in here.items():
        theirs = getattr(other, name)
        if name == "capture":
            theirs, mine = capture_settings(theirs), capture_settings(mine)
            for key in (k for k in mine if k != "sample_rows" and mine[k] != theirs[k]):
                return f"capture {key} {theirs[key]!r}, not this run's {mine[key]!r}"
            continue
        if theirs != mine:
            return f"{name} {theirs!r}, not this run's {mine!r}"
    return None
