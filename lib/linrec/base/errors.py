"""One exception type for every user-facing failure (and its one subtype a reader may step over, a stale results
table): its message is one line that names the fix."""


class LinrecError(RuntimeError):
    """A bad input or an unusable result; `str(err)` is a one-line message that says what to do."""


class StaleTableError(LinrecError):
    """A results table an older linrec wrote (it lacks registered columns): its notebook must run again. Readers that
    can go on without it (a report, a refresh) catch this one; every other table error stays a LinrecError."""
