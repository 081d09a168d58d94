"""Progress bars: tqdm's text bar on a terminal; one line per loop on the console wherever a notebook runs.

In a notebook a redrawn bar would be saved into the executed notebook as kilobytes of carriage-return text, glued
to whatever the cell prints next, and a loop that runs only when a cache entry is missing (a capture, a curve)
would make a rerun from the cache save a different notebook than the run that filled it. So in any Jupyter kernel
(`linrec figures`, papermill, nbconvert, Jupyter Lab alike) each loop prints one line instead, saying what it does
and how many steps it takes, and prints it on the console of the process that started the kernel (the terminal of
`linrec figures`, of papermill or nbconvert, of `make lab`), never into the notebook's saved output. The line names
its notebook where the kernel knows it (LINREC_NOTEBOOK, set by the runner; JPY_SESSION_NAME, set by Jupyter's
server). LINREC_PROGRESS=0 asks for the same anywhere (the runner sets it); LINREC_PROGRESS=1 draws bars even in
a kernel.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm

ENV = "LINREC_PROGRESS"  # "0": no bars, one line per loop, on the console; "1": bars, even in a notebook
NOTEBOOK_ENV = "LINREC_NOTEBOOK"  # the notebook a runner's kernel executes: names its console lines
SESSION_ENV = "JPY_SESSION_NAME"  # the notebook's path, which Jupyter's server gives the kernels it starts


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (its cells' output is a notebook's)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is not None and hasattr(shell, "kernel")


def bars_on() -> bool:
    """Whether progress bars are drawn: LINREC_PROGRESS "1" yes, "0" no, else everywhere but in a Jupyter kernel."""
    asked = os.environ.get(ENV, "").strip()
    if asked in ("0", "1"):
        return asked == "1"
    return not in_kernel()


def bar(iterable=None, *, desc: str = "", total: int | None = None, disable: bool = False, **kwargs):
    """`tqdm(iterable, desc=…, total=…, disable=…, **kwargs)`; with bars off, a silent tqdm after one printed line
    (`desc: N unit`) for a loop that would have drawn a bar."""

    if not disable and not bars_on():
        n = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        unit = kwargs.get("unit", "it")
        plural = unit if n == 1 else unit + ("es" if unit.endswith(("s", "ch", "sh", "x")) else "s")
        _console(f"{desc}: {n} {plural}" if n is not None else f"{desc} …")
        disable = True
    return tqdm(iterable, desc=desc, total=total, disable=disable, **kwargs)


def write(text: str, file=None) -> None:
    """A line that does not break a bar being drawn (`tqdm.write`); with bars off, a line on the console."""

    if bars_on():
        tqdm.write(text, file=file)
    else:
        _console(text)


def notice(text: str) -> None:
    """A line said before a long step starts (a capture that is not cached): on the console, as `write`, and in a
    notebook run outside the runner (Jupyter Lab, nbconvert, papermill) also in the cell's output, where its reader
    looks. Under the runner it stays on the console: a line printed only on a cache miss would make the executed
    notebook of a run that computed differ from a rerun that read the cache (Lab saves no outputs into the .py)."""
    write(text, file=sys.stderr)  # on a terminal, beside a command's table on stdout, not in it
    if in_kernel() and not os.environ.get(NOTEBOOK_ENV, "").strip() and os.environ.get(ENV, "").strip() != "0":
        print(text, file=sys.stderr, flush=True)


def _name() -> str:
    name = os.environ.get(NOTEBOOK_ENV, "").strip()
    session = os.environ.get(SESSION_ENV, "").strip()
    return name or (os.path.splitext(os.path.basename(session))[0] if session else "")


def _console(text: str) -> None:
    """One line on the console of the process that started this one, never into a notebook's output.

    A kernel that forwards its file descriptors into the notebook (ipykernel's default, under papermill, nbconvert
    and Lab) has pointed fd 2 at a pipe; its `sys.stderr.fileno()` is then the copy it kept of the original, the
    console. Under the runner (its kernels keep their file descriptors) and outside a kernel, fd 2 is the console."""
    name = _name()
    line = (f"[linrec] {name}: {text}" if name else text) + "\n"
    if in_kernel():
        try:
            os.write(sys.stderr.fileno(), line.encode())
            return
        except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is both of the first two
            pass
    stream = sys.__stderr__ or sys.stderr
    print(line, end="", file=stream, flush=True)
