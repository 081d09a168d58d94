"""Opening a notebook in Jupyter Lab and saving it without an edit changes no byte and writes no file beside it
(issue 50, item 2): each notebook goes through jupytext's contents manager, the one `make lab` serves them with,
configured by the repository's own `[tool.jupytext]` section of pyproject.toml. An experiment the documented way
(notebooks/overrides.yaml) leaves `git status` clean (issue 65, item 4)."""

import re
import shutil

import pytest

from linrec.app.notebooks import notebooks
from linrec.base.files import project_root
from linrec.studies.stages import PRIMER_FILE

ROOT = project_root(__file__)
LAB = [ROOT / "notebooks" / f"{PRIMER_FILE}.py", *notebooks(ROOT)]  # what `make lab` shows: the primer and the stages


def _copy(tmp_path):
    """The notebooks and the configuration jupytext reads, in a scratch folder (the test saves into it)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "notebooks").mkdir()
    for nb in LAB:
        shutil.copy(nb, tmp_path / "notebooks" / nb.name)
    return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


def _files(tmp_path):
    """Every file but Lab's own checkpoints (a hidden folder that .gitignore names)."""
    return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts}


@pytest.mark.parametrize("served", ["notebooks", "repository"])
@pytest.mark.parametrize("stem", [nb.stem for nb in LAB])
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


def test_make_lab_passes_allow_root_as_root_and_only_then(tmp_path):
    """Jupyter Lab refuses to start as root without --allow-root ("Running as root is not recommended"): in a
    container, where root is the usual user, `make lab` passes it. Asked with `make -n` and the venv's stamp named
    as a file that is not there, so make only prints the environment's recipe: with STAMP=Makefile, make remade the
    Makefile first (it remakes a makefile even under -n) wherever pyproject.toml was newer, as in a fresh clone,
    building .venv for real and touching the Makefile (1,329 s of a loaded 2-core machine, 2026-11-27)."""
    import os
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("no make on this machine")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # under make test
    stamp = tmp_path / "no-stamp"
    makefile = (ROOT / "Makefile").stat().st_mtime_ns
    done = subprocess.run(["make", "--no-print-directory", "-n", "lab", f"STAMP={stamp}"], cwd=ROOT, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert not stamp.exists() and (ROOT / "Makefile").stat().st_mtime_ns == makefile  # nothing was made
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


def test_an_experiment_in_lab_the_documented_way_leaves_git_status_clean(tmp_path, monkeypatch):
    """Issue 65 item 4: the documented way to experiment was to edit `overrides = {...}` in the notebook, which Lab's
    autosave wrote into the tracked .py, and `scratch/` (the documented output folder) was not ignored. In a clone of
    the repository's notebooks, profiles and .gitignore: the values go into notebooks/overrides.yaml, as the prose
    above each notebook's parameters says; the notebook's own first two code cells, run as Lab runs them (in
    notebooks/), bind them; what it
    writes lands under scratch/; and `git status --porcelain` is what it was. A planted .gitignore without the two
    lines shows both files."""
    import subprocess

    import yaml

    import linrec.base.progress as progress
    from linrec.app.profile import LAB_OVERRIDES

    if shutil.which("git") is None:
        pytest.skip("no git on this machine")
    clone = tmp_path / "clone"
    (clone / "notebooks").mkdir(parents=True)
    for f in ("pyproject.toml", ".gitignore"):
        shutil.copy(ROOT / f, clone / f)
    shutil.copytree(ROOT / "params", clone / "params")
    for nb in LAB:
        shutil.copy(nb, clone / "notebooks" / nb.name)

    def git(*args):
        return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "clone")
    before = git("status", "--porcelain")
    assert before == ""
    text = (clone / "notebooks" / "04_rank_outliers.py").read_text()
    assert LAB_OVERRIDES in text and "overrides = {}" in text  # the documented way, in the notebook's own words

    experiment = {"results_dir": "scratch", "figures_dir": "scratch/figures", "corpus": "code"}
    (clone / LAB_OVERRIDES).write_text(yaml.safe_dump(experiment))
    monkeypatch.chdir(clone / "notebooks")  # where Lab runs a notebook
    monkeypatch.delenv(progress.NOTEBOOK_ENV, raising=False)  # not under linrec figures
    cells = re.split(r"^# %%.*$", text, flags=re.M)[1:]
    heads = re.findall(r"^# %%.*$", text, flags=re.M)
    i = next(k for k, h in enumerate(heads) if 'tags=["parameters"]' in h)
    ns: dict = {}
    exec(cells[i], ns)  # the parameters cell, as it stands
    exec(cells[i + 1], ns)  # the cell that loads the profile
    p = ns["p"]
    assert (p.results_dir, p.figures_dir, p.corpus) == ("scratch", "scratch/figures", "code")
    for where in (p.results_dir, p.figures_dir):  # what a notebook writes: its tables and figures, under them
        (clone / where).mkdir(parents=True, exist_ok=True)
    (clone / p.results_dir / "capture.csv").write_text("model\nsmollm2-135m\n")
    (clone / p.figures_dir / "fig1_method.png").write_bytes(b"\x89PNG")
    assert git("status", "--porcelain") == before  # the experiment left no trace git sees

    ignore = (clone / ".gitignore").read_text()
    (clone / ".gitignore").write_text(ignore.replace("/scratch/\n", "").replace("/notebooks/overrides.yaml\n", ""))
    shown = git("status", "--porcelain", "--untracked-files=all")
    assert "scratch/capture.csv" in shown and LAB_OVERRIDES in shown  # the planted .gitignore lets both through


REPR = re.compile(r"\[(?:'[^']*'(?:, )?)+\]")  # a Python list of strings as repr prints it: ['smollm2-135m', …]


def lab_noise(nb) -> list[str]:
    """What a notebook's saved outputs show that a student reads as an error or as plumbing (issue 90): a stream on
    stderr (Jupyter paints it pink) and a Python list repr in printed text ("['smollm2-135m', 'gemma3-270m']")."""
    found = []
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            text = o.get("text", "") if o.get("output_type") == "stream" else o.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            if o.get("output_type") == "stream" and o.get("name") == "stderr":
                found.append(f"cell {i}: on stderr: {text.strip()[:160]}")
            elif m := REPR.search(text):
                found.append(f"cell {i}: a list repr: {m[0][:80]}")
    return found


def test_lab_noise_finds_a_pink_line_and_a_list_repr():
    """The scan itself, on planted outputs (each fails the notebook scans: test_notebooks, the primer below)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    out = nbformat.v4.new_output
    cell.outputs = [out("stream", name="stderr", text="capturing m: about 2 min\n"),
                    out("stream", name="stdout", text="measured models ['a', 'b'], not ['a']\n"),
                    out("stream", name="stdout", text="models a and b; R² [0.1, 0.2]\n")]  # fmt: skip
    nb.cells = [cell]
    assert [f.split(":")[1].strip() for f in lab_noise(nb)] == ["on stderr", "a list repr"]


@pytest.mark.models
def test_the_primer_run_in_lab_says_its_capture_in_its_own_words_and_nothing_pink(monkeypatch):
    """Issue 90, item 4: in Lab, notebook 00's capture notice came on stderr (pink) and advised editing "the
    parameters cell", which 00 has not. Executed as Lab runs it (a kernel Jupyter's server started: JPY_SESSION_NAME
    names the notebook), its capture says what it costs and that this cell computes it, on stdout, and no output is on
    stderr or prints a list repr. Planted: the notice back on stderr, or QUICKER in every notebook, fails it."""
    import jupytext
    from nbclient import NotebookClient

    from linrec.collect.reuse import IN_THIS_CELL
    from linrec.studies.stages import PRIMER_FILE

    path = ROOT / "notebooks" / f"{PRIMER_FILE}.py"
    for name in ("LINREC_PROGRESS", "LINREC_NOTEBOOK", "PYTEST_CURRENT_TEST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    nb = jupytext.read(path)
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
                   ).execute()  # fmt: skip
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    said = [ln for ln in printed.splitlines() if ln.startswith("capturing ")]
    assert len(said) == 1 and said[0].endswith(" — " + IN_THIS_CELL), printed
    assert "parameters cell" not in printed and "make figures" not in printed
    assert lab_noise(nb) == []
