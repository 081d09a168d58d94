"""One progress convention for every way a notebook runs (issue 50, item 4): in a Jupyter kernel a loop prints one
line on the console of whatever started the kernel, never a bar, and nothing of it is saved into the notebook;
on a terminal, tqdm's bar."""

import nbformat
import pytest


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
    "from linrec.base.progress import bar, write\n"
    "for _ in bar(range(40), desc='capture m', unit='batch'):\n"
    "    pass\n"
    "write('memory plan: 1 block')\n"
    "print('the cell says this')\n"
    "import time; time.sleep(1.5)  # what reaches fd 2 is forwarded into the notebook by a thread: give it time\n"
)


def _execute(monkeypatch, env: dict[str, str]):
    """Run a one-cell notebook the way nbconvert and papermill do (nbclient, ipykernel's defaults: the kernel's file
    descriptors forwarded into the notebook), in a kernel started with `env` added and LINREC_PROGRESS unset."""
    from nbclient import NotebookClient

    monkeypatch.delenv("LINREC_PROGRESS", raising=False)
    monkeypatch.delenv("LINREC_NOTEBOOK", raising=False)
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)  # with it, ipykernel forwards no file descriptor
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(CELL)]
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    return nb.cells[0].outputs


@pytest.mark.parametrize(
    "env, prefix",
    [({}, ""), ({"JPY_SESSION_NAME": "/home/u/notebooks/05_corpora.py"}, "[linrec] 05_corpora: ")],
)
def test_in_a_kernel_outside_the_runner_no_bar_reaches_the_notebook(monkeypatch, capfd, env, prefix):
    outputs = _execute(monkeypatch, env)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in outputs] == [
        ("stream", "stdout", "the cell says this\n")
    ], "a progress line or bar was saved into the notebook"
    console = capfd.readouterr().err.splitlines()
    assert f"{prefix}capture m: 40 batches" in console and f"{prefix}memory plan: 1 block" in console


def test_on_a_terminal_a_loop_draws_a_bar(monkeypatch, capsys):
    from linrec.base.progress import bar, bars_on

    monkeypatch.delenv("LINREC_PROGRESS", raising=False)
    assert bars_on()
    list(bar(range(3), desc="capture m", unit="batch"))
    assert "capture m: 100%" in capsys.readouterr().err
    monkeypatch.setenv("LINREC_PROGRESS", "0")
    assert not bars_on()
