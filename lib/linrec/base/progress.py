"""Progress bars: tqdm's text bar on a terminal; in Jupyter Lab, tqdm's notebook bar in the cell; one line per loop
on the console wherever a notebook is executed into a saved file.

A notebook someone is watching (a kernel Jupyter's server started, for Lab or Notebook: the server gives it
JPY_SESSION_NAME) shows its bars in the cell that runs the loop (`tqdm.auto`: a widget, or tqdm's text bar where
ipywidgets is absent), with the lines said before a long step (`notice`) above them: Run All on a fresh clone
computes its captures there, and its reader sees what, how long and how far. Nothing of it is saved: Lab writes no
outputs into the jupytext `.py`.

A notebook executed into a file (`linrec figures`, papermill, nbconvert) would save a redrawn bar as kilobytes of
carriage-return text, glued to whatever the cell prints next, and a loop that runs only when a cache entry is missing
(a capture, a curve) would make a rerun from the cache save a different notebook than the run that filled it. So in
any other Jupyter kernel each loop prints one line instead, saying what it does and how many steps it takes, on the
console of the process that started the kernel (the terminal of `linrec figures`, of papermill or nbconvert), never
into the notebook's saved output. The line names its notebook where the kernel knows it (LINREC_NOTEBOOK, set by the
runner; JPY_SESSION_NAME). LINREC_PROGRESS=0 asks for the same anywhere (the runner sets it, with LINREC_NOTEBOOK, so
a Jupyter server's session name never turns its bars on); LINREC_PROGRESS=1 draws bars even in a kernel (in its cells).
"""

from __future__ import annotations

import contextvars
import logging
import os
import sys
import warnings
from collections.abc import Callable

from tqdm import tqdm

from linrec.base.stages import timed

ENV = "LINREC_PROGRESS"  # "0": no bars, one line per loop, on the console; "1": bars, even in a kernel's cells
NOTEBOOK_ENV = "LINREC_NOTEBOOK"  # the notebook a runner's kernel executes: names its console lines
SESSION_ENV = "JPY_SESSION_NAME"  # the notebook's path, which Jupyter's server gives the kernels it starts


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (its cells' output is a notebook's)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is not None and hasattr(shell, "kernel")


def _asked() -> str:
    return os.environ.get(ENV, "").strip()


def in_runner() -> bool:
    """Whether this kernel executes a notebook for `linrec figures` (which names it in LINREC_NOTEBOOK)."""
    return bool(os.environ.get(NOTEBOOK_ENV, "").strip())


def watched() -> bool:
    """Whether this process is a kernel whose cells someone watches as they run: one Jupyter's server started (Lab,
    Notebook: JPY_SESSION_NAME) outside the runner with LINREC_PROGRESS not "0", or any kernel with it "1"."""
    asked = _asked()
    if not in_kernel() or asked == "0":
        return False
    return asked == "1" or (not in_runner() and bool(os.environ.get(SESSION_ENV, "").strip()))


def bars_on() -> bool:
    """Whether progress bars are drawn: LINREC_PROGRESS "1" yes, "0" no, else outside a Jupyter kernel and in a
    watched one (`watched`: Lab's, in the cell), never in a kernel executing a notebook into a file."""
    asked = _asked()
    if asked in ("0", "1"):
        return asked == "1"
    return not in_kernel() or watched()


def bar_class():
    """The tqdm that draws a bar here: `tqdm.auto`'s in a watched kernel (a widget in the cell where ipywidgets is
    installed, else the text bar, into the cell too), else tqdm's text bar."""
    if not watched():
        return tqdm
    with warnings.catch_warnings():  # tqdm.auto warns that its notebook bar is "experimental", and where ipywidgets
        warnings.simplefilter("ignore")  # is missing that it falls back to the text bar: both fine here
        from tqdm.auto import tqdm as auto
    return auto


def bar(iterable=None, *, desc: str = "", total: int | None = None, disable: bool = False, **kwargs):
    """`tqdm(iterable, desc=…, total=…, disable=…, **kwargs)` (`bar_class`: in a watched notebook, its cell's bar);
    with bars off, a silent tqdm after one printed line (`desc: N unit`) for a loop that would have drawn a bar."""

    if not disable and not bars_on():
        n = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        unit = kwargs.get("unit", "it")
        plural = unit if n == 1 else unit + ("es" if unit.endswith(("s", "ch", "sh", "x")) else "s")
        _console(f"{desc}: {n} {plural}" if n is not None else f"{desc} …")
        disable = True
    if in_kernel():  # tqdm's text bar (where ipywidgets is absent) on stdout: a cell paints stderr pink
        kwargs.setdefault("file", sys.stdout)
    made = (tqdm if disable else bar_class())(iterable, desc=desc, total=total, disable=disable, **kwargs)
    return timed(made, desc, kwargs.get("unit", "it"))  # where a runner records stages (linrec.base.stages)


def write(text: str, file=None) -> None:
    """A line that does not break a bar being drawn (`tqdm.write`; in a watched notebook, into the cell); with bars
    off, a line on the console."""

    if bars_on():
        bar_class().write(text, file=sys.stdout if in_kernel() else file)  # a cell paints stderr pink: stdout there
    else:
        _console(text)


# how a notice's words are said where the caller is not the command line: `linrec.api` sets `python_words` here, so
# "raise --tokens to about 896" reads "raise tokens to about 896" there (None: as written)
WORDS: contextvars.ContextVar[Callable[[str], str] | None] = contextvars.ContextVar("linrec_words", default=None)


def notice(text: str, in_notebook: str = "") -> None:
    """A line said before a long step starts (a capture that is not cached): on the console, as `write`, and in a
    notebook run outside the runner (Jupyter Lab, nbconvert, papermill) in the cell's output, where its reader looks,
    followed there by `in_notebook` (words for a notebook's reader: the quicker way to the same result). Under the
    runner it stays on the console: a line printed only on a cache miss would make the executed notebook of a run that
    computed differ from a rerun that read the cache (Lab saves no outputs into the .py)."""
    if (reword := WORDS.get()) is not None:
        text = reword(text)
    cell = in_kernel() and not in_runner() and _asked() != "0"
    shown = text + (f" — {in_notebook}" if cell and in_notebook else "")
    if watched():  # the cell is where bars and lines go: once, there, on stdout (a cell paints stderr pink)
        write(shown, file=sys.stdout)
        return
    write(text, file=sys.stderr)  # on a terminal, beside a command's table on stdout, not in it
    if cell:
        print(shown, file=sys.stdout, flush=True)


class _CellHandler(logging.Handler):
    """linrec's warnings in a notebook's cell: one plain line on stdout (the cell's own text), not on stderr, which
    Jupyter paints pink as if it were an error; what a warning says is information for the reader."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stdout, flush=True)
        except Exception:  # noqa: BLE001 — logging's own rule: a failed emit must not raise
            self.handleError(record)


def log_to_cells() -> None:
    """In a Jupyter kernel, route the `linrec` logger's warnings to the cell's stdout as plain lines (`_CellHandler`),
    once; elsewhere (a terminal) logging keeps its own stderr. Called when this module is first imported, which every
    notebook's first linrec import does."""
    logger = logging.getLogger("linrec")
    if not in_kernel() or any(isinstance(h, _CellHandler) for h in logger.handlers):
        return
    handler = _CellHandler(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.propagate = False


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


def _one_line(err) -> list[str]:
    """A LinrecError as IPython shows it in a watched notebook: its message in one line, as the command line says it
    (`linrec: error: …`), not a traceback through linrec's frames (issue 90: a bad value in Lab showed three)."""
    return [f"linrec: error: {' '.join(str(err).split())}"]


def errors_in_one_line() -> None:
    """In a notebook someone watches (`watched`: Lab), a LinrecError (a bad value, a missing file: its message names
    the fix) is shown as one line (IPython's `set_custom_exc`; still an error, so the cell fails). Anything else keeps
    its traceback, and a kernel executing into a file (the runner, papermill) keeps them all."""
    if not watched():
        return
    from IPython import get_ipython

    from linrec.base.errors import LinrecError

    def one_line(shell, etype, value, tb, tb_offset=None):
        stb = _one_line(value)
        shell._showtraceback(etype, value, stb)  # the kernel's error message: ename, evalue and this one line
        return stb

    get_ipython().set_custom_exc((LinrecError,), one_line)


log_to_cells()  # in a kernel: linrec warnings as plain lines in the cell
errors_in_one_line()
