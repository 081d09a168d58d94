"""What a reader of a notebook or the README sees (issue 50, items 3 and 7): a cell that quotes another profile's
results asks first whether they apply, the README's hero caption promises only what its figure draws, and notebook 06
says which models run without a BOS token."""

import re

from linrec.base.files import project_root

ROOT = project_root(__file__)


def test_the_notebooks_quote_another_profile_only_after_asking_whether_it_applies():
    """Every cell that reads results/full or results/curve checks `measured_elsewhere` first (notebook 04 printed
    the wiki replication under -p corpus code)."""
    for nb in sorted((ROOT / "notebooks").glob("0*.py")):
        text = nb.read_text()
        for profile in ("full", "curve"):
            quoted = text.count(f'root / "results" / "{profile}"')
            checked = text.count(f'measured_elsewhere(root, "{profile}"')
            assert checked >= min(quoted, 1), f"{nb.name} quotes results/{profile} without measured_elsewhere"


def test_the_readmes_hero_caption_promises_only_what_its_figure_draws():
    """fig2_swap.png draws the swap's ΔPPL alone (R²_lin per block is fig2_r2_lin.png): its caption said both."""
    import re

    readme = (ROOT / "README.md").read_text()
    alt = re.search(r"!\[([^\]]*)\]\(figures/fig2_swap\.png\)", readme)[1]
    assert "ΔPPL" in alt and "R²_lin" not in alt


def test_notebook_06_does_not_say_every_model_runs_without_a_bos_token():
    text = (ROOT / "notebooks" / "06_swap.py").read_text()
    assert "These models run without a BOS token" not in text and "Gemma-3's tokenizer prepends" in text


def _prose_and_code(text: str) -> tuple[int, int]:
    """Characters of markdown and of code in a jupytext percent-format notebook (cell markers and the header out)."""
    prose = code = 0
    for cell in re.split(r"^# %%", text, flags=re.M)[1:]:
        head, _, body = cell.partition("\n")
        if "[markdown]" in head:
            prose += len(body)
        else:
            code += len(body)
    return prose, code


def test_every_notebook_teaches_more_than_it_plumbs():
    """Issue 47 item 4: a notebook writes no table itself (its study's `run` does: no `save_table`, no `pd.concat`)
    and has at least 1.5× as much prose as code. Checked on a planted notebook: one `save_table` call, or code that
    outweighs its prose, fails."""
    assert _prose_and_code("# %% [markdown]\n# ab\n# %%\nx = 1\n") == (5, 6)

    def faults(name: str, text: str) -> list[str]:
        prose, code = _prose_and_code(text)
        out = [f"{name}: {call}" for call in ("save_table(", "pd.concat(") if call in text]
        return out + ([f"{name}: prose {prose} < 1.5 × code {code}"] if prose < 1.5 * code else [])

    planted = "# %% [markdown]\n# " + "a" * 40 + "\n# %%\nsave_table(t, 'probe', d)\n"
    assert faults("planted", planted) == ["planted: save_table("]
    assert faults("planted", "# %% [markdown]\n# a\n# %%\nx = 1\n") == ["planted: prose 4 < 1.5 × code 6"]
    notebooks = sorted((ROOT / "notebooks").glob("0*.py"))
    assert len(notebooks) == 9
    found = [f for nb in notebooks for f in faults(nb.name, nb.read_text())]
    assert not found, found
