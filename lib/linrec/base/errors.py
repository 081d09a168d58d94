"""One exception type for every user-facing failure (and its subtypes: a bad argument's value or type, also a
ValueError or TypeError, and a stale results table a reader may step over): its message is one line that names the
fix; and the warning a notice is said as from Python (`LinrecWarning`). And what the machine refuses (a full disk, a
read-only file system, a denied permission), raised or wrapped by a library: found (`os_error`) and said in one line
naming the path and the fix (`refused_line`; `linrec.base.files.writing` turns it into a LinrecError around every
write)."""

from __future__ import annotations

import errno
import os
import re


class LinrecError(RuntimeError):
    """A bad input or an unusable result; `str(err)` is a one-line message that says what to do."""


class LinrecValueError(LinrecError, ValueError):
    """An argument of the right type with a value linrec cannot use (`tokens=2.5`, `blocks=[0, 0]`, `batch_size=0`,
    ids past the model's vocabulary, a model on the meta device): also a ValueError, for code that catches those."""


class LinrecTypeError(LinrecError, TypeError):
    """An argument of the wrong type (`tokens=True`, `blocks=["12"]`, `texts=[None]`, a model name for a model): also a
    TypeError, for code that catches those."""


class LinrecWarning(UserWarning):
    """A notice said on the way (a corpus shorter than asked, train rows too few for the width, documents joined with
    no EOS token between them): a warning, so `warnings.filterwarnings("ignore", category=LinrecWarning)` or
    `warnings.catch_warnings` handle it as any other (`linrec.api`)."""


class StaleTableError(LinrecError):
    """A results table an older linrec wrote (it lacks registered columns): its notebook must run again. Readers that
    can go on without it (a report, a refresh) catch this one; every other table error stays a LinrecError."""


# ---- what the machine refuses: a full disk, a read-only file system, a denied permission --------------------------
# Each errno and the fix it names; `{elsewhere}`: where else to write (`refused_line`'s `elsewhere`).
OS_FIXES = {
    errno.ENOSPC: "the disk is full: free space on it, or write elsewhere ({elsewhere}), and rerun",
    errno.EDQUOT: "the disk quota is used up: free space under it, or write elsewhere ({elsewhere}), and rerun",
    errno.EROFS: "that file system is read-only: write to a writable place instead ({elsewhere})",
    errno.EACCES: "permission denied: make it writable (or readable) for this user, or use another path",
    errno.EPERM: "operation not permitted: make it writable for this user, or use another path",
    errno.EPIPE: "the reader of the output went away: rerun with the output sent to a file",
    errno.EBADF: "the output is closed: rerun with the output sent somewhere (> results.txt, or > /dev/null)",
}
DISK = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)  # named in words in a library's message
ANYWHERE = "$LINREC_CACHE for the cache, TMPDIR for --no-cache, --out, --save or the profile's paths for outputs"
# a library's own exception that wraps the OS error in its text: Rust's io::Error (safetensors, tokenizers) ends in
# "(os error 28)"; a Python OSError quoted in a message reads "[Errno 28] ..."
_WRAPPED = re.compile(r"\(os error (\d+)\)|\[Errno (\d+)\]")


def os_error(err: BaseException | None) -> OSError | None:
    """The OSError of `OS_FIXES` that `err` is or was raised from; else one read off the text of `err` or of what it
    was raised from, where a library wrapped it in an exception of its own (safetensors' SafetensorError "Error while
    serializing: I/O error: No space left on device (os error 28)"; a message holding the strerror of one of them),
    rebuilt as an OSError of that errno with no file name; else None."""
    chain, seen = [], set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in OS_FIXES:
            return err
        chain.append(err)
        err = err.__cause__ or err.__context__
    for e in chain:
        if isinstance(e, LinrecError):  # linrec's own line: what it says is already the fix
            continue
        text = str(e)
        found = [int(a or b) for a, b in _WRAPPED.findall(text)]
        found += [n for n in DISK if os.strerror(n) in text]
        for n in found:
            if n in OS_FIXES:
                return OSError(n, os.strerror(n))
    return None


def refused_line(err: OSError, path: str | os.PathLike | None = None, elsewhere: str = ANYWHERE) -> str:
    """One line for what the machine refused: what, where (the file `err` names, else `path`), and the fix
    (`OS_FIXES`; `elsewhere`: where else to write)."""
    where = err.filename or path
    what = err.strerror or os.strerror(err.errno)
    return f"{what}{f': {where}' if where else ''}; {OS_FIXES[err.errno].format(elsewhere=elsewhere)}"
