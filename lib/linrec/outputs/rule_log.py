"""Rules frozen: a short hash of each claim's rule (`rule_hash`), recorded with the results it judged (table
`rule_hashes` in each results folder, `record`), every change of a rule's hash after results exist appended to that
folder's `rule_changes` with the verdict before and after, and `paper/rules-changelog.md` written from every results
folder's record (`changelog`, `write_changelog`). Notebook 09 and `linrec report` record and write both
(`linrec.outputs.report.publish`); the report prints each rule's hash under its words.

What goes into a rule's hash (SHA-256 of the parts below, one per line; its first `HASH_DIGITS` hex digits):
- its id and the tables it reads (`Rule.reads`);
- its thresholds, each name and value (`repr`): a threshold planted (`Rule.planted`) changes the hash;
- its words and what would change its verdict, as its thresholds build them (`Rule.words`, `Rule.change`);
- its code: the verdict function, the verdict functions it `joins` (claim 2a: the seeds experiment's and the zoo's),
  and every function or class of `linrec.claims` that they name, and that those name in turn, each parsed and
  written back by `ast.unparse` with its docstring left out, so a comment, a docstring or the formatting does not
  move the hash and a change to what the code does does; and every constant (a number, a string, a tuple, list or
  dict of them) those functions name, by value.
Not in it: the code below `linrec.claims` (the statistics and intervals of `linrec.analyses` and `linrec.stats`: they
change the numbers a rule reads, not the rule) and the sentence the report writes (`linrec.outputs`). Nothing in it
depends on the run, the machine, the path of the checkout or Python's string hashing, so the hash is the same in
every run and on every machine with the same Python minor version (`ast.unparse` may spell code differently in
another; the project's environment fixes one, `pyproject.toml`). A record's "same tables" (`tables_hash`) covers the
tables the rule `reads` in that folder; the joined verdicts' tables (the seeds experiment's, the zoo's) sit in
folders of their own and are not in it.
"""

from __future__ import annotations

import ast
import datetime as _dt
import functools
import hashlib
import importlib
import inspect
import sys
import textwrap
from dataclasses import fields
from pathlib import Path

import pandas as pd

from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file
from linrec.base.registry import TABLES
from linrec.base.tables import load_table, save_table, table_path
from linrec.claims.rules import Rule
from linrec.outputs import catalog
from linrec.outputs.claim_text import Said

HASH_DIGITS = 8  # the short hash the report prints
HASHES, CHANGES = "rule_hashes", "rule_changes"  # the record's tables in each results folder (notebook 09)
CHANGELOG = "paper/rules-changelog.md"  # written from every results folder's record, relative to the checkout
SCRATCH = ("smoke",)  # results/smoke/: the tiny test profile's git-ignored folder, never in the changelog
RULE_PACKAGE = "linrec.claims"  # the code a rule's hash follows
SIMPLE = (int, float, str, bool, type(None))  # constants hashed by value


def normalised(source: str) -> str:
    """`source` (a function or class definition) as `ast.unparse` writes it back, docstrings left out: the same text
    for two sources that differ only in comments, docstrings or formatting."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                    str):  # fmt: skip
                node.body = node.body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _simple(value) -> bool:
    if isinstance(value, dict):  # a table of simple values (which column is a floor, a predictor's sign)
        return all(_simple(k) and _simple(v) for k, v in value.items())
    return isinstance(value, SIMPLE) or (isinstance(value, (tuple, list)) and all(_simple(v) for v in value))


def _by_value(value) -> str:
    return repr(sorted(value.items(), key=lambda kv: repr(kv[0]))) if isinstance(value, dict) else repr(value)


def rule_code(rule: Rule) -> str:
    """The code a rule's hash covers (see the module's docstring): its verdict function, those it `joins`, and every
    function or class of `linrec.claims` reached from them by name, each `normalised`, in name order, then the
    simple constants they name, by value."""
    joined = []
    for name in rule.joins:
        if not name.startswith(RULE_PACKAGE + "."):
            raise LinrecError(f"claim {rule.id}: joins names {name}, outside {RULE_PACKAGE}; a rule joins rules")
        module, _, function = name.rpartition(".")
        joined.append(getattr(importlib.import_module(module), function))
    return _code_from((rule.verdict, *joined))


@functools.cache
def _code_from(roots: tuple) -> str:  # the same for every threshold set: read once per set of roots and process
    code, constants, todo = {}, {}, list(roots)
    while todo:
        obj = todo.pop()
        key = f"{obj.__module__}.{obj.__qualname__}"
        if key in code:
            continue
        try:
            source = normalised(inspect.getsource(obj))
        except (OSError, TypeError, SyntaxError):  # no source to read (made at run time): its name alone
            code[key] = key
            continue
        code[key] = source
        names = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        space = getattr(obj, "__globals__", None) or vars(sys.modules[obj.__module__])
        for name in sorted(names):
            if name not in space:
                continue
            value = space[name]
            if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__.startswith(RULE_PACKAGE):
                todo.append(value)
            elif _simple(value):
                constants[name] = _by_value(value)
    return "\n\n".join([*(code[k] for k in sorted(code)), *(f"{k} = {v}" for k, v in sorted(constants.items()))])


def rule_text(rule: Rule) -> str:
    """Everything a rule's hash is taken of, one part per line (see the module's docstring)."""
    thresholds = [f"{f.name} = {getattr(rule.thresholds, f.name)!r}" for f in fields(rule.thresholds)]
    return "\n".join([f"id = {rule.id!r}", f"reads = {tuple(rule.reads)!r}", *thresholds, f"says = {rule.words}",
                      f"change = {rule.change}", rule_code(rule)])  # fmt: skip


def rule_hash(rule: Rule) -> str:
    """The rule's short hash: the first `HASH_DIGITS` hex digits of the SHA-256 of `rule_text`."""
    return hashlib.sha256(rule_text(rule).encode()).hexdigest()[:HASH_DIGITS]


def tables_hash(rule: Rule, folder: str | Path) -> str:
    """A short hash of the tables `rule` reads in results folder `folder`, as files (an absent one counts as absent):
    whether a rule's change met the same tables as the verdict before it."""
    h = hashlib.sha256()
    for name in rule.reads:
        path = table_path(name, folder)
        h.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"absent") + b"\0")
    return h.hexdigest()[:HASH_DIGITS]


def measured_models(folder: str | Path) -> str:
    """The models results folder `folder` measured, in its order, space-separated (its `r2_lin` table's; "" where
    there is none): what a record compares when a verdict moves under the same rule."""
    t = load_table("r2_lin", folder)
    return "" if t is None else " ".join(dict.fromkeys(str(m) for m in t["model"]))


def _why(was: dict, now: dict) -> str:
    """Why a verdict moved under the same rule, from two records of one claim: the models measured, else the tables."""
    before, after = str(was.get("models") or ""), now["models"]
    if before and before != after:
        gone, new = [m for m in before.split() if m not in after.split()], [m for m in after.split() if m not in before]
        said = [f"{', '.join(gone)} no longer measured" if gone else "", f"{', '.join(new)} added" if new else ""]
        return "the evidence changed: " + "; ".join(x for x in said if x)
    if str(was["tables_hash"]) != now["tables_hash"]:
        return "the evidence changed: the tables the rule reads were rewritten"
    return (
        "the evidence changed: neither the rule nor the tables it reads here moved (a joined experiment's "
        "folder, or the statistics below the rule, did)"
    )


def record(folder: str | Path, claims: list[Said], today: str | None = None) -> pd.DataFrame:
    """Record today's rules with the verdicts they gave on the tables of results folder `folder` (`claims`: the
    catalog's, judged there): table `rule_hashes` (claim, rule_hash, verdict, tables_hash, recorded: the date its
    hash, or under the same hash its verdict, was first recorded there, models: `measured_models`) rewritten, and
    appended to `rule_changes` (claim, recorded, hash_before, hash_after, verdict_before: the verdict last recorded,
    verdict_after, tables: "same" or "changed" since then, why): each claim whose hash differs from the one recorded
    before (why "the rule changed"), and each whose verdict moved under the same hash (hash_before = hash_after: the
    evidence changed, e.g. a model dropped from the profile; why says what, `_why`). Returns the rows appended."""
    today = today or _dt.date.today().isoformat()
    before = load_table(HASHES, folder)
    old = {} if before is None else {str(e["claim"]): e for e in before.to_dict("records")}
    models = measured_models(folder)
    rows, changed = [], []
    for c in claims:
        rule = catalog.rule(c.number)
        now = {"claim": str(c.number), "rule_hash": rule_hash(rule), "verdict": c.verdict,
               "tables_hash": tables_hash(rule, folder), "recorded": today, "models": models}  # fmt: skip
        was = old.get(now["claim"])
        if was is not None and (str(was["rule_hash"]) != now["rule_hash"] or str(was["verdict"]) != c.verdict):
            same_rule = str(was["rule_hash"]) == now["rule_hash"]
            changed.append({"claim": now["claim"], "recorded": today, "hash_before": str(was["rule_hash"]),
                            "hash_after": now["rule_hash"], "verdict_before": str(was["verdict"]),
                            "verdict_after": c.verdict,
                            "tables": "same" if str(was["tables_hash"]) == now["tables_hash"] else "changed",
                            "why": _why(was, now) if same_rule else "the rule changed"})  # fmt: skip
        elif was is not None:
            now["recorded"] = str(was["recorded"])  # the same rule and verdict: recorded since then
        rows.append(now)
    log = load_table(CHANGES, folder)
    new = pd.DataFrame(changed, columns=list(TABLES[CHANGES].columns))
    frames = [t for t in (log, new) if t is not None and len(t)]
    save_table(pd.concat(frames, ignore_index=True) if frames else new, CHANGES, folder)
    save_table(pd.DataFrame(rows), HASHES, folder)
    return new


BEFORE_THE_RECORD = (
    "The rules of claims 2b, 5, 6b and 7b were changed between audits after their data had been seen (issue 64). "
    "That history predates this record and was not captured: no rule hash was kept before it, and the verdicts "
    "before and after those changes are not reconstructed here (the code's history is in git). The record starts "
    "with the hashes stored at its first write, listed above."
)


def changelog(root: str | Path) -> str:
    """`paper/rules-changelog.md`'s text, from the record of every results folder under `root/results` that holds
    one (`record`): today's rules with their hashes and the verdict each folder last recorded, every change of a
    rule's hash after results existed (newest first), and what happened before the record."""
    root = Path(root)
    folders = sorted(p for p in (root / "results").iterdir() if table_path(HASHES, p).is_file()
                     and p.name not in SCRATCH) if (root / "results").is_dir() else []  # fmt: skip
    now = {entry.id: rule_hash(entry.rule) for entry in catalog.CATALOG}
    lines = [
        "# Rules changelog",
        "",
        "Generated by `linrec.outputs.rule_log` from the record each results folder keeps (`rule_hashes.csv`, "
        "`rule_changes.csv`, written by notebook 09 and `linrec report`); do not edit by hand. A rule's hash covers "
        "its code, its words and its thresholds (the module's docstring says exactly what); a change of hash where "
        "results were already recorded is listed below with the verdict before and after, and so is a verdict that "
        "moved under the same rule because the evidence changed (a model dropped from a profile, a table rewritten).",
        "",
        "## Today's rules",
        "",
        "| claim | hash | " + " | ".join(f"`results/{p.name}/`" for p in folders) + " |",
        "|---|---|" + "---|" * len(folders),
    ]
    recorded = {p.name: {str(e["claim"]): e for e in load_table(HASHES, p).to_dict("records")} for p in folders}
    for claim, h in now.items():
        cells = []
        for p in folders:
            e = recorded[p.name].get(str(claim))
            if e is None:
                cells.append("—")
            else:
                kept = "" if str(e["rule_hash"]) == h else f" (by rule `{e['rule_hash']}`)"
                cells.append(f"{e['verdict']}{kept}, since {e['recorded']}")
        lines.append(f"| {claim} | `{h}` | " + " | ".join(cells) + " |")
    logs = {p.name: load_table(CHANGES, p) for p in folders}
    changes = [(name, e) for name, t in logs.items() if t is not None for e in t.to_dict("records")]
    changes.sort(key=lambda x: (str(x[1]["recorded"]), x[0], str(x[1]["claim"])), reverse=True)
    lines += ["", "## Changes", ""]
    lines += [change_line(name, e) for name, e in changes] or ["None recorded yet."]
    return "\n".join([*lines, "", "## Before the record", "", BEFORE_THE_RECORD, ""])


def change_line(folder: str, e: dict) -> str:
    """One entry of the changelog: a rule's change of hash, or a verdict moved by its evidence under the same rule."""
    why = str(e.get("why") or "")
    if str(e["hash_before"]) == str(e["hash_after"]):
        return (f"- {e['recorded']}, `results/{folder}/`, claim {e['claim']}: {why or 'the evidence changed'}, "
                f"under the same rule `{e['hash_after']}`; verdict {e['verdict_before']} → "
                f"{e['verdict_after']}.")  # fmt: skip
    extra = "" if why in ("", "the rule changed") else f"; {why}"
    return (f"- {e['recorded']}, `results/{folder}/`, claim {e['claim']}: rule `{e['hash_before']}` → "
            f"`{e['hash_after']}`; verdict {e['verdict_before']} → {e['verdict_after']} ({e['tables']} "
            f"tables{extra}).")  # fmt: skip


def write_changelog(root: str | Path) -> Path:
    """Write `changelog(root)` to `root/CHANGELOG` (whole or not at all); returns its path."""
    path = Path(root) / CHANGELOG
    text = changelog(root)
    with atomic_file(path) as tmp:
        tmp.write_text(text)
    return path
