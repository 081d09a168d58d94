"""Parameter profiles (params/*.yaml): what each notebook's `parameters` cell declares, and a profile read and checked
against those declarations (unknown keys and wrong types are one line naming the fix)."""

from __future__ import annotations

import ast
from pathlib import Path

import yaml

from linrec.base.errors import LinrecError


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned in a jupytext notebook's `parameters` cell (what papermill may set)."""
    return set(declared_defaults(notebook))


_NOT_LITERAL = object()


def declared_defaults(notebook: Path) -> dict[str, tuple[object, str | None]]:
    """{name: (default value, annotation source or None)} of a jupytext notebook's `parameters` cell; a default that
    is not a literal is `_NOT_LITERAL` (its type is then not checked)."""
    out = {}
    for node in _parameters_cell(notebook):
        if isinstance(node, ast.Assign):
            targets, value, ann = node.targets, node.value, None
        elif isinstance(node, ast.AnnAssign):
            targets, value, ann = [node.target], node.value, ast.unparse(node.annotation)
        else:
            continue
        try:
            default = ast.literal_eval(value) if value is not None else None
        except ValueError:
            default = _NOT_LITERAL
        out.update({t.id: (default, ann) for t in targets if isinstance(t, ast.Name)})
    return out


_ANNOTATION_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "dict": dict, "None": None}


# The parameters whose notebook default is None, and the type they take otherwise (papermill's parameter parser
# does not read `int | None` annotations, so the types live here; a test checks every None default is listed).
OPTIONAL_TYPES = {
    "probe_rows": "int | None",
    "test_windows": "int | None",
    "control_rows": "int | None",
    "decomposition_rows": "int | None",
    "cross_band": "int | None",
    "route_blocks": "int | None",
    "cross_pairs": "list | None",
    "save_dir": "str | None",
    "readme": "str | None",
    "train_block_tolerance": "float | None",
}


def _allowed(default: object, ann: str | None) -> list | None:
    """The types a profile value may take for a parameter (None: unchecked): its annotation's (`int | None`), else
    its default's. A float parameter takes a whole number too; a bool is never an int."""
    if ann is not None:
        names = [a.strip() for a in ann.split("|")]
        if all(n in _ANNOTATION_TYPES for n in names):
            return [_ANNOTATION_TYPES[n] for n in names]
        return None
    if default is None or default is _NOT_LITERAL:
        return None
    return [type(default) if not isinstance(default, tuple) else list]


def _fits(value: object, allowed: list, default: object) -> bool:
    for t in allowed:
        if t is None and value is None:
            return True
        if t is bool and isinstance(value, bool):
            return True
        if t is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t is float and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if t is str and isinstance(value, str):
            return True
        if t is dict and isinstance(value, dict):
            return True
        if t is list and isinstance(value, list):
            like = default[0] if isinstance(default, list | tuple) and default else None
            return like is None or all(_fits(v, _allowed(like, None), like) for v in value)
    return False


def _type_words(allowed: list, default: object) -> str:
    words = {None: "null", int: "a whole number", float: "a number", str: "a string", bool: "true or false",
             dict: "a mapping"}  # fmt: skip
    out = []
    for t in allowed:
        if t is list:
            like = default[0] if isinstance(default, list | tuple) and default else None
            plural = {str: "strings", int: "whole numbers", float: "numbers", bool: "booleans", list: "lists"}
            out.append(f"a list of {plural.get(type(like), 'values')}" if like is not None else "a list")
        else:
            out.append(words[t])
    return " or ".join(out)


def check_types(params: dict, root: Path, path: Path) -> None:
    """One line for the first profile value whose type no notebook declaring it accepts (e.g. `tokens: lots`)."""
    for nb in notebooks(root):
        for name, (default, ann) in declared_defaults(nb).items():
            if name not in params:
                continue
            ann = ann or OPTIONAL_TYPES.get(name)
            allowed = _allowed(default, ann)
            if allowed is not None and not _fits(params[name], allowed, default):
                raise LinrecError(
                    f"{path}: {name} must be {_type_words(allowed, default)} (notebooks/{nb.name} declares "
                    f"{name} = {default!r}), got {params[name]!r}; fix that line"
                )


def _parameters_cell(notebook: Path) -> list[ast.stmt]:
    """The statements of a jupytext notebook's `parameters` cell."""
    lines, inside = [], False
    for line in notebook.read_text().splitlines():
        if line.startswith("# %%"):
            if inside:
                break
            inside = 'tags=["parameters"]' in line
            continue
        if inside:
            lines.append(line)
    return ast.parse("\n".join(lines)).body


RUNNER_KEYS = ("results_dir", "notebooks")  # read by the runner, never injected into a notebook


def known_parameters(root: Path) -> set[str]:
    """Every key a profile may hold: the notebooks' parameters, plus the runner's own: `results_dir`, and
    `notebooks` (the numbers of the notebooks the profile runs when `linrec figures` is given no `--only`)."""
    return set(RUNNER_KEYS).union(*(declared_parameters(nb) for nb in notebooks(root)))


def load_params(path: str | Path, root: Path | None = None) -> dict:
    """A parameter profile (flat YAML mapping); a malformed file, an unknown key or a value of the wrong type is one
    line naming the fix.

    With `root` (the project), every key must be a parameter some notebook declares: a typo
    such as `tokenz` would otherwise be ignored and the notebooks would run their defaults. Each value must have the
    type the notebooks declare (`check_types`: the type of its default in the parameters cell, or for a None default
    its entry in `OPTIONAL_TYPES`), so `tokens: lots` stops here, not in a notebook's sixth cell.
    """
    path = Path(path)
    if not path.is_file():
        raise LinrecError(
            f"parameter file {path} not found; profiles live in params/ (default.yaml, smoke.yaml, paper.yaml)"
        )
    try:
        params = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise LinrecError(f"{path}{where}: not valid YAML ({problem}); fix that line") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LinrecError(f"cannot read parameter file {path} ({err}); give a readable YAML file") from None
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise LinrecError(f"{path} must be a YAML mapping of parameter names to values")
    if root is not None:
        check_params(params, root, path)
    return params


def check_params(params: dict, root: Path, path: Path | str) -> None:
    """Every key a parameter some notebook declares, each value of its declared type, the sections well formed
    (`check_types`, `check_nested`); `path` names where the values came from in the one-line error."""
    known = known_parameters(root)
    unknown = sorted(str(k) for k in params if k not in known)
    if unknown:
        raise LinrecError(f"{path}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if "results_dir" in params and not isinstance(params["results_dir"], str):
        raise LinrecError(f"{path}: results_dir must be a string (a folder under the project), fix that line")
    runs = params.get("notebooks")
    if runs is not None and (not isinstance(runs, list) or not all(isinstance(n, str) and n for n in runs)):
        raise LinrecError(f'{path}: notebooks must be a list of notebook numbers as strings, e.g. ["08"]')
    check_types(params, root, path)
    check_nested(params, path)


def parse_overrides(pairs: list[list[str]] | None) -> dict:
    """`-p NAME VALUE` pairs (`linrec figures`) as {name: value}, each VALUE read as papermill reads `-p`: a whole
    number, a number, True/False, None, else the string as given; and, beyond papermill, a YAML list or mapping
    (`-p models "[smollm2-135m]"`, `-p capture "{tokens: 2560}"`)."""
    out = {}
    for name, text in pairs or []:
        out[name] = _override_value(name, text)
    return out


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


def check_nested(params: dict, path: Path) -> None:
    """What `check_types` cannot see: the lists that must not be empty (`NON_EMPTY`), and the sections' own keys and
    values: `capture:` (CaptureConfig's fields, each of its type, the whole a valid capture), `training:`
    (TrainConfig's, likewise) and `cross_pairs:` (pairs of model names). One line naming the fix, at load."""
    for name in NON_EMPTY:
        if name in params and not params[name]:
            raise LinrecError(f"{path}: {name} is empty; give at least one (e.g. {name}: {_example(name)})")
    if "capture" in params:  # its keys and the type of each value, as CaptureConfig declares them
        from linrec.measure.config import CaptureConfig, capture_settings

        settings = capture_settings(params["capture"], where=f"{path}: capture")
        try:
            CaptureConfig("model", seed=params.get("seed", 0), **settings).validate()
        except LinrecError as err:
            raise LinrecError(f"{path}: capture: {err}") from None
    if params.get("training"):
        from linrec.inputs.training import training_settings

        training_settings(params["training"], where=f"{path}: training")
    pairs = params.get("cross_pairs")
    if pairs is not None and not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(m, str) for m in p) for p in pairs
    ):
        raise LinrecError(
            f"{path}: cross_pairs must be a list of [inputs model, FFN model] pairs, e.g. [[gpt2, init:0:gpt2]], or "
            f"null; got {pairs!r}"
        )


def _example(name: str) -> str:
    return {"models": "[smollm2-135m]", "corpora": "[wiki]", "train_variants": "[gelu, swiglu]"}.get(name, "[0]")


def with_output_defaults(params: dict, stem: str) -> dict:
    """`params` with every output path the notebooks write to made explicit: a profile that names none of them
    writes under results/<its name>/ and leaves the README alone. The notebooks' own defaults are the default
    profile's (the repository's results/default, figures/, paper/report.md and README.md, for Run All in Jupyter);
    only a profile that names those paths writes there."""
    out = dict(params)
    out.setdefault("results_dir", f"results/{stem}")
    out.setdefault("figures_dir", f"{out['results_dir']}/figures")
    out.setdefault("report_path", f"{out['results_dir']}/report.md")
    out.setdefault("readme", None)
    return out


def notebooks(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.py"))


def measured_elsewhere(root: Path, profile: str, **here) -> str | None:
    """Why the results of another profile (`params/<profile>.yaml`), which a notebook quotes where this run does not
    compute them, do not apply to this run: the first of `here` (this run's corpus, models, seed, capture settings…)
    that the other profile sets otherwise, in words ("corpus 'wiki', not 'code'"); None when it measured the same.
    A key the other profile leaves out has the notebooks' default, which is the default profile's value. Capture
    settings are compared without `sample_rows` (rows kept change no number the quoted tables hold)."""
    from linrec.measure.config import capture_settings

    default = load_params(root / "params" / "default.yaml")
    other = {**default, **load_params(root / "params" / f"{profile}.yaml")}
    for name, mine in here.items():
        theirs = other.get(name)
        if name == "capture":
            theirs, mine = capture_settings(theirs), capture_settings(mine)
            for key in (k for k in mine if k != "sample_rows" and mine[k] != theirs[k]):
                return f"capture {key} {theirs[key]!r}, not this run's {mine[key]!r}"
            continue
        if theirs != mine:
            return f"{name} {theirs!r}, not this run's {mine!r}"
    return None
