"""What a run of `linrec figures` leaves beside the executed notebooks (`results/<profile>/notebooks/`): `run.csv`
(the last full run: wall time, how it ran, what it had to capture), `timings.csv` (where each notebook's time went,
per code cell), and each executed notebook tidied of when and where it ran (`tidy_executed`), so a rerun that
reproduces every number rewrites it byte for byte. `linrec.app.notebooks` writes them as each notebook ends."""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

from linrec.base.files import atomic_file

RUN = "run.csv"  # beside the executed notebooks: the last run's wall time, how it ran, what it had to capture


def record_run(directory: Path, seconds: dict[str, float], wall: float, jobs: int, captures_made: int) -> Path:
    """Write `run.csv` in `directory`: one row for the run that just finished (date, CPUs, torch, jobs, the
    notebooks with their seconds, wall seconds, and how many captures it computed rather than read)."""

    # here, not at the top: the runner's forkserver imports this module and must hold no numpy or torch
    import pandas as pd
    import torch

    row = {
        "date": datetime.date.today().isoformat(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "jobs": jobs,
        "notebooks": " ".join(sorted(seconds)),
        "notebook_seconds": " ".join(f"{seconds[k]:.0f}" for k in sorted(seconds)),
        "wall_seconds": round(wall, 1),
        "captures_made": captures_made,
    }
    path = Path(directory) / RUN
    with atomic_file(path) as tmp:
        pd.DataFrame([row]).to_csv(tmp, index=False)
    return path


TIMINGS = "timings.csv"  # beside the executed notebooks: where each notebook's time went


def cell_timings(executed: str | Path) -> list[dict]:
    """Per code cell of an executed notebook: its number, papermill's recorded duration and its first source line."""
    # here, not at the top: `linrec figures` checks its profile before it imports the notebook tools (~3 s)
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
    # here, not at the top: the runner's forkserver imports this module and must hold no numpy or torch
    import pandas as pd

    path = executed.parent / TIMINGS
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["notebook", "cell", "seconds", "code"])
    new = pd.DataFrame(cell_timings(executed))
    table = pd.concat([old[old["notebook"] != executed.stem], new], ignore_index=True).sort_values(["notebook", "cell"])
    with atomic_file(path) as tmp:
        table.to_csv(tmp, index=False)
    return path


STAGES = "stages.csv"  # beside the executed notebooks: each loop's seconds and model work (linrec.base.stages)


def stages_partial(executed: Path) -> Path:
    """Where the kernel running `executed`'s notebook writes its stages' rows as they end (`STAGES` gathers them)."""
    return Path(executed).parent / f".stages-{Path(executed).stem}.csv"


def record_stages(executed: Path) -> Path | None:
    """Replace this notebook's rows in `stages.csv` beside it by the rows its run wrote (`stages_partial`), keeping
    the other notebooks', and remove the partial file; None where the run wrote none (no loop with a bar ran)."""
    import pandas as pd

    from linrec.base.stages import COLUMNS

    partial, path = stages_partial(executed), Path(executed).parent / STAGES
    if not partial.exists():
        return None
    new = pd.read_csv(partial).assign(notebook=Path(executed).stem)
    old = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=list(COLUMNS))
    table = pd.concat([old[old["notebook"] != Path(executed).stem], new], ignore_index=True)
    table = table.sort_values("notebook", kind="stable")[list(COLUMNS)]
    with atomic_file(path) as tmp:
        table.to_csv(tmp, index=False)
    partial.unlink()
    return path


_ADDRESS = re.compile(r" at 0x[0-9a-f]+>")  # "<pandas.io.formats.style.Styler at 0x7f…>": where it lay in memory
_CLOCK_KEYS = ("start_time", "end_time", "duration")  # papermill's clock readings, in the notebook's and each cell's


def merged_streams(outputs: list) -> list:
    """A cell's outputs with each run of printed text between two other outputs (figures, tables) as one stdout and
    one stderr output, stdout first: how a kernel cut its text into messages, and in which order its two streams'
    messages arrived, depends on when it flushed, so a loaded machine saved the same text in other pieces (the
    rerun test once failed on notebook 03 for this, 2026-11-27). The text and its place beside the figures stay."""
    out, run = [], []

    def flush():
        for name in ("stdout", "stderr"):
            parts = [o for o in run if o["name"] == name]
            if parts:
                out.append(type(parts[0])({**parts[0], "text": "".join(o["text"] for o in parts)}))
        run.clear()

    for o in outputs:
        if o.get("output_type") == "stream":
            run.append(o)
        else:
            flush()
            out.append(o)
    flush()
    return out


def tidy_executed(executed: Path, source: Path, root: Path) -> Path:
    """Drop what records when and where a run happened from an executed notebook, once `record_timings` has read it:
    papermill's start/end times and durations, Jupyter's per-cell `execution` timestamps, and the temporary and
    absolute paths papermill notes (they become the repository-relative source and output). So a rerun that
    reproduces every number rewrites the notebook byte for byte; the seconds stay in `timings.csv` and `run.csv`."""
    # here, not at the top: `linrec figures` checks its profile before it imports the notebook tools (~3 s)
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    meta = nb.metadata.get("papermill", {})
    for k in _CLOCK_KEYS:
        meta.pop(k, None)

    def rel(p: Path) -> str:
        p = Path(p).resolve()
        return str(p.relative_to(root.resolve())) if p.is_relative_to(root.resolve()) else p.name

    if meta:
        meta["input_path"], meta["output_path"] = rel(source), rel(executed)
    for i, cell in enumerate(nb.cells):
        if cell.get("outputs"):
            cell.outputs = merged_streams(cell.outputs)
        cell.id = f"cell-{i}"  # by position: papermill gives the parameters cell it injects a random one
        cell.metadata.pop("execution", None)
        for k in _CLOCK_KEYS:
            cell.metadata.get("papermill", {}).pop(k, None)
        for out in cell.get("outputs", []):  # a rich output's plain-text fallback may be a repr with an address
            plain = out.get("data", {}).get("text/plain")
            if isinstance(plain, str) and len(out["data"]) > 1:
                out["data"]["text/plain"] = _ADDRESS.sub(">", plain)
    with atomic_file(executed) as tmp:
        nbformat.write(nb, str(tmp))
    return executed
