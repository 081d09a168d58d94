"""Opening a notebook in Jupyter Lab and saving it without an edit changes no byte and writes no file beside it
(issue 50, item 2): each notebook goes through jupytext's contents manager, the one `make lab` serves them with,
configured by the repository's own `[tool.jupytext]` section of pyproject.toml."""

import shutil

import pytest

from linrec.app.notebooks import notebooks
from linrec.base.files import project_root

ROOT = project_root(__file__)


def _copy(tmp_path):
    """The notebooks and the configuration jupytext reads, in a scratch folder (the test saves into it)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "notebooks").mkdir()
    for nb in notebooks(ROOT):
        shutil.copy(nb, tmp_path / "notebooks" / nb.name)
    return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


def _files(tmp_path):
    """Every file but Lab's own checkpoints (a hidden folder that .gitignore names)."""
    return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts}


@pytest.mark.parametrize("served", ["notebooks", "repository"])
@pytest.mark.parametrize("stem", [nb.stem for nb in notebooks(ROOT)])
def test_opening_and_saving_a_notebook_in_lab_changes_no_byte_and_pairs_nothing(tmp_path, stem, served):
    """Served from notebooks/ (`make lab`: jupytext sees no configuration above its root, so each notebook's header
    must carry it) and from the repository's root (pyproject.toml's [tool.jupytext] in view)."""
    from jupytext import TextFileContentsManager

    before = _copy(tmp_path)
    root = tmp_path / "notebooks" if served == "notebooks" else tmp_path
    cm = TextFileContentsManager(root_dir=str(root))
    path = str((tmp_path / "notebooks" / f"{stem}.py").relative_to(root))
    model = cm.get(path, content=True, type="notebook")
    assert model["type"] == "notebook" and len(model["content"]["cells"]) > 3
    # what a kernel adds when Lab connects one, and what every save of a notebook carries
    model["content"]["metadata"]["language_info"] = {"name": "python", "version": "3.11.9", "mimetype": "text/x-python"}
    cm.save(model, path)
    after = _files(tmp_path)
    assert sorted(after) == sorted(before), "a save wrote a file beside the notebook (a paired .ipynb?)"
    assert after[root / path] == before[root / path], "saving an unedited notebook changed its .py"


def test_an_edited_notebook_saves_its_edit_and_no_version_stamp(tmp_path):
    """A real edit reaches the .py, and nothing else does: no jupytext or format version in the header."""
    from jupytext import TextFileContentsManager

    _copy(tmp_path)
    cm = TextFileContentsManager(root_dir=str(tmp_path))
    path = "notebooks/02_linear_ceiling.py"
    model = cm.get(path, content=True, type="notebook")
    model["content"]["cells"].append({"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [],
                                      "execution_count": None})  # fmt: skip
    cm.save(model, path)
    text = (tmp_path / path).read_text()
    assert text.rstrip().endswith("x = 1")
    assert "#       jupytext_version:" not in text and "#       format_version:" not in text
    assert not (tmp_path / "notebooks" / "02_linear_ceiling.ipynb").exists()


def test_make_lab_passes_allow_root_as_root_and_only_then():
    """Jupyter Lab refuses to start as root without --allow-root ("Running as root is not recommended"): in a
    container, where root is the usual user, `make lab` passes it."""
    import os
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # under make test
    done = subprocess.run(["make", "--no-print-directory", "-n", "lab", "STAMP=Makefile"], cwd=ROOT, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [ln for ln in done.stdout.splitlines() if "jupyter lab notebooks/" in ln]
    assert len(lines) == 1, done.stdout
    line = lines[0]
    assert ("--allow-root" in line) == (os.getuid() == 0)


def test_make_env_prints_nothing_that_reads_like_an_error():
    """No recipe line of the Makefile has make ignore its failure with a leading '-' (make then prints
    "Error 1 (ignored)" after a step whose failure is expected, e.g. compileall on a file that does not compile)."""
    recipes = [ln for ln in (ROOT / "Makefile").read_text().splitlines() if ln.startswith("\t")]
    assert recipes and not [ln for ln in recipes if ln.lstrip("\t@").startswith("-")]
