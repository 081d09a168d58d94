"""The notebook runner's parameter profiles: one-line errors for malformed files and unknown keys."""

import pytest

from linrec.errors import LinrecError
from linrec.figures import declared_parameters, known_parameters, load_params, notebooks, project_root

ROOT = project_root(__file__)


def test_every_shipped_profile_uses_known_keys_only():
    for profile in sorted((ROOT / "params").glob("*.yaml")):
        assert load_params(profile, ROOT)


def test_known_keys_are_what_the_notebooks_declare(tmp_path):
    nb = tmp_path / "notebooks" / "01_x.py"
    nb.parent.mkdir()
    nb.write_text(
        '# %% [markdown]\n# text\n\n# %% tags=["parameters"]\nalpha = 1\nbeta: int = 2\ngamma, delta = 3, 4\n\n# %%\n'
        "epsilon = 5\n"
    )
    assert declared_parameters(nb) == {"alpha", "beta"}  # tuple targets are not papermill parameters
    assert known_parameters(tmp_path) == {"alpha", "beta", "results_dir"}
    assert {"models", "tokens", "seq_len", "figures_dir", "report_path"} <= known_parameters(ROOT)
    assert len(notebooks(ROOT)) == 8


@pytest.mark.parametrize(
    "text, needles",
    [
        ("models: [a, b\ntokens: 5\n", ["line 2", "not valid YAML"]),
        ("models: a\n  tokens: 5\n", ["line 2"]),
        ("- a\n- b\n", ["mapping"]),
        ("tokenz: 2560\n", ["tokenz", "known:", "tokens"]),
    ],
)
def test_bad_profiles_are_one_line_errors(tmp_path, text, needles):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(LinrecError) as err:
        load_params(f, ROOT)
    msg = str(err.value)
    assert "\n" not in msg and str(f) in msg
    for n in needles:
        assert n in msg, msg


def test_without_a_project_any_key_is_read(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("tokenz: 2560\n")
    assert load_params(f) == {"tokenz": 2560}  # no notebooks to check against: read as written
    with pytest.raises(LinrecError, match="tokenz"):
        load_params(f, ROOT)


def test_timings_are_recorded_per_cell_and_notebook(tmp_path):
    import nbformat
    import pandas as pd

    from linrec.figures import TIMINGS, record_timings

    def executed(stem, durations):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_markdown_cell("# title")]
        for k, d in enumerate(durations):
            cell = nbformat.v4.new_code_cell(f"# comment\nx{k} = {k}")
            cell.metadata["papermill"] = {"duration": d}
            nb.cells.append(cell)
        path = tmp_path / f"{stem}.ipynb"
        nbformat.write(nb, path)
        return path

    record_timings(executed("01_a", [0.5, 2.0]))
    record_timings(executed("02_b", [1.0]))
    record_timings(executed("01_a", [3.0]))  # a rerun replaces that notebook's rows only
    t = pd.read_csv(tmp_path / TIMINGS)
    assert list(zip(t["notebook"], t["cell"], t["seconds"], t["code"])) == [
        ("01_a", 0, 3.0, "x0 = 0"),
        ("02_b", 0, 1.0, "x0 = 0"),
    ]
