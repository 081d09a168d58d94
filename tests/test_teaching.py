"""What a reader of a notebook or the README sees (issue 50, items 3 and 7): a cell that quotes another profile's
results asks first whether they apply, the README's hero caption promises only what its figure draws, and notebook 06
says which models run without a BOS token; and the primer, notebooks/00_method.py, executed as Lab runs it (issue 65
item 5; here, not in tests/test_notebooks.py, so that under `--dist loadfile` its 20–36 s run on the other worker
beside the smoke notebooks)."""

import re

import pytest

from linrec.base.files import project_root

ROOT = project_root(__file__)


def test_the_notebooks_quote_another_profile_only_after_asking_whether_it_applies():
    """A notebook reads another profile's table only through `linrec.app.profile.results`, which asks whether that
    profile measured what this run measures (notebook 04 printed the wiki replication under -p corpus code): no
    notebook names another profile's results folder in its code, or asks the settings itself."""
    for nb in sorted((ROOT / "notebooks").glob("0*.py")):
        code = "\n".join(line for line in nb.read_text().splitlines() if not line.lstrip().startswith("#"))
        for profile in ("full", "curve", "training", "zoo"):
            assert f'"results" / "{profile}"' not in code and f'results/{profile}"' not in code, (nb.name, profile)
        assert 'load_profile("full"' not in code and ".differs" not in code, nb.name


def test_the_readmes_hero_caption_promises_only_what_its_figure_draws():
    """The front page leads with R²_lin per block (fig2_r2_lin.png), the quantity the project measures (issue 65: it
    led with the swap's ΔPPL); its caption names R²_lin and not ΔPPL, which fig2_swap.png draws. The front page names
    the stand-in models and the paper's, and says what each verdict word means."""
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"!\[([^\]]*)\]\((figures/[^)]+)\)", readme)
    assert first[2] == "figures/fig2_r2_lin.png" and (ROOT / first[2]).is_file()
    assert "R²_lin" in first[1] and "ΔPPL" not in first[1]
    front = readme[: readme.index("<!-- results:start -->")]
    for name in ("SmolLM2-135M", "Gemma-3-270M", "zoo", "GPT-2", "Pythia-160m", "llama-160m"):
        assert name in front, name
    from linrec.claims.rules import VERDICTS

    for word in VERDICTS:
        assert f"**{word[:1].upper() + word[1:]}**" in front or f"**{word}**" in front, word


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
    assert len(notebooks) == 10  # 00_method (the primer), 01-08 (the stages), 09 (the report)
    found = [f for nb in notebooks for f in faults(nb.name, nb.read_text())]
    assert not found, found


def test_the_primer_derives_the_method_in_small_steps_before_any_library_call():
    """Issue 65 item 5: notebooks/00_method.py forms the Gram matrix, solves the normal equations and checks them
    against np.linalg.lstsq, and computes held-out R² by hand, before it imports anything from linrec; no code cell is
    longer than 15 lines; notebook 02 shows one block's Gram, solve and R² before it calls its study."""
    text = (ROOT / "notebooks" / "00_method.py").read_text()
    first_linrec = text.index("from linrec")
    for step in ("X1.T @ X1", "np.linalg.solve(G, C)", "np.linalg.lstsq", "sse / sst"):
        assert -1 < text.find(step) < first_linrec, step
    for cell in re.split(r"^# %%.*$", text, flags=re.M)[1:]:
        if not cell.lstrip().startswith("# "):  # a code cell
            assert len([ln for ln in cell.strip().splitlines() if ln.strip()]) <= 15, cell[:200]
    nb02 = (ROOT / "notebooks" / "02_linear_ceiling.py").read_text()
    assert -1 < nb02.find("np.linalg.solve(Cxx, Cxy)") < nb02.find("study.run(p)")


def test_the_readme_and_running_say_what_run_all_on_a_fresh_clone_does_and_the_quicker_paths():
    """Issue 65, item 2: the README said Run All "reads the captures make figures cached", which holds only after a
    `make figures`; on a fresh clone Run All captured for most of an hour. Both pages say it computes there, that each
    capture says its cost first and its bar shows in the cell, and name the quicker paths."""
    for page in ("README.md", "docs/running.md"):
        text = " ".join((ROOT / page).read_text().split())
        assert "Run All on a fresh clone computes" in text.replace("**", ""), page
        for words in ("make figures", 'profile_file = "params/smoke.yaml"'):
            assert words in text, (page, words)
    # how long: said where the time is measured, never typed (issue 86 item 5; tests/test_docs.py): the cell's estimate
    # from this machine's earlier captures, else linrec.collect.reuse.REFERENCE_SECONDS
    assert "REFERENCE_SECONDS" in (ROOT / "docs/running.md").read_text()
    assert "Run All reads the captures `make figures` cached" not in " ".join(
        (ROOT / "README.md").read_text().replace("\n", " ").split()
    )


@pytest.mark.models
def test_00_method_derives_r2_by_hand_and_agrees_with_linrec_to_1e_10():
    """Issue 65 item 5: the primer (notebooks/00_method.py, not a stage) builds R²_lin in numpy: the normal equations
    against np.linalg.lstsq, held-out R² by hand on two toy blocks, then SmolLM2's block 0 by hand and through linrec.
    Executed as Lab would run it (in notebooks/), in under a minute; its own last cell asserts the 1e-10 agreement, and
    the numbers it printed are read back here."""
    import time

    import jupytext
    from nbclient import NotebookClient

    from linrec.studies.stages import PRIMER_FILE

    nb = jupytext.read(ROOT / "notebooks" / f"{PRIMER_FILE}.py")
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
                   ).execute()  # fmt: skip
    took = time.perf_counter() - t0
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    lstsq = float(re.search(r"largest difference from lstsq: (\S+)", printed)[1])
    toy = dict(re.findall(r"(affine block \+ noise|GELU block): held-out R²_lin = (\S+)", printed))
    hand, ours = (float(re.search(rf"^{who}\s+(\S+)$", printed, flags=re.M)[1]) for who in ("by hand", "linrec"))
    assert lstsq < 1e-12 and float(toy["affine block + noise"]) > 0.98 and 0.5 < float(toy["GELU block"]) < 0.8
    assert abs(hand - ours) < 1e-10 and 0.5 < ours < 1, printed
    assert took < 60, took
