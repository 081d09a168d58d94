"""linrec.base.voice: a notice said within `notices` is a LinrecWarning (with progress) or only a log record (without),
in Python's words; every other line, and every notice outside the block or in another thread, goes where it went
before; errors keep their type in Python's words, and a lower module's plain LinrecError raised while checking is a
LinrecValueError."""

import logging
import threading
import warnings

import pytest

from linrec.base import progress
from linrec.base.errors import LinrecError, LinrecTypeError, LinrecValueError, LinrecWarning, StaleTableError
from linrec.base.voice import checking, in_python_words, notices, python_words, speaking


@pytest.fixture
def console(monkeypatch):
    """What reaches the console writer (the one `progress.write` wraps), line by line."""
    from linrec.base import voice

    lines = []
    monkeypatch.setattr(voice, "_console_write", lambda text, file=None: lines.append(text))
    return lines


def test_a_notice_is_a_warning_in_pythons_words_with_progress(console):
    """Issue 89 item 5: notices went to raw stderr and could not be filtered. Planted: `notices` not routing (the
    wrapper left out) puts the line on the console and raises no warning."""
    with pytest.warns(LinrecWarning, match=r"raise tokens to about 896$"), speaking(True):
        progress.notice("too few train rows; raise --tokens to about 896")
    assert console == []


def test_without_progress_a_notice_is_only_a_log_record(console, caplog):
    """Issue 89 item 5: `progress=False` did not silence notices. Now nothing is written and nothing warned; a handler
    on the `linrec.api` logger gets the line at INFO."""
    with caplog.at_level(logging.INFO, logger="linrec.api"), warnings.catch_warnings():
        warnings.simplefilter("error")
        with notices(False):
            progress.notice("corpus 'texts' holds only 10 windows")
    assert console == [] and [r.getMessage() for r in caplog.records] == ["corpus 'texts' holds only 10 windows"]


def test_progress_lines_and_other_writes_stay_on_the_console(console):
    """The capture's cost line and its revision are progress, not caveats: beside the bars, not warned; a line
    written directly (`progress.write`: the memory plan) is no notice at all and is written as before, even inside
    the block."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with notices(True):
            progress.notice("capturing m on texts (2,048 tokens): about 1 s")
            progress.notice("measured pace: 0.1 s a batch")
            progress.write("memory plan: 2 blocks")
    assert console == ["capturing m on texts (2,048 tokens): about 1 s", "measured pace: 0.1 s a batch",
                       "memory plan: 2 blocks"]  # fmt: skip


def test_outside_the_block_and_in_another_thread_nothing_changes(console):
    """The route is a context variable: the command line's notices, and another thread's during an API call, go to
    the console as they did."""
    progress.notice("said by the command line, --tokens")
    other = []
    with warnings.catch_warnings(record=True) as caught, notices(True):
        warnings.simplefilter("always")
        thread = threading.Thread(target=lambda: (progress.notice("said by another thread"), other.append(1)))
        thread.start()
        thread.join()
    assert console == ["said by the command line, --tokens", "said by another thread"] and other == [1]
    assert not caught


def test_errors_keep_their_type_in_pythons_words_and_checks_are_value_errors():
    with pytest.raises(LinrecTypeError, match=r"^seq_len=64 is wrong$"), in_python_words():
        raise LinrecTypeError("--seq-len 64 is wrong")
    with pytest.raises(StaleTableError), in_python_words():
        raise StaleTableError("stale")
    with pytest.raises(LinrecValueError) as caught, checking():
        raise LinrecError("seq_len=128 is longer than the context")
    assert isinstance(caught.value, ValueError) and str(caught.value) == "seq_len=128 is longer than the context"
    with pytest.raises(LinrecTypeError), checking():  # a subtype is already what it is
        raise LinrecTypeError("texts[0] is None")
    assert python_words("use --seq-len 1024 or less, or raise --tokens") == "use seq_len=1024 or less, or raise tokens"
