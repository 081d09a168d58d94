"""One progress convention for every way a notebook runs (issue 50, item 4; issue 65, item 2): in a kernel executing
a notebook into a file (the runner, papermill, nbconvert) a loop prints one line on the console of whatever started
the kernel, never a bar, and nothing of it is saved into the notebook; in Jupyter Lab (a kernel its server started)
tqdm.auto's bar in the cell; on a terminal, tqdm's bar."""

import nbformat


def test_under_the_runner_a_loop_prints_one_line_on_the_console_not_into_the_notebook(monkeypatch, capfd):
    """A kernel's sys.stdout/sys.stderr are the notebook's outputs; its own stderr (fd 2) is the runner's console.
    A loop that runs only on a cache miss must not write into the saved notebook, or a rerun would differ."""
    import io
    import sys

    from linrec.base.progress import bar, write

    monkeypatch.setenv("LINREC_PROGRESS", "0")
    monkeypatch.setenv("LINREC_NOTEBOOK", "02_x")
    cell_out, cell_err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", cell_out)
    monkeypatch.setattr(sys, "stderr", cell_err)
    assert list(bar(range(3), desc="capture m", unit="batch")) == [0, 1, 2]
    write("memory plan: 1 block")
    monkeypatch.undo()
    console = capfd.readouterr().err
    assert cell_out.getvalue() == cell_err.getvalue() == ""
    assert console.splitlines() == ["[linrec] 02_x: capture m: 3 batches", "[linrec] 02_x: memory plan: 1 block"]


CELL = (
    "from linrec.base.progress import bar, notice, write\n"
    "notice('capturing m on wiki: about 2 min', in_notebook='quicker: make figures')\n"
    "for _ in bar(range(40), desc='capture m', unit='batch'):\n"
    "    pass\n"
    "write('memory plan: 1 block')\n"
    "print('the cell says this')\n"
    "import logging; logging.getLogger('linrec.collect').warning('corpus x holds only 3 windows')\n"
    "import time; time.sleep(1.5)  # what reaches fd 2 is forwarded into the notebook by a thread: give it time\n"
)
WIDGET = "application/vnd.jupyter.widget-view+json"


def _execute(monkeypatch, env: dict[str, str]):
    """Run a one-cell notebook the way nbconvert and papermill do (nbclient, ipykernel's defaults: the kernel's file
    descriptors forwarded into the notebook), in a kernel started with `env` added and LINREC_PROGRESS unset."""
    from nbclient import NotebookClient

    for name in ("LINREC_PROGRESS", "LINREC_NOTEBOOK", "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)  # with it, ipykernel forwards no file descriptor
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    return nb.cells[0].outputs


def _text(outputs, name: str) -> str:
    return "".join(o.text for o in outputs if o.output_type == "stream" and o.name == name)


def _runner_env() -> dict[str, str]:
    """What `linrec figures` gives its kernels (`linrec.app.notebooks`), with a Jupyter server's session name planted
    too: the runner's settings must win over it."""
    from linrec.app.notebooks import KERNEL_ENV

    return {**KERNEL_ENV, "LINREC_NOTEBOOK": "05_corpora", "JPY_SESSION_NAME": "/home/u/notebooks/05_corpora.py"}


def test_under_the_runner_no_bar_and_no_line_reaches_the_saved_notebook(monkeypatch, capfd):
    """The runner's executed .ipynb holds only what the cell prints: a loop or a notice that runs only on a cache
    miss must not be saved there (a rerun from the cache would differ), nor a redrawn bar's carriage returns."""
    outputs = _execute(monkeypatch, _runner_env())
    assert {(o.output_type, o.get("name")) for o in outputs} == {("stream", "stdout")}, outputs
    assert _text(outputs, "stdout") == "the cell says this\ncorpus x holds only 3 windows\n", (
        "a progress line, notice or bar was saved into the runner's notebook"
    )
    console = capfd.readouterr().err.splitlines()
    for line in ("capturing m on wiki: about 2 min", "capture m: 40 batches", "memory plan: 1 block"):
        assert f"[linrec] 05_corpora: {line}" in console


def test_a_kernel_executing_into_a_file_outside_the_runner_shows_the_notice_but_no_bar(monkeypatch, capfd):
    """papermill or nbconvert run by hand (no Jupyter server: no session name): the loop is one line on the console,
    never a bar in the saved notebook; the notice, said before a long step, is in the cell with the quicker path."""
    outputs = _execute(monkeypatch, {})
    assert not any(o.output_type == "display_data" for o in outputs)
    assert _text(outputs, "stdout") == (
        "capturing m on wiki: about 2 min — quicker: make figures\nthe cell says this\ncorpus x holds only 3 windows\n"
    )
    assert _text(outputs, "stderr") == ""  # issue 90: information, not an error Jupyter paints pink
    assert "\r" not in _text(outputs, "stdout")
    console = capfd.readouterr().err.splitlines()
    assert "capture m: 40 batches" in console and "memory plan: 1 block" in console


def test_in_jupyter_lab_the_notice_and_the_bar_are_in_the_cell(monkeypatch, capfd):
    """A kernel Jupyter's server started (JPY_SESSION_NAME: Lab, Notebook), which someone is watching: the notice with
    the quicker path, then tqdm.auto's bar (an ipywidgets progress bar) in the cell's output, and nothing on the
    server's console (issue 65: Run All on a fresh clone captured for 50 minutes with nothing in the notebook)."""
    outputs = _execute(monkeypatch, {"JPY_SESSION_NAME": "/home/u/notebooks/05_corpora.py"})
    widgets = [o for o in outputs if o.output_type == "display_data" and WIDGET in o.data]
    assert len(widgets) == 1, [o.output_type for o in outputs]
    assert widgets[0].data["text/plain"].startswith("capture m:")  # the bar as first drawn; the widget then moves
    said = _text(outputs, "stdout")
    assert _text(outputs, "stderr") == "", "Lab paints stderr pink: a notice or a warning read as an error (issue 90)"
    assert "capturing m on wiki: about 2 min — quicker: make figures" in said and "memory plan: 1 block" in said
    assert "corpus x holds only 3 windows" in said
    assert said.count("capturing m") == 1 and "\r" not in said
    first = next(i for i, o in enumerate(outputs) if "capturing m" in o.get("text", ""))
    assert first < outputs.index(widgets[0]), "the notice comes before the bar"
    console = capfd.readouterr().err
    assert "capture m: 40" not in console and "capturing m" not in console


def test_in_jupyter_lab_a_linrec_error_is_one_line_as_on_the_command_line(monkeypatch):
    """Issue 90: a bad value in Lab came as a three-frame traceback where the command line says one line. In a watched
    kernel a LinrecError is shown as `linrec: error: <message>`, still an error (the cell fails); another exception
    keeps its traceback, and so does a LinrecError under the runner. Planted: `errors_in_one_line` doing nothing fails
    the first assert."""
    from nbclient import NotebookClient

    cell = (
        "from linrec.base.errors import LinrecError\n"
        "raise LinrecError(\"unknown corpus 'cod' (did you mean 'code'?)\")\n"
    )
    for env, one_line in (({"JPY_SESSION_NAME": "/home/u/notebooks/02_linear_ceiling.py"}, True),
                          (_runner_env(), False)):  # fmt: skip
        for name in ("LINREC_PROGRESS", "LINREC_NOTEBOOK", "JPY_SESSION_NAME", "PYTEST_CURRENT_TEST"):
            monkeypatch.delenv(name, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("import linrec.base.progress\n" + cell)]
        NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=True).execute()
        errors = [o for o in nb.cells[0].outputs if o.output_type == "error"]
        assert len(errors) == 1 and errors[0].ename == "LinrecError"
        shown = errors[0].traceback
        if one_line:
            assert shown == ["linrec: error: unknown corpus 'cod' (did you mean 'code'?)"], shown
        else:
            assert len(shown) > 1


def test_the_bar_follows_the_kernel_it_runs_in(monkeypatch):
    """The choice itself, with the environment planted: a terminal (no kernel) draws tqdm's text bar; a watched kernel
    tqdm.auto's; a kernel of the runner, or one with LINREC_PROGRESS=0, none."""
    from tqdm import tqdm

    from linrec.base import progress

    for name in ("LINREC_PROGRESS", "LINREC_NOTEBOOK", "JPY_SESSION_NAME"):
        monkeypatch.delenv(name, raising=False)
    assert progress.bars_on() and progress.bar_class() is tqdm and not progress.watched()
    monkeypatch.setattr(progress, "in_kernel", lambda: True)
    assert not progress.bars_on()  # papermill, nbconvert: no server's session
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/u/notebooks/02_linear_ceiling.py")
    assert progress.watched() and progress.bars_on()
    import sys
    import types

    auto = types.ModuleType("tqdm.auto")  # in a kernel tqdm.auto is the notebook bar; planted, as pytest is none
    auto.tqdm = type("NotebookBar", (tqdm,), {})
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    assert progress.bar_class() is auto.tqdm
    monkeypatch.setenv("LINREC_NOTEBOOK", "02_linear_ceiling")  # the runner's kernel
    assert not progress.watched() and not progress.bars_on() and progress.bar_class() is tqdm
    monkeypatch.delenv("LINREC_NOTEBOOK")
    monkeypatch.setenv("LINREC_PROGRESS", "0")
    assert not progress.watched() and not progress.bars_on()
    monkeypatch.setenv("LINREC_PROGRESS", "1")
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert progress.watched() and progress.bars_on()


def test_on_a_terminal_a_loop_draws_a_bar(monkeypatch, capsys):
    from linrec.base.progress import bar, bars_on

    monkeypatch.delenv("LINREC_PROGRESS", raising=False)
    assert bars_on()
    list(bar(range(3), desc="capture m", unit="batch"))
    assert "capture m: 100%" in capsys.readouterr().err
    monkeypatch.setenv("LINREC_PROGRESS", "0")
    assert not bars_on()
