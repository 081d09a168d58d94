"""linrec.app.records: an executed notebook is saved the same whatever pieces its kernel cut its printed text into."""

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from linrec.app.records import tidy_executed


def _text(name, text):
    return new_output("stream", name=name, text=text)


def test_a_cells_text_is_saved_as_one_stdout_and_one_stderr_between_its_figures(tmp_path):
    """The same prints, flushed in other pieces and with the two streams' messages in another order (as on a loaded
    machine: the rerun test once failed on notebook 03 for this), give the same saved notebook; text after a figure
    stays after it."""
    figure = new_output("display_data", data={"image/png": "iVBOR", "text/plain": "<Figure>"})

    def saved(outputs, name):
        nb = new_notebook(cells=[new_code_cell("print('a')", outputs=outputs)])
        path = tmp_path / f"{name}.ipynb"
        nbformat.write(nb, str(path))
        tidy_executed(path, tmp_path / "x.py", tmp_path)
        return path.read_bytes(), nbformat.read(str(path), as_version=4).cells[0].outputs

    one, outs = saved([_text("stdout", "a\nb\n"), _text("stderr", "w\n"), figure, _text("stdout", "c\n")], "one")
    pieces, _ = saved(
        [_text("stdout", "a\n"), _text("stderr", "w\n"), _text("stdout", "b\n"), figure, _text("stdout", "c\n")], "one"
    )
    assert pieces == one
    assert [(o.output_type, o.get("name"), o.get("text")) for o in outs] == [
        ("stream", "stdout", "a\nb\n"),
        ("stream", "stderr", "w\n"),
        ("display_data", None, None),
        ("stream", "stdout", "c\n"),
    ]
