"""Progress bars: tqdm's text bar on a terminal; one line per loop where a bar would only be noise.

Under the notebook runner (`linrec.app.notebooks` sets LINREC_PROGRESS=0 for its kernels) a redrawn bar
would be saved into the executed notebook as kilobytes of carriage-return text, glued to whatever
the cell prints next. There each loop prints one line instead, saying what it does and how many
steps it takes, and prints it on the runner's console (the kernel's own stderr, which it inherits
from `linrec figures`), named by its notebook (LINREC_NOTEBOOK), not into the notebook's saved
output: a loop that runs only when a cache entry is missing (a capture, a curve) would otherwise
make a rerun from the cache save a different notebook than the run that filled it.
"""

from __future__ import annotations

import os
import sys

ENV = "LINREC_PROGRESS"  # "0": no bars, one line per loop, on the console
NOTEBOOK_ENV = "LINREC_NOTEBOOK"  # the notebook a runner's kernel executes: names its console lines


def bars_on() -> bool:
    """Whether progress bars are drawn (LINREC_PROGRESS is not "0")."""
    return os.environ.get(ENV, "").strip() != "0"


def bar(iterable=None, *, desc: str = "", total: int | None = None, disable: bool = False, **kwargs):
    """`tqdm(iterable, desc=…, total=…, disable=…, **kwargs)`; with bars off, a silent tqdm after one printed line
    (`desc: N unit`) for a loop that would have drawn a bar."""
    from tqdm import tqdm

    if not disable and not bars_on():
        n = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        unit = kwargs.get("unit", "it")
        plural = unit if n == 1 else unit + ("es" if unit.endswith(("s", "ch", "sh", "x")) else "s")
        _console(f"{desc}: {n} {plural}" if n is not None else f"{desc} …")
        disable = True
    return tqdm(iterable, desc=desc, total=total, disable=disable, **kwargs)


def write(text: str, file=None) -> None:
    """A line that does not break a bar being drawn (`tqdm.write`); with bars off, a line on the console."""
    from tqdm import tqdm

    if bars_on():
        tqdm.write(text, file=file)
    else:
        _console(text)


def _console(text: str) -> None:
    """One line on the process's own stderr (under the runner: its console, not the notebook's output)."""
    stream = sys.__stderr__ or sys.stderr
    name = os.environ.get(NOTEBOOK_ENV, "").strip()
    print(f"[linrec] {name}: {text}" if name else text, file=stream, flush=True)
