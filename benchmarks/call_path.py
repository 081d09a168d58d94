"""The path a command's arguments take through the package's layers, followed call by call (issue 62).

Runs one `linrec` command in this process under `sys.setprofile` and keeps the calls between functions of the
package (`lib/linrec`). Each caller → callee edge is kept the first time it is taken (a loop over blocks or batches
counts once), and the call tree is walked depth first: into a callee, back to its caller. On that walk the script
counts, over modules (consecutive frames in one module are one visit):

- modules entered: distinct modules of the package the command runs in;
- climbs: steps from a module to one in a higher layer (the layers are the folders of `lib/linrec/__init__.py`'s
  picture, lowest first; `api`, `cli`'s own top-level modules above them). Every call goes down or sideways, since
  imports go down (`tests/test_layers.py`), so a climb is a return to a caller above: control coming back up to be
  handed down again;
- returns: steps into a module already left earlier on the walk (the back and forth of a call path).

    .venv/bin/python benchmarks/call_path.py                       # linrec swap on SmolLM2's first 2 blocks
    .venv/bin/python benchmarks/call_path.py --core                # only the capture's core (from get_capture)
    .venv/bin/python benchmarks/call_path.py -- measure --model first:2:smollm2-135m --tokens 2048 --no-cache

Issue 62's targets for the swap command: climbs ≤ 15, returns ≤ 40. The counts depend on the code path, not on the
machine; `--no-cache` (the default command passes it) makes the capture run rather than read a cached one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "lib" / "linrec"
LAYERS = ("base", "stats", "inputs", "collect", "analyses", "claims", "studies", "outputs", "app")
SWAP = ["swap", "--model", "first:2:smollm2-135m", "--tokens", "2048", "--seq-len", "64", "--no-cache", "--blocks", "0"]


def module_of(filename: str) -> str | None:
    """`collect.capture` for lib/linrec/collect/capture.py; None outside the package."""
    path = Path(filename)
    if not path.is_relative_to(ROOT):
        return None
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def layer(module: str) -> int:
    """The module's layer: its folder's place in LAYERS; a top-level module (api, __main__) above them all."""
    head = module.split(".")[0]
    return LAYERS.index(head) if head in LAYERS else len(LAYERS)


CARRIERS = (  # besides argparse.Namespace and every class of linrec.app.requests
    "linrec.collect.config.CaptureConfig",
    "linrec.collect.config.CaptureRun",
    "linrec.inputs.source.ModelSource",
)


def carries(frame) -> bool:
    """Whether a call's parameters hold the command's arguments: the parsed `Namespace`, a request built from it
    (a class of `linrec.app.requests`), the capture's settings (`CaptureConfig`, `CaptureRun`) or the parsed model
    (`ModelSource`)."""
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    names = code.co_varnames[: n + bool(code.co_flags & 4) + bool(code.co_flags & 8)]
    for name in names:
        value = frame.f_locals.get(name)
        values = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else (value,)
        for v in values:
            kind = f"{type(v).__module__}.{type(v).__name__}"
            if isinstance(v, argparse.Namespace) or type(v).__module__ == "linrec.app.requests" or kind in CARRIERS:
                return True
    return False


def trace(argv: list[str], start: str | None = None, follow: bool = True) -> list[tuple[str, str]]:
    """The first-taken caller → callee edges between package functions, as (caller, callee) keys
    `module:function:line`, in the order first taken; from `start` (a function name) on when given. With `follow`,
    only the calls that carry the command's arguments (`carries`), each hung under the nearest such call above it."""
    edges: dict[tuple[str, str], None] = {}
    active: list = [True if start is None else False]  # with `start`: its frame while it runs (its first call only)
    kept: set[int] = set()

    def key(code) -> str | None:
        mod = module_of(code.co_filename)
        return None if mod is None else f"{mod}:{code.co_name}:{code.co_firstlineno}"

    def profile(frame, event, _arg):
        if event == "return" and active[0] is frame:
            active[0] = None  # `start` returned: nothing after it is counted
        if event != "call":
            return
        callee = key(frame.f_code)
        if callee is None or frame.f_code.co_name.startswith("<"):  # comprehensions, lambdas: their function's
            return
        if not active[0]:
            if active[0] is None or frame.f_code.co_name != start:
                return
            active[0] = frame
        if follow and kept and not carries(frame):  # the first call kept is the command's entry (or `start`)
            return
        kept.add(id(frame))
        caller, back = None, frame.f_back
        while back is not None and caller is None:  # the nearest package frame kept, not a comprehension
            if back.f_code.co_name == "<module>" and key(back.f_code):  # run while a package module is imported
                kept.discard(id(frame))
                return
            if not back.f_code.co_name.startswith("<") and (not follow or id(back) in kept):
                caller = key(back.f_code)
            back = back.f_back
        if caller is not None:
            edges.setdefault((caller, callee), None)

    from linrec.app.cli import main

    sys.setprofile(profile)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main(argv)
    finally:
        sys.setprofile(None)
    return list(edges)


def walk(edges: list[tuple[str, str]]) -> list[list[str]]:
    """The modules visited walking the call tree depth first, one path per root (a caller never called itself:
    the command's `main`, or a function the package hands to torch, e.g. a hook), in the order the edges were
    first taken; consecutive visits to one module merged."""
    children: dict[str, list[str]] = {}
    called = set()
    for caller, callee in edges:
        children.setdefault(caller, []).append(callee)
        called.add(callee)
    roots = [c for c in dict.fromkeys(c for c, _ in edges) if c not in called]
    seen: set[str] = set()

    def visit(fn: str, path: list[str]) -> None:
        path.append(fn.split(":")[0])
        for child in children.get(fn, []):
            if child in seen:  # recursion or a function reached from two callers: walked once
                continue
            seen.add(child)
            visit(child, path)
            path.append(fn.split(":")[0])

    paths = []
    for root in roots:
        seen.add(root)
        visit(root, path := [])
        paths.append([m for i, m in enumerate(path) if i == 0 or m != path[i - 1]])
    return paths


def counts(paths: list[list[str]]) -> dict[str, int]:
    """Modules entered, climbs to a higher layer, and returns to a module already left, along each path."""
    climbs = returns = 0
    for path in paths:
        left: set[str] = set()
        for here, there in zip(path, path[1:]):
            climbs += layer(there) > layer(here)
            left.add(here)
            returns += there in left
    return {"modules": len({m for path in paths for m in path}), "climbs": climbs, "returns": returns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--core", action="store_true", help="count from get_capture on (the capture's core)")
    parser.add_argument("--show", action="store_true", help="print the path, one module a line")
    parser.add_argument("--all", action="store_true", help="every call, not only those carrying the arguments")
    parser.add_argument("command", nargs="*", help="a linrec command line (after --); default: " + " ".join(SWAP))
    a = parser.parse_args()
    paths = walk(trace(a.command or SWAP, start="get_capture" if a.core else None, follow=not a.all))
    if a.show:
        print("\n\n".join("\n".join(path) for path in paths))
    c = counts(paths)
    print(f"{' '.join(a.command or SWAP)}{' (capture core)' if a.core else ''}: {c['modules']} modules, "
          f"{c['climbs']} climbs to a higher layer, {c['returns']} returns to a module already left")  # fmt: skip


if __name__ == "__main__":
    main()
