"""The profile (linrec.app.profile): every parameter declared once, with one default; a profile file loaded over those
defaults and checked in one line; and what each notebook binds from it, found by running the notebook's own first
two cells (its parameters cell, papermill's injection as the runner makes it, and the cell that loads the profile)."""

import re
from dataclasses import MISSING, fields

import pytest

from linrec.analyses import SCREENING_WINDOWS
from linrec.app.notebooks import _injected, _with_overrides, notebooks
from linrec.app.profile import SCHEMA, SECTIONS, TYPES, Profile, _fits, load_profile, profile_path, read_profile
from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.stats import N_BOOT

ROOT = project_root(__file__)
PROFILES = sorted((ROOT / "params").glob("*.yaml"))
INJECTED = {"profile_file", "overrides"}  # what a notebook's parameters cell declares: all papermill sets


def default_of(name: str):
    f = SCHEMA[name][1]
    return f.default if f.default_factory is MISSING else f.default_factory()


def first_cells(nb) -> tuple[str, str]:
    """The source of a jupytext notebook's parameters cell and of the cell after it."""
    text = nb.read_text()
    heads = re.findall(r"^# %%.*$", text, flags=re.M)
    bodies = re.split(r"^# %%.*$", text, flags=re.M)[1:]
    i = next(k for k, h in enumerate(heads) if 'tags=["parameters"]' in h)
    return bodies[i], bodies[i + 1]


def bound(nb, injected: dict | None = None) -> dict:
    """The names a notebook holds after its parameters cell, papermill's `injected` values and its next cell."""
    params, load = first_cells(nb)
    ns: dict = {}
    exec(params, ns)
    ns.update(injected or {})
    exec(load, ns)
    return ns


@pytest.fixture
def in_lab(monkeypatch):
    """Jupyter Lab runs a notebook in notebooks/, not in the project root."""
    monkeypatch.chdir(ROOT / "notebooks")


def test_each_parameter_is_declared_once_with_a_default_of_its_own_type():
    declared = [f.name for cls in SECTIONS.values() for f in fields(cls)]
    assert len(declared) == len(set(declared)) == len(SCHEMA)  # no name in two sections
    assert not set(SCHEMA) & {*SECTIONS, *(f.name for f in fields(Profile)), "values", "notebook"}
    for name in SCHEMA:
        assert _fits(default_of(name), TYPES[name]), f"{name}'s default {default_of(name)!r} is not a {TYPES[name]}"


def test_every_profile_in_params_loads_with_its_files_values_over_the_defaults():
    for path in PROFILES:
        p = load_profile(path, root=ROOT)
        written = read_profile(path)
        assert p.name == path.stem and set(p.values()) == set(SCHEMA)
        for name, value in p.values().items():
            if name in written:
                assert value == written[name], (path.name, name)
            elif name == "results_dir":
                assert value == f"results/{path.stem}"  # a profile that names no folder writes under its own
            elif name not in ("figures_dir", "report_path"):
                assert value == default_of(name), (path.name, name)
    assert load_profile("smoke", root=ROOT) == load_profile("params/smoke.yaml", root=ROOT)  # by name or path


def test_the_default_profile_is_the_schemas_defaults_and_states_only_what_differs():
    """params/default.yaml states no value the schema also declares (the two could drift): where it is silent the
    default profile's values are the schema's defaults; what it states are its output paths, which differ."""
    written = read_profile(ROOT / "params" / "default.yaml")
    for name, value in written.items():
        assert value != default_of(name), f"params/default.yaml repeats {name}'s default {value!r}; delete that line"
    p = load_profile("default", root=ROOT)
    for name in set(SCHEMA) - set(written) - {"results_dir"}:
        assert getattr(p, name) == default_of(name), name
    assert (p.results_dir, p.figures_dir, p.report_path, p.readme) == (
        "results/default",
        "figures",
        "paper/report.md",
        "README.md",
    )


@pytest.mark.parametrize("where", ["file", "-p"])
def test_an_unknown_key_is_one_line_naming_it(tmp_path, where):
    f = tmp_path / "p.yaml"
    f.write_text("probe_rowz: 5\n" if where == "file" else "seed: 1\n")
    overrides = {"probe_rowz": 5} if where == "-p" else None
    with pytest.raises(LinrecError) as err:
        load_profile(f, overrides, ROOT)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{f if where == 'file' else '-p'}: unknown parameter(s) probe_rowz;")
    assert "known: " in msg and "probe_rows" in msg


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("n_boot", "lots", "n_boot must be a whole number (linrec.app.profile declares n_boot: int = 2000), got 'lots"),
        ("probe_rows", 1.5, "probe_rows must be a whole number or null"),
        ("probe_without_first", 1, "probe_without_first must be true or false"),
        ("route_corpora", ["web", 3], "route_corpora must be a list of strings"),
        ("heal", [1], "heal must be a mapping"),
    ],
)
def test_a_wrong_type_is_one_line_naming_the_key_and_the_fix(tmp_path, name, value, words):
    f = tmp_path / "p.yaml"
    for where, overrides in ((str(f), None), ("-p", {name: value})):
        f.write_text(f"{name}: {value!r}\n".replace("'", '"') if overrides is None else "seed: 1\n")
        with pytest.raises(LinrecError) as err:
            load_profile(f, overrides, ROOT)
        msg = str(err.value)
        assert "\n" not in msg and msg.startswith(f"{where}: {words}") and msg.endswith("; fix that line"), msg


def test_each_notebooks_parameters_cell_declares_only_what_papermill_injects():
    for nb in notebooks(ROOT):
        params, _ = first_cells(nb)
        ns: dict = {}
        exec(params, ns)
        assert set(ns) - {"__builtins__"} == INJECTED, nb.name
        assert profile_path(ns["profile_file"], ROOT) == ROOT / "params" / "default.yaml" and ns["overrides"] == {}


def test_run_all_in_lab_binds_the_default_profile(in_lab):
    """No injection: every name a notebook binds is the default profile's value for that notebook, and each name
    holds the parameter of the same name (a swapped pair would bind the other's value)."""
    default = load_profile("default", root=ROOT)
    for nb in notebooks(ROOT):
        ns = bound(nb)
        view = default.notebook(nb.name[:2])
        names = set(ns) & set(SCHEMA)
        assert vars(ns["p"]) == vars(view), nb.name  # what a study's run(p) is handed: the whole profile
        assert set(ns) - {"__builtins__"} <= names | INJECTED | {"p", "load_profile"}, nb.name  # nothing else bound
        for name in names:
            assert ns[name] == getattr(view, name), (nb.name, name)


def test_an_override_reaches_each_notebooks_bound_value_as_the_runner_injects_it(tmp_path):
    """`linrec figures --params params/smoke.yaml -p seed 7 --out DIR`: what the runner injects makes every
    notebook bind seed 7 and write under DIR; the other values are the smoke profile's."""
    smoke = load_profile("smoke", root=ROOT)
    given = _injected(profile_path("params/smoke.yaml", ROOT), _with_overrides({"seed": 7}, tmp_path), ROOT)
    assert given["profile_file"] == "params/smoke.yaml"  # relative: the executed notebook reads the same anywhere
    for nb in notebooks(ROOT):
        ns = bound(nb, given)
        assert ns["p"].seed == 7 and ns["p"].results_dir == str(tmp_path), nb.name  # what a study's run(p) reads
        assert ns.get("seed", 7) == 7 and ns.get("results_dir", str(tmp_path)) == str(tmp_path), nb.name
        if "models" in ns:
            assert ns["models"] == smoke.models == ["first:6:smollm2-135m"]
    probe = bound(ROOT / "notebooks" / "03_bilinear_probe.py", {**given, "overrides": {"probe_rows": 100}})
    assert probe["p"].probe_rows == 100 and probe["seed"] == smoke.seed  # one override, the rest the profile's


def test_n_boot_and_screening_windows_have_one_default_every_notebook_reads():
    """n_boot and screening_windows each have one default (linrec.stats.N_BOOT, linrec.analyses.SCREENING_WINDOWS),
    the same in every notebook; a profile or an override that sets one wins everywhere (the training profiles draw
    1000 resamples and screen on 2 windows)."""
    default, smoke = load_profile("default", root=ROOT), load_profile("smoke", root=ROOT)
    training = load_profile("training", root=ROOT)
    assert {default.notebook(nb).n_boot for nb in ("03", "06", "07", "08")} == {N_BOOT}
    assert {default.notebook(nb).screening_windows for nb in ("06", "08")} == {SCREENING_WINDOWS}
    assert read_profile(ROOT / "params" / "training.yaml")["n_boot"] == training.notebook("08").n_boot == 1000
    assert training.notebook("08").screening_windows == 2
    assert load_profile("smoke", {"n_boot": 50}, ROOT).notebook("08").n_boot == 50
    with pytest.raises(LinrecError, match="no notebook '10'"):
        smoke.notebook("10")
    with pytest.raises(AttributeError, match="no parameter 'probe_rowz'"):
        smoke.probe_rowz  # noqa: B018
