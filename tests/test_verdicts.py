"""Every summary and claim rule of linrec.claims, on both sides of each threshold, and the results-table
registry."""

from linrec.claims.rules import (
    NOT_TESTABLE,
)
from linrec.outputs.catalog import CATALOG


def test_every_claim_is_not_testable_without_its_tables():
    """Every rule of the catalog, given no tables, says "not run" under its own id."""
    for entry in CATALOG:
        args = [None] * entry.rule.verdict.__code__.co_argcount
        v = entry.rule(*args)
        assert v.claim == entry.id and v.verdict == NOT_TESTABLE and "not run" in v.reason
