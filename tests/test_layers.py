"""The package's import structure: layers that import only downward, no cycles, no reaching into another module's
private names; its modules' size: none over `MAX_LINES` (550) lines; its signatures: no function over
`MAX_PARAMETERS` (8) parameters; and its tests, which mirror it: tests/<layer>/test_<module>.py.

The layers are the package's folders (`lib/linrec/<layer>/`); their order, lowest first, is the picture in the
package docstring (`lib/linrec/__init__.py`), which the README repeats. A module may import from its own folder or a
lower one; the top-level modules (`__init__`, `__main__`, and those the picture draws as `name.py`, e.g. `api.py`) sit
above every folder.
"""

import ast
import re
from pathlib import Path

import pytest

from helpers import ROOT

PACKAGE = ROOT / "lib" / "linrec"
README = ROOT / "README.md"
TESTS = ROOT / "tests"
PICTURE = re.compile(r"^ {0,4}([a-z]+)/ {2,}(.+)$")  # "stats/     moments · distributed · …" inside the picture
MORE = re.compile(r"^ {6,}· (.+)$")  # a folder's line continued: "           · controls · seeds"
TOP = re.compile(r"^ {0,4}([a-z_]+)\.py {2,}")  # a top-level module in the picture: "api.py     measure · swap"


def picture(text: str) -> list[tuple[str, list[str]]]:
    """[(folder, [module, …])] of a layer picture, in the order drawn (lowest first); a module is its first word
    between the dots, so a picture may say a few words on each, and a folder's line may continue on the next."""
    drawn: list[tuple[str, str]] = []
    for line in text.splitlines():
        if m := PICTURE.match(line):
            drawn.append((m[1], m[2]))
        elif drawn and (m := MORE.match(line)):
            drawn[-1] = (drawn[-1][0], f"{drawn[-1][1]} · {m[1]}")
    return [(folder, [m.split()[0] for m in rest.split("·")]) for folder, rest in drawn]


def _layers() -> list[str]:
    return [folder for folder, _ in picture(ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())))]


def _modules() -> dict[str, Path]:
    """{"folder.module": path} of every module, plus the top-level "__init__" and "__main__"."""
    out = {p.stem: p for p in sorted(PACKAGE.glob("*.py"))}
    for p in sorted(PACKAGE.glob("*/*.py")):
        out[f"{p.parent.name}.{p.stem}"] = p
    return out


def _layer_of(module: str) -> int:
    """A folder's module: its folder's place in the picture; a top-level module (no folder): above every folder."""
    layers = _layers()
    return layers.index(module.split(".")[0]) if "." in module else len(layers)


def top_modules(text: str) -> list[str]:
    """The top-level modules a picture draws (`name.py   what it holds`), in order."""
    return [m[1] for line in text.splitlines() if (m := TOP.match(line))]


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(linrec module, names imported from it, line) for every import of the package in `path`, lazy ones included;
    a package's `__init__` is "folder.__init__", a top-level module its name ("api")."""

    def module(parts: list[str]) -> str:
        return ".".join([*parts, "__init__"]) if PACKAGE.joinpath(*parts).is_dir() else ".".join(parts)

    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "linrec":
            parts = node.module.split(".")[1:]
            if len(parts) == 2 or (len(parts) == 1 and PACKAGE.joinpath(f"{parts[0]}.py").exists()):
                out.append((".".join(parts), [a.name for a in node.names], node.lineno))
                continue
            for a in node.names if len(parts) < 2 else ():
                base = PACKAGE.joinpath(*parts)
                if (base / f"{a.name}.py").exists() or (base / a.name).is_dir():
                    out.append((module([*parts, a.name]), [], node.lineno))
                else:
                    out.append((".".join([*parts, "__init__"]) if parts else "__init__", [a.name], node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("linrec."):
                    out.append((module(a.name.split(".")[1:]), [], node.lineno))
    return out


def test_the_picture_shows_every_folder_and_module():
    """The docstring's picture names every folder and, in each, every module, and every top-level module besides
    `__init__` and `__main__`; the README draws the same picture."""
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text()))
    drawn = picture(doc)
    tops = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert sorted(top_modules(doc)) == tops, f"lib/linrec/ holds {tops} at its top; the picture says {top_modules(doc)}"
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert sorted(f for f, _ in drawn) == folders, f"folders {folders}, drawn {[f for f, _ in drawn]}"
    for folder, mods in drawn:
        have = sorted(p.stem for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__")
        assert sorted(mods) == have, f"{folder}/ holds {have}; the picture says {sorted(mods)}"
    assert picture(README.read_text()) == drawn, "README.md's layer picture differs from lib/linrec/__init__.py's"
    assert top_modules(README.read_text()) == top_modules(doc), (
        "README.md's top-level modules differ from the docstring's"
    )


@pytest.mark.parametrize("name", sorted(_modules()))
def test_imports_go_down_and_use_public_names(name):
    for mod, names, line in _imports(_modules()[name]):
        if name == "__init__" and mod == "base.errors":
            continue
        folder = mod.split(".")[0]
        assert mod in _modules() or (mod.endswith(".__init__") and (PACKAGE / folder).is_dir()), (
            f"{name}.py:{line} imports unknown module linrec.{mod}"
        )
        assert _layer_of(mod) <= _layer_of(name), (
            f"{name}.py:{line} imports linrec.{mod}, a higher layer ({folder}/ above {name.split('.')[0]}/)"
        )
        private = [n for n in names if n.startswith("_")]
        assert not private, f"{name}.py:{line} imports private names {private} from linrec.{mod}"


def test_no_import_cycles():
    graph = {name: {mod for mod, _, _ in _imports(path) if mod != name} for name, path in _modules().items()}
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError(f"import cycle: {' → '.join([*stack, node, nxt])}")
            if nxt not in state:
                visit(nxt, [*stack, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_the_checker_finds_a_planted_cycle_a_climb_and_an_undrawn_module(tmp_path, monkeypatch):
    """The rules above can fail: an upward import, a private name, a cycle and a module the picture misses are all
    caught."""
    import sys

    fake = tmp_path / "linrec"
    for folder in ("stats", "measure"):
        (fake / folder).mkdir(parents=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "__init__.py").write_text('"""Layers:\n\nstats/    ceiling\nmeasure/  capture\n"""\n')
    (fake / "stats" / "ceiling.py").write_text("from linrec.measure.capture import get_capture\n")
    (fake / "measure" / "capture.py").write_text(
        "from linrec.stats.ceiling import fit_affine\nfrom linrec.stats.ceiling import _scratch\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(AssertionError, match="higher layer"):
        test_imports_go_down_and_use_public_names("stats.ceiling")
    with pytest.raises(AssertionError, match="private names"):
        test_imports_go_down_and_use_public_names("measure.capture")
    with pytest.raises(AssertionError, match="cycle"):
        test_no_import_cycles()
    (fake / "stats" / "moments.py").write_text("")
    with pytest.raises(AssertionError, match="picture says"):
        test_the_picture_shows_every_folder_and_module()


def test_the_checker_finds_an_undrawn_top_level_module_and_a_folder_importing_one(tmp_path, monkeypatch):
    """A top-level module (`lib/linrec/api.py`) sits above every folder: a folder's module importing it climbs, and a
    picture that does not draw it as `api.py` misses it; the top-level `__init__` importing it and a package's
    `__init__` (`from linrec import measure`) pass."""
    import sys

    fake = tmp_path / "linrec"
    (fake / "stats").mkdir(parents=True)
    (fake / "stats" / "__init__.py").write_text("")
    (fake / "stats" / "ceiling.py").write_text("from linrec.api import measure\n")
    (fake / "api.py").write_text("from linrec.stats.ceiling import fit\n")
    (fake / "__init__.py").write_text('"""Layers:\n\nstats/    ceiling\n"""\nfrom linrec import api, stats\n')
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert [m for m, _, _ in _imports(fake / "__init__.py")] == ["api", "stats.__init__"]
    test_imports_go_down_and_use_public_names("__init__")
    test_imports_go_down_and_use_public_names("api")
    with pytest.raises(AssertionError, match=r"imports linrec\.api, a higher layer"):
        test_imports_go_down_and_use_public_names("stats.ceiling")
    with pytest.raises(AssertionError, match=r"holds \['api'\] at its top; the picture says \[\]"):
        test_the_picture_shows_every_folder_and_module()


MAX_LINES = 550  # issue 47: a module that grows past it is split by topic (a new module in its folder), not cut to fit


def long_modules() -> list[tuple[str, int]]:
    """(path under lib/linrec, lines) of every module over `MAX_LINES`, longest first."""
    counts = [(p.relative_to(PACKAGE).as_posix(), len(p.read_text().splitlines())) for p in _modules().values()]
    return sorted(((m, n) for m, n in counts if n > MAX_LINES), key=lambda mn: -mn[1])


def test_no_module_is_over_the_line_limit():
    long = long_modules()
    assert not long, f"modules over {MAX_LINES} lines, to split by topic: " + ", ".join(
        f"{m} ({n} lines)" for m, n in long
    )


def test_the_line_limit_finds_a_planted_long_module(tmp_path, monkeypatch):
    """A module one line over the limit is named with its count; one at the limit passes."""
    import sys

    fake = tmp_path / "linrec"
    (fake / "stats").mkdir(parents=True)
    (fake / "__init__.py").write_text('"""Layers:\n\nstats/    ceiling · moments\n"""\n')
    (fake / "stats" / "__init__.py").write_text("")
    (fake / "stats" / "ceiling.py").write_text("x = 1\n" * MAX_LINES)
    (fake / "stats" / "moments.py").write_text("x = 1\n" * (MAX_LINES + 1))
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(AssertionError, match=rf"stats/moments\.py \({MAX_LINES + 1} lines\)") as caught:
        test_no_module_is_over_the_line_limit()
    assert "ceiling" not in str(caught.value)


MAX_PARAMETERS = 8  # issue 47: parameters past this travel together; group them in a frozen dataclass of options


def parameter_count(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's parameters: positional-only, ordinary and keyword-only ones, *args and **kwargs; a method's
    `self` or `cls` is not counted."""
    a = fn.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    own = 1 if names[:1] in (["self"], ["cls"]) else 0
    return len(names) - own + (a.vararg is not None) + (a.kwarg is not None)


def long_signatures() -> list[str]:
    """ "path:line name (n)" of every function or method in the package over `MAX_PARAMETERS` parameters."""
    out = []
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(node) > MAX_PARAMETERS:
                out.append(
                    f"{path.relative_to(PACKAGE).as_posix()}:{node.lineno} {node.name} ({parameter_count(node)})"
                )
    return out


def test_no_function_takes_more_than_8_parameters():
    long = long_signatures()
    assert not long, f"functions over {MAX_PARAMETERS} parameters, to group into a dataclass of options: " + ", ".join(
        long
    )


def test_the_parameter_check_finds_a_planted_long_signature(tmp_path, monkeypatch):
    """A function of 9 parameters is named with its count, as is one of 7 with *args and **kwargs; a method of 8
    besides `self` passes."""
    import sys

    fake = tmp_path / "linrec"
    (fake / "stats").mkdir(parents=True)
    (fake / "__init__.py").write_text('"""Layers:\n\nstats/    ceiling\n"""\n')
    (fake / "stats" / "__init__.py").write_text("")
    (fake / "stats" / "ceiling.py").write_text(
        "def nine(a, b, c, d, e, f, g, *, h=0, i=1):\n    pass\n\n\n"
        "def starred(a, b, c, d, e, f, g, *args, **kwargs):\n    pass\n\n\n"
        "class Fit:\n    def eight(self, a, b, c, d, e, f, g, h):\n        pass\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(
        AssertionError, match=r"stats/ceiling\.py:1 nine \(9\), stats/ceiling\.py:5 starred \(9\)"
    ) as got:
        test_no_function_takes_more_than_8_parameters()
    assert "eight" not in str(got.value)


ONE_DEFAULT = {"n_boot": "N_BOOT", "screening_windows": "SCREENING_WINDOWS"}  # issue 47: each default written once


def literal_defaults(source: str) -> list[str]:
    """ "line name=default" of every parameter or dataclass field named in `ONE_DEFAULT` whose default is not its
    named constant (`linrec.stats.N_BOOT`, `linrec.analyses.SCREENING_WINDOWS`); a parameter without a default is
    fine."""
    out = []
    for node in ast.walk(ast.parse(source)):
        pairs = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            pairs += zip(positional[len(positional) - len(a.defaults) :], a.defaults)
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            pairs = [(arg.arg, d) for arg, d in pairs]
        elif isinstance(node, ast.ClassDef):
            pairs += [(f.target.id, f.value) for f in node.body if isinstance(f, ast.AnnAssign) and f.value is not None
                      and isinstance(f.target, ast.Name)]  # fmt: skip
        for name, default in pairs:
            want = ONE_DEFAULT.get(name)
            if isinstance(default, ast.Call) and getattr(default.func, "id", None) == "param" and default.args:
                default = default.args[0]  # a declared parameter (linrec.base.params.param): its default comes first
            if want and not (isinstance(default, ast.Name) and default.id == want):
                out.append(f"{default.lineno} {name}={ast.unparse(default)}")
    return out


def test_n_boot_and_screening_windows_each_have_one_default():
    """Every signature or options field that gives `n_boot` or `screening_windows` a default reads the named constant
    (a caller that needs another value passes it, with its reason); the constant for the screening windows is the
    default profile's."""
    from linrec.analyses import SCREENING_WINDOWS
    from linrec.app.profile import load_profile

    found = {name: literal_defaults(path.read_text()) for name, path in _modules().items()}
    found = {name: hits for name, hits in found.items() if hits}
    assert not found, f"defaults written again instead of read from {sorted(ONE_DEFAULT.values())}: {found}"
    assert load_profile("default", root=README.parent).screening_windows == SCREENING_WINDOWS


def test_the_default_check_finds_planted_literal_defaults():
    violations = (
        "def a(x, n_boot: int = 1000, seed=0):\n    pass\n\n\n"
        "def b(x, *, screening_windows=8, n_boot=N_BOOT):\n    pass\n\n\n"
        "def c(x, n_boot):\n    pass\n\n\n"
        "class S:\n    screening_windows: int = 2\n    n_boot: int = N_BOOT\n"
    )
    assert literal_defaults(violations) == ["1 n_boot=1000", "5 screening_windows=8", "14 screening_windows=2"]


def private_writes(source: str) -> list[tuple[int, str]]:
    """(line, target) of every assignment to another object's private attribute (`x._name = …`, `x._name += …`,
    a tuple target holding one, or `setattr(x, "_name", …)`); `self._name` and `cls._name` are an object's own."""
    out = []

    def targets(node):
        for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
            yield from t.elts if isinstance(t, ast.Tuple) else [t]

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in targets(node):
                if (isinstance(t, ast.Attribute) and t.attr.startswith("_") and not t.attr.startswith("__")
                        and not (isinstance(t.value, ast.Name) and t.value.id in ("self", "cls"))):  # fmt: skip
                    out.append((node.lineno, ast.unparse(t)))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and str(name.value).startswith("_"):
                out.append((node.lineno, f"setattr(…, {name.value!r})"))
    return out


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_module_writes_another_objects_private_fields(name):
    """A module changes another object's state through that object's methods (e.g. `Moments.to`, `Moments.assign`),
    never by writing its private fields."""
    found = private_writes(_modules()[name].read_text())
    assert not found, f"{name}.py writes private fields of other objects: {found}"


def test_the_private_write_check_finds_planted_writes():
    violations = "m.mean, m._M = a, b\ntotal._version += 1\nsetattr(m, '_M', x)\nself._ok = 1\nm.public = 2\n"
    assert [line for line, _ in private_writes(violations)] == [1, 2, 3]


# issue 47: the tests mirror the package. A test of lib/linrec/<layer>/<module>.py is in tests/<layer>/test_<module>.py;
# the tests that run a whole pipeline or look at the project rather than one module stay at tests/ top level, each
# named here with what it covers.
TOP_LEVEL = {
    "test_layers.py": "the package's structure: layers, cycles, sizes, signatures, defaults, and this mirror",
    "test_docs.py": "no measured number typed by hand into the written pages (issue 86, item 5)",
    "test_notebooks.py": "the numbered notebooks executed end to end on the smoke profile",
    "test_integration.py": "the pipeline on the real offline model and corpus",
    "test_reproducible.py": "the same bits on any thread count, each run in a fresh process",
    "test_environment.py": "the environment file, the pins, the CI command, the README's size",
    "test_lab.py": "notebooks opened and saved in Jupyter Lab; make lab and make env",
    "test_docs_paths.py": "every path and linrec name the pages and notebooks name",
    "test_teaching.py": "what the notebooks and the README say to a reader",
    "test_peers.py": "benchmarks/peers.py beside linrec (a script, not a package module)",
    "test_gpu_zoo.py": "benchmarks/gpu_zoo.py's precision comparison (a script, not a package module)",
    "test_call_path.py": "benchmarks/call_path.py's counts of a command's path through the layers (a script)",
    "test_api.py": "linrec.api, the top-level module: measure and swap on a model already in memory",
    "test_battery.py": "every claim row (claims/ rules, outputs/ rendering) on planted tables: each outcome, each word",
}


def mirror_problems(tests: Path, package: Path) -> list[str]:
    """What breaks the mirror: a test file under tests/ that is neither tests/<layer>/test_<module>.py for an existing
    lib/linrec/<layer>/<module>.py nor a top-level file named in TOP_LEVEL, and a TOP_LEVEL name with no file."""
    problems = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.relative_to(tests)
        if len(rel.parts) == 1:
            if rel.name not in TOP_LEVEL:
                problems.append(f"tests/{rel}: at the top level but not in TOP_LEVEL (move it to tests/<layer>/)")
        elif len(rel.parts) != 2 or not (package / rel.parts[0] / "__init__.py").exists():
            problems.append(f"tests/{rel.as_posix()}: not in a layer's folder (tests/<layer>/test_<module>.py)")
        elif not (package / rel.parts[0] / f"{rel.stem.removeprefix('test_')}.py").exists():
            problems.append(
                f"tests/{rel.as_posix()}: no module lib/linrec/{rel.parts[0]}/{rel.stem.removeprefix('test_')}.py"
            )
    problems += [
        f"TOP_LEVEL names tests/{name}, which does not exist" for name in TOP_LEVEL if not (tests / name).exists()
    ]
    return problems


def test_the_tests_mirror_the_package():
    problems = mirror_problems(TESTS, PACKAGE)
    assert not problems, "the tests do not mirror the package: " + "; ".join(problems)


def test_the_mirror_check_finds_a_misnamed_misplaced_or_stray_test_file(tmp_path):
    """A test file named for no module of its layer, one in a folder that is no layer, one nested a level too deep,
    one at the top level that TOP_LEVEL does not name, and a TOP_LEVEL name with no file are each named; a test file
    of an existing module passes."""
    package, tests = tmp_path / "linrec", tmp_path / "tests"
    (package / "stats").mkdir(parents=True)
    (package / "stats" / "__init__.py").write_text("")
    (package / "stats" / "moments.py").write_text("")
    for name in ("stats/test_moments.py", "stats/test_moment.py", "notebooks/test_moments.py",
                 "stats/deep/test_moments.py", "test_stray.py", *TOP_LEVEL):  # fmt: skip
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text("")
    (tests / "test_lab.py").unlink()
    problems = mirror_problems(tests, package)
    assert problems == [
        "tests/notebooks/test_moments.py: not in a layer's folder (tests/<layer>/test_<module>.py)",
        "tests/stats/deep/test_moments.py: not in a layer's folder (tests/<layer>/test_<module>.py)",
        "tests/stats/test_moment.py: no module lib/linrec/stats/moment.py",
        "tests/test_stray.py: at the top level but not in TOP_LEVEL (move it to tests/<layer>/)",
        "TOP_LEVEL names tests/test_lab.py, which does not exist",
    ]
