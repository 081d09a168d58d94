"""Execute the numbered notebooks in order with papermill: one parameter profile in, executed notebooks and figures out.

The jupytext percent-format `notebooks/NN_name.py` files are the source; each is converted to
`.ipynb` in memory and executed with the profile's parameters (only those the notebook's
`parameters` cell declares). Executed notebooks go to `<results_dir>/notebooks/`, figures to
`<figures_dir>/`, both relative to the project root.
"""

from __future__ import annotations

import ast
import logging
import tempfile
import time
from pathlib import Path

import yaml

from linrec.errors import LinrecError

log = logging.getLogger(__name__)


def project_root(start: str | Path | None = None) -> Path:
    """The directory holding `pyproject.toml`, searching upward from `start` (default: cwd)."""
    here = Path(start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "pyproject.toml").exists() and (d / "notebooks").is_dir():
            return d
    raise LinrecError(f"no linrec project above {here}; run from a clone of the repository")


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned in a jupytext notebook's `parameters` cell (what papermill may set)."""
    lines, inside = [], False
    for line in notebook.read_text().splitlines():
        if line.startswith("# %%"):
            if inside:
                break
            inside = 'tags=["parameters"]' in line
            continue
        if inside:
            lines.append(line)
    names = set()
    for node in ast.parse("\n".join(lines)).body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def known_parameters(root: Path) -> set[str]:
    """Every key a profile may hold: the notebooks' parameters, plus `results_dir` (used by the runner itself)."""
    return {"results_dir"}.union(*(declared_parameters(nb) for nb in notebooks(root)))


def load_params(path: str | Path, root: Path | None = None) -> dict:
    """A parameter profile (flat YAML mapping); a malformed file or an unknown key is one line naming the fix.

    With `root` (the project), every key must be a parameter some notebook declares: a typo
    such as `tokenz` would otherwise be ignored and the notebooks would run their defaults.
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
        known = known_parameters(root)
        unknown = sorted(str(k) for k in params if k not in known)
        if unknown:
            raise LinrecError(f"{path}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return params


def notebooks(root: Path) -> list[Path]:
    return sorted((root / "notebooks").glob("[0-9][0-9]_*.py"))


def run_notebooks(params_file: str | Path, only: list[str] | None = None, root: Path | None = None) -> list[Path]:
    """Execute every numbered notebook (or those whose names start with one of `only`) under `params_file`."""
    import jupytext
    import nbformat
    import papermill as pm

    root = root or project_root()
    params_path = Path(params_file) if Path(params_file).is_absolute() else root / params_file
    params = load_params(params_path, root)
    results = root / params.get("results_dir", f"results/{params_path.stem}")
    (results / "notebooks").mkdir(parents=True, exist_ok=True)
    done = []
    selected = [nb for nb in notebooks(root) if not only or any(nb.name.startswith(o) for o in only)]
    if not selected:
        raise LinrecError(f"no notebooks match {only}; available: {', '.join(nb.stem for nb in notebooks(root))}")
    for nb in selected:
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / f"{nb.stem}.ipynb"
            nbformat.write(jupytext.read(nb), source)
            declared = pm.inspect_notebook(str(source))
            chosen = {k: v for k, v in params.items() if k in declared}
            out = results / "notebooks" / f"{nb.stem}.ipynb"
            t0 = time.perf_counter()
            print(f"[linrec] {nb.name} → {out}", flush=True)
            try:
                pm.execute_notebook(
                    str(source), str(out), parameters=chosen, kernel_name="python3", cwd=str(root), progress_bar=True
                )
            except pm.PapermillExecutionError as err:
                raise LinrecError(
                    f"{nb.name} failed in cell {err.exec_count}: {err.ename}: "
                    f"{str(err.evalue).splitlines()[0] if err.evalue else ''} (see {out})"
                ) from None
            print(f"[linrec] {nb.name} done in {time.perf_counter() - t0:.0f} s", flush=True)
        record_timings(out)
        done.append(out)
    return done


TIMINGS = "timings.csv"  # beside the executed notebooks: where each notebook's time went


def cell_timings(executed: str | Path) -> list[dict]:
    """Per code cell of an executed notebook: its number, papermill's recorded duration and its first source line."""
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    rows = []
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        meta = cell.get("metadata", {}).get("papermill", {})
        first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
        rows.append({"notebook": Path(executed).stem, "cell": i, "seconds": meta.get("duration"), "code": first[:80]})
    return rows


def record_timings(executed: Path) -> Path:
    """Replace this notebook's rows in `timings.csv` beside it (one row per code cell), keeping the other notebooks'."""
    import pandas as pd

    from linrec.files import atomic_file

    path = executed.parent / TIMINGS
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["notebook", "cell", "seconds", "code"])
    new = pd.DataFrame(cell_timings(executed))
    table = pd.concat([old[old["notebook"] != executed.stem], new], ignore_index=True).sort_values(["notebook", "cell"])
    with atomic_file(path) as tmp:
        table.to_csv(tmp, index=False)
    return path
