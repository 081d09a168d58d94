"""The package's import structure: layers that import only downward, no cycles,
no reaching into another module's private names.

`LAYERS` lists the layers lowest first; a module may import from its own layer or any layer
below. docs/layout.md shows the same tree with one line per module.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "lib" / "linrec"

LAYERS = [
    ("util", {"errors", "files", "threads", "progress"}),
    ("moments", {"moments", "distributed"}),
    ("fits", {"ceiling", "heldout"}),
    ("models and data", {"sites", "corpora", "fetching", "hf", "surgery", "models", "training"}),
    ("capture", {"capture", "curves"}),
    (
        "analyses",
        {"recoverability", "probe", "pitfall", "spectrum", "uncertainty", "perplexity", "swap", "controls", "seeds"},
    ),
    ("verdicts", {"verdicts", "tables"}),
    ("outputs", {"report", "plots"}),
    ("entry points", {"cli", "figures", "__main__", "__init__"}),
]
LAYER = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}


def _modules() -> dict[str, Path]:
    return {p.stem: p for p in sorted(PACKAGE.glob("*.py"))}


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """(linrec module, names imported from it, line) for every import of the package in `path`, lazy ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "linrec":  # `from linrec import verdicts`: a module
            for a in node.names:
                is_module = (PACKAGE / f"{a.name}.py").exists()
                out.append((a.name, [], node.lineno) if is_module else ("__init__", [a.name], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("linrec."):
            out.append((node.module.removeprefix("linrec."), [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("linrec."):
                    out.append((a.name.split(".", 1)[1], [], node.lineno))
    return out


def test_every_module_has_a_layer():
    assert set(_modules()) == set(LAYER), (
        f"unplaced: {set(_modules()) - set(LAYER)}; gone: {set(LAYER) - set(_modules())}"
    )


@pytest.mark.parametrize("name", sorted(_modules()))
def test_imports_go_down_and_use_public_names(name):
    for mod, names, line in _imports(_modules()[name]):
        if name == "__init__" and mod == "errors":
            continue
        assert mod in LAYER, f"{name}.py:{line} imports unknown module linrec.{mod}"
        assert LAYER[mod] <= LAYER[name], (
            f"{name}.py:{line} imports linrec.{mod}, a higher layer ({LAYERS[LAYER[mod]][0]} above "
            f"{LAYERS[LAYER[name]][0]})"
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


def test_the_checker_finds_a_planted_cycle_and_a_climb(tmp_path, monkeypatch):
    """The rules above can fail: a module importing upward and a cycle are both caught."""
    import sys

    fake = tmp_path / "linrec"
    fake.mkdir()
    (fake / "ceiling.py").write_text("from linrec.capture import get_capture\n")
    (fake / "capture.py").write_text("from linrec.ceiling import fit_affine\nfrom linrec.moments import _scratch\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    with pytest.raises(AssertionError, match="higher layer"):
        test_imports_go_down_and_use_public_names("ceiling")
    with pytest.raises(AssertionError, match="private names"):
        test_imports_go_down_and_use_public_names("capture")
    with pytest.raises(AssertionError, match="cycle"):
        test_no_import_cycles()
