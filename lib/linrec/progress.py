"""Progress bars: tqdm's text bar on a terminal; one line per loop where a bar would only be noise.

Under the notebook runner (`linrec.figures` sets LINREC_PROGRESS=0 for its kernels) a redrawn bar
would be saved into the executed notebook as kilobytes of carriage-return text, glued to whatever
the cell prints next. There each loop prints one line instead, saying what it does and how many
steps it takes, and the runner reports the notebook's stage on the console.
"""

from __future__ import annotations

import os
import sys

ENV = "LINREC_PROGRESS"  # "0": no bars, one line per loop


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
        print(f"{desc}: {n} {plural}" if n is not None else f"{desc} …", file=sys.stdout)
        disable = True
    return tqdm(iterable, desc=desc, total=total, disable=disable, **kwargs)


def write(text: str, file=None) -> None:
    """A line that does not break a bar being drawn (`tqdm.write`)."""
    from tqdm import tqdm

    tqdm.write(text, file=file)
