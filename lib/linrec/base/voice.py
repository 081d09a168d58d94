"""How linrec speaks to a Python caller (`linrec.api`, `linrec.analyses.fitted`) rather than to the command line: its
errors and notices in Python's words (`seq_len=2048`, not `--seq-len 2048`), its notices as warnings a caller can
filter (or nothing at all under `progress=False`), and a lower module's plain `LinrecError` raised while the arguments
are checked said as the bad value it is (`LinrecValueError`, also a ValueError).

Notices are said by `linrec.base.progress.notice`, which words them through its `WORDS` hook, then writes them
through `linrec.base.progress.write`; this module wraps that function once (`_routed_write`), and within
`notices(progress)` a notice's line (recorded by the hook) goes to the `linrec.api` logger at INFO and, with
`progress`, becomes a `LinrecWarning` (the capture's cost line and its revision, progress rather than a caveat, are
written beside the progress bars instead). Outside that block (the command line, the notebooks) nothing changes: the
route is a context variable, so another thread's notices are its own.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import warnings

from linrec.base import progress as _progress
from linrec.base.errors import LinrecError, LinrecValueError, LinrecWarning

log = logging.getLogger("linrec.api")

FLAG = re.compile(r"--([a-z]+(?:-[a-z]+)*)(?: (\d+(?:[.,_]\d+)*))?")
# how the notices that report progress, not a caveat, begin: the capture's cost and its revision
# (`linrec.collect.reuse.say_cost`, `Pace`); written beside the progress bars, not warned
PROGRESS = ("capturing ", "measured pace")


def python_words(message: str) -> str:
    """A command-line error said in Python's words: `--seq-len 2048` → `seq_len=2048`, `--tokens` → `tokens`."""
    return FLAG.sub(lambda m: m[1].replace("-", "_") + (f"={m[2]}" if m[2] else ""), message)


@contextlib.contextmanager
def in_python_words():
    """A `LinrecError` raised within the block is raised again in `python_words` (its type kept), and a notice said
    in the block (a short corpus, rows too few) is said in them too."""
    said = _progress.WORDS.set(python_words)
    try:
        yield
    except LinrecError as err:
        raise type(err)(python_words(str(err))) from None
    finally:
        _progress.WORDS.reset(said)


@contextlib.contextmanager
def checking():
    """The checks before a pass: a plain `LinrecError` raised by a lower module's check (a window longer than the
    context, a corpus too small, an unknown device) is a bad argument's value, raised as a `LinrecValueError`."""
    try:
        yield
    except LinrecError as err:
        if type(err) is LinrecError:
            raise LinrecValueError(str(err)) from None
        raise


_ROUTE: contextvars.ContextVar = contextvars.ContextVar("linrec_notices", default=None)
_SAYING: contextvars.ContextVar = contextvars.ContextVar("linrec_notice_said", default=None)
_console_write = getattr(_progress.write, "console", _progress.write)  # the writer before any wrapping


def _routed_write(text: str, file=None) -> None:
    """`linrec.base.progress.write`: within `notices`, the line of a notice being said (`_SAYING`, set as `notice`
    words it) goes where `notices` says; any other line (a memory plan, a bar's line) and anything outside `notices`
    (the command line, the notebooks) to the console as before."""
    route, saying = _ROUTE.get(), _SAYING.get()
    if route is None or saying is None or not text.startswith(saying):
        _console_write(text, file=file)
        return
    _SAYING.set(None)
    route(text)


_routed_write.console = _console_write
if not hasattr(_progress.write, "console"):  # once, whatever reloads this module
    _progress.write = _routed_write


@contextlib.contextmanager
def notices(progress: bool):
    """Within the block each notice (`linrec.base.progress.notice`) goes to the `linrec.api` logger at INFO and,
    with `progress`, is a `LinrecWarning` (a progress line, `PROGRESS`: written beside the progress bars); without,
    nothing is written. A notice is told from other lines by the words hook `notice` calls first
    (`linrec.base.progress.WORDS`): it records the line about to be written."""
    words = _progress.WORDS.get()

    def saying(text: str) -> str:
        said = words(text) if words is not None else text
        _SAYING.set(said)
        return said

    def route(text: str) -> None:
        log.info(text)
        if not progress:
            return
        if text.startswith(PROGRESS):
            _console_write(text)
        else:
            warnings.warn(text, LinrecWarning, stacklevel=2)

    tokens = _ROUTE.set(route), _progress.WORDS.set(saying)
    try:
        yield
    finally:
        _progress.WORDS.reset(tokens[1])
        _ROUTE.reset(tokens[0])


@contextlib.contextmanager
def speaking(progress: bool):
    """`in_python_words` and `notices(progress)` together: how every call of `linrec.api` speaks."""
    with in_python_words(), notices(progress):
        yield
