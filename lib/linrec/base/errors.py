"""One exception type for every user-facing failure: its message is one line that names the fix."""


class LinrecError(RuntimeError):
    """A bad input or an unusable result; `str(err)` is a one-line message that says what to do."""
