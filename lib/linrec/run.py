"""Execute the numbered notebooks in order with papermill: one parameter profile in, executed notebooks and figures out.

The jupytext percent-format `notebooks/NN_name.py` files are the source; each is converted to
`.ipynb` in memory and executed with the profile's parameters (only those the notebook's
`parameters` cell declares). Executed notebooks go to `<results_dir>/notebooks/`, figures to
`<figures_dir>/`, both relative to the project root.
"""

from __future__ import annotations

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


def load_params(path: str | Path) -> dict:
    """A parameter profile (flat YAML mapping)."""
    path = Path(path)
    if not path.exists():
        raise LinrecError(f"parameter file {path} not found; profiles live in params/ (default.yaml, smoke.yaml, paper.yaml)")
    params = yaml.safe_load(path.read_text()) or {}
    if not isinstance(params, dict):
        raise LinrecError(f"{path} must be a YAML mapping of parameter names to values")
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
    params = load_params(params_path)
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
                pm.execute_notebook(str(source), str(out), parameters=chosen, kernel_name="python3", cwd=str(root), progress_bar=True)
            except pm.PapermillExecutionError as err:
                raise LinrecError(f"{nb.name} failed in cell {err.exec_count}: {err.ename}: {str(err.evalue).splitlines()[0] if err.evalue else ''} (see {out})") from None
            print(f"[linrec] {nb.name} done in {time.perf_counter() - t0:.0f} s", flush=True)
        done.append(out)
    return done
