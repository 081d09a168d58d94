"""linrec.base.errors: what the machine refuses is found whether a library raised it as an OSError or wrapped it in
an exception of its own (safetensors, tokenizers, a message quoting the errno), and said in one line (issue 60)."""

import errno

import pytest
from safetensors import SafetensorError

from linrec.base.errors import LinrecError, os_error, refused_line


def _raised_from(inner: BaseException, outer: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as e:
            raise outer from e
    except BaseException as err:
        return err


@pytest.mark.parametrize(
    "err, want",
    [
        (OSError(errno.ENOSPC, "No space left on device"), errno.ENOSPC),
        (_raised_from(OSError(errno.EROFS, "Read-only file system"), RuntimeError("save failed")), errno.EROFS),
        # what safetensors raised on a full disk under `linrec train` (issue 60): no OSError anywhere in the chain
        (SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"), errno.ENOSPC),
        (Exception("No space left on device (os error 28)"), errno.ENOSPC),  # tokenizers' save
        (RuntimeError("could not write: [Errno 122] Disk quota exceeded"), errno.EDQUOT),
        (_raised_from(ValueError("Read-only file system"), RuntimeError("writer stopped")), errno.EROFS),
        (RuntimeError("open failed: Permission denied"), errno.EACCES),
    ],
)
def test_a_refusal_is_found_raised_or_wrapped(err, want):
    found = os_error(err)
    assert isinstance(found, OSError) and found.errno == want
    line = refused_line(found, "/data/x.npz")
    assert "\n" not in line and "/data/x.npz" in line and line.startswith(found.strerror)


@pytest.mark.parametrize(
    "err",
    [
        RuntimeError("unexpected pos 576 vs 534"),  # says no why: only a look at the disk can tell (files.writing)
        ValueError("shape mismatch (os error in the name of a variable)"),
        OSError(errno.EIO, "Input/output error"),  # not one a user can fix by writing elsewhere
        LinrecError("cache directory /x is not writable (Permission denied); set $LINREC_CACHE"),  # linrec's own line
        None,
    ],
)
def test_nothing_else_is_taken_for_a_refusal(err):
    assert os_error(err) is None


def test_the_line_names_the_path_and_where_else_to_write():
    full = OSError(errno.ENOSPC, "No space left on device")
    assert refused_line(full) == (
        "No space left on device; the disk is full: free space on it, or write elsewhere ($LINREC_CACHE for the "
        "cache, TMPDIR for --no-cache, --out, --save or the profile's paths for outputs), and rerun"
    )
    named = OSError(errno.EROFS, "Read-only file system", "/mnt/ro/t.csv")
    assert refused_line(named, "/elsewhere", elsewhere="--out") == (
        "Read-only file system: /mnt/ro/t.csv; that file system is read-only: write to a writable place instead (--out)"
    )
