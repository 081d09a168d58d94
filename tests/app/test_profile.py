"""The profile (linrec.app.profile): every parameter declared once, with one default; a profile file loaded over those
defaults and checked in one line (nested keys and empty lists included), overrides read as papermill reads them;
what each notebook binds from it, found by running the notebook's own first two cells (its parameters cell,
papermill's injection as the runner makes it, and the cell that loads the profile); and another profile's results
applied only to what it measured."""

import re
from dataclasses import fields

import pytest
import yaml

from helpers import single_line as _single_line
from linrec.analyses import SCREENING_WINDOWS
from linrec.app.notebooks import _injected, _with_overrides, notebooks
from linrec.app.profile import (
    load_profile,
    profile_path,
    read_profile,
    results,
)
from linrec.base.errors import LinrecError
from linrec.base.files import project_root
from linrec.base.params import fits
from linrec.stats import N_BOOT
from linrec.studies.stages import DECLARED, SECTIONS, STUDIES, Profile

ROOT = project_root(__file__)
PROFILES = sorted((ROOT / "params").glob("*.yaml"))
INJECTED = {"profile_file", "overrides"}  # what a notebook's parameters cell declares: all papermill sets


def default_of(name: str):
    return DECLARED[name].default


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
    """Jupyter Lab runs a notebook in notebooks/, not in the project root; an experiment of this checkout's own
    (notebooks/overrides.yaml, which git ignores) is not the default run these tests check."""
    import linrec.app.profile as profile_module

    monkeypatch.chdir(ROOT / "notebooks")
    monkeypatch.setattr(profile_module, "LAB_OVERRIDES", "notebooks/no-such-overrides.yaml")


def test_each_parameter_is_declared_once_with_a_default_of_its_own_type_and_what_it_does():
    """The run's own sections and each study's (linrec.studies.stages) declare every parameter once: no name in two
    sections or shared with a profile's own attributes, each default of its declared type, each with its `about`."""
    declared = [f.name for cls in SECTIONS.values() for f in fields(cls)]
    assert len(declared) == len(set(declared)) == len(DECLARED)  # no name in two sections
    assert not set(DECLARED) & {*(f.name for f in fields(Profile)), "values", "notebook", "section"}
    assert list(SECTIONS)[2:] == [s.name for s in STUDIES if s.params]  # a study's section is named as the study
    for d in DECLARED.values():
        assert fits(d.default, d.hint), f"{d.name}'s default {d.default!r} is not a {d.hint}"
        assert d.about and "\n" not in d.about, f"{d.name} does not say what it does"


def test_a_section_is_read_whole_by_its_name_and_an_unknown_one_is_one_line():
    p = load_profile("smoke", root=ROOT)
    assert p.section("swap").screening_windows == p.screening_windows and p.section("corpora").corpora == p.corpora
    with pytest.raises(LinrecError, match=r"no section 'swaps'; its sections are run, outputs, ceiling"):
        p.section("swaps")


def test_every_profile_in_params_loads_with_its_files_values_over_the_defaults():
    for path in PROFILES:
        p = load_profile(path, root=ROOT)
        written = read_profile(path)
        assert p.name == path.stem and set(p.values()) == set(DECLARED)
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
    for name in set(DECLARED) - set(written) - {"results_dir"}:
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
    assert "\n" not in msg and msg.startswith(
        f"{f if where == 'file' else '-p'}: unknown parameter(s) probe_rowz (did you mean 'probe_rows'?);"
    )
    assert "known: " in msg and "probe_rows" in msg


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("n_boot", "lots", "n_boot must be a whole number (linrec.studies.stages.Run declares n_boot: int = 2000)"),
        ("rank", "x", "rank must be a whole number (linrec.studies.stages.ProbeParams declares rank: int = 16), got"),
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
        names = set(ns) & set(DECLARED)
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


def test_the_capture_settings_are_one_section_that_every_capturing_notebook_takes_whole():
    """No profile parameter is a capture setting of its own (they would have to be kept equal by hand): the profile
    has one `capture` section (a mapping, {} = CaptureConfig's defaults) that every capturing notebook binds and
    passes on whole; the profiles set it once."""
    from linrec.collect.config import SETTINGS

    own = sorted(set(DECLARED) & (set(SETTINGS) - {"seed"}))
    assert not own, f"the profile declares capture settings {own}; read them from its `capture` section"
    assert DECLARED["capture"].default == {}
    calls = re.compile(r"\b(get_captures?|replicate_captures)\(")
    for nb in notebooks(ROOT):  # a notebook captures through its study (linrec.studies), never itself
        assert not calls.search(nb.read_text()), f"{nb.name} captures itself; its study's run(p) does"
    studies = [m for m in sorted((ROOT / "lib" / "linrec" / "studies").glob("*.py")) if calls.search(m.read_text())]
    assert len(studies) >= 5, studies
    for module in studies:  # each capturing study asks for the profile's request, its capture section whole
        assert "p.capture_config(" in module.read_text(), module.name
    for profile in sorted((ROOT / "params").glob("*.yaml")):
        load_profile(profile, root=ROOT)  # every profile's capture section is known and well typed


@pytest.mark.parametrize(
    "text, needles",
    [
        ("models: [a, b\ntokens: 5\n", ["line 2", "not valid YAML"]),
        ("models: a\n  tokens: 5\n", ["line 2"]),
        ("- a\n- b\n", ["mapping"]),
        ("tokenz: 2560\n", ["unknown parameter(s) tokenz", "known:", "tokens"]),
        # values of the wrong type (issue 30): the type linrec.app.profile declares
        ("capture: {tokens: lots}\n", ["capture: tokens must be a whole number", "'lots'", "fix that line"]),
        ("capture: {tokens: 20480.5}\n", ["tokens must be a whole number"]),
        ("capture: {tokenz: 2560}\n", ["capture: unknown capture setting(s) tokenz", "known: seq_len, tokens"]),
        ("capture: [1, 2]\n", ["capture must be a mapping"]),
        ("models: smollm2-135m\n", ["models must be a list of strings"]),
        ("models: [1, 2]\n", ["models must be a list of strings"]),
        ("probe_rows: many\n", ["probe_rows must be a whole number or null"]),
        ("readme: true\n", ["readme must be a string or null"]),
        ("seed: true\n", ["seed must be a whole number"]),  # a bool is not a number here
        ("budget_ppl: [1]\n", ["budget_ppl must be a number"]),
        ("results_dir: 3\n", ["results_dir must be a string"]),
        ("cross_pairs: [[a, 3]]\n", ["cross_pairs must be a list of lists or null", "cross_pairs: list[list[str]]"]),
        ("dose_kappas: [1.0e+2, big]\n", ["dose_kappas must be a list of numbers", "'big'"]),
    ],
)
def test_bad_profiles_are_one_line_errors(tmp_path, text, needles):
    f = tmp_path / "p.yaml"
    f.write_text(text)
    with pytest.raises(LinrecError) as err:
        load_profile(f, root=ROOT)
    msg = str(err.value)
    assert "\n" not in msg and str(f) in msg
    for n in needles:
        assert n in msg, msg


def test_a_profile_file_is_read_as_written_and_checked_when_loaded(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("tokenz: 2560\n")
    assert read_profile(f) == {"tokenz": 2560}  # the file as written: no defaults, no checks
    with pytest.raises(LinrecError, match="tokenz"):
        load_profile(f, root=ROOT)


def test_profile_values_of_the_declared_types_pass(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("capture: {tokens: 4096, test_frac: 0.25}\nbudget_ppl: 2\nprobe_rows: null\ntest_windows: 3\n"
                 "readme: README.md\nmodels: [a]\ncross_band: null\ndecomposition_rows: null\n")  # fmt: skip
    p = load_profile(f, root=ROOT)
    assert p.budget_ppl == 2  # a whole number where a float is declared is fine
    assert p.cross_band is None and p.decomposition_rows is None  # numbers by default; None (every one) allowed


@pytest.mark.parametrize(
    "pairs, want",
    [
        ([["corpus", "code"]], {"corpus": "code"}),
        (
            [["seed", "3"], ["budget_ppl", "0.5"], ["cross_feeding", "False"], ["probe_rows", "None"]],
            {"seed": 3, "budget_ppl": 0.5, "cross_feeding": False, "probe_rows": None},
        ),  # fmt: skip
        ([["models", "[smollm2-135m, gemma3-270m]"]], {"models": ["smollm2-135m", "gemma3-270m"]}),
        ([["capture", "{tokens: 2560, seq_len: 64}"]], {"capture": {"tokens": 2560, "seq_len": 64}}),
        ([["learning_rate", "1e-3"]], {"learning_rate": 1e-3}),  # a number as papermill reads it (YAML: a string)
    ],
)
def test_overrides_are_read_as_papermill_reads_p(pairs, want):
    from linrec.app.profile import parse_overrides

    assert parse_overrides(pairs) == want


@pytest.mark.parametrize(
    "pairs, needles",
    [
        ([["corpuz", "code"]], ["-p: unknown parameter(s) corpuz", "known:"]),
        ([["seed", "many"]], ["-p: seed must be a whole number"]),
        ([["capture", "{tokenz: 5}"]], ["unknown capture setting(s) tokenz"]),
        ([["models", "[a, b"]], ["-p models [a, b: not a valid YAML list or mapping"]),
    ],
)
def test_a_bad_override_is_one_line_before_any_notebook_runs(pairs, needles):
    from linrec.app.profile import parse_overrides

    with pytest.raises(LinrecError) as err:
        load_profile("default", parse_overrides(pairs), ROOT)
    assert "\n" not in str(err.value)
    for n in needles:
        assert n in str(err.value), str(err.value)


# ---- case 9: a profile's nested keys and empty lists, checked when it is loaded ------------------------------------
@pytest.mark.parametrize(
    "profile, needles",
    [
        ({"training": {"d_model": "lots"}}, ["training: d_model must be a whole number", "'lots'"]),
        ({"training": {"d_modle": 16}}, ["unknown training setting(s) d_modle", "known: layout, d_model"]),
        ({"training": {"steps": 1.5}}, ["training: steps must be a whole number"]),
        ({"training": {"lr": float("nan")}}, ["training: lr must be a finite number > 0"]),
        ({"training": {"d_model": 30, "n_heads": 4}}, ["training: d_model 30 must split into 4 heads"]),
        ({"training": {"device": "cuda"}}, ["unknown training setting(s) device", "profile's own key"]),
        ({"models": []}, ["models is empty", "models: [smollm2-135m]"]),
        ({"corpora": []}, ["corpora is empty"]),
        ({"train_init_seeds": []}, ["train_init_seeds is empty"]),
        ({"init_seeds": []}, ["init_seeds is empty"]),
        ({"capture": {"tokens": -5}}, ["capture: tokens=-5 is out of range", "tokens=20480"]),
        ({"capture": {"seq_len": 4096, "tokens": 1024}}, ["capture: --seq-len 4096 is longer"]),
        ({"cross_pairs": [["gpt2"]]}, ["cross_pairs must be a list of [inputs model, FFN model] pairs"]),
        # the healing mappings (a typo ran the default 50 steps, found only in notebook 06; issue 47)
        ({"heal": {"stpes": 30}}, ["heal: unknown healing setting(s) stpes", "known: ks, modes, steps"]),
        ({"heal": {"ks": [1, "two"]}}, ["heal: ks must be a list of whole numbers", "'two'"]),
        ({"heal_trained": {"lr": "fast", "runs": ["gelu-i0-d0"]}}, ["heal_trained: lr must be a number"]),
        ({"heal_trained": {"runs": "gelu-i0-d0"}}, ["heal_trained: runs must be a list of run names"]),
    ],
)
def test_a_profiles_nested_keys_and_empty_lists_are_checked_when_it_is_loaded(cli, tmp_path, monkeypatch, profile,
                                                                               needles):  # fmt: skip
    """`linrec figures` stops at the profile, before notebook 01 (`models: []` was an IndexError there; a typo in
    `training:` failed in notebook 08 after 01–07 had run)."""
    import yaml

    import linrec.app.notebooks

    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**profile, "results_dir": str(tmp_path / "results")}))
    monkeypatch.setattr(linrec.app.notebooks, "notebooks", lambda root: pytest.fail("a notebook list was read"))
    code, _, err = cli("figures", "--params", path)
    _single_line(code, err, str(path), *needles)


def test_the_repositorys_profiles_load(tmp_path):
    from linrec.app.profile import load_profile
    from linrec.base.files import project_root

    root = project_root()
    for profile in sorted((root / "params").glob("*.yaml")):
        load_profile(profile, root=root)


BOTH = {"models": ["smollm2-135m", "gemma3-270m"]}  # the default with params/full.yaml's two models


def _source(overrides: dict, name: str = "r2_replicates_summary"):
    """Where notebook 02 of the default profile with `overrides` reads table `name` it does not compute
    (`results(p, root).get(name, own=False)`, its source)."""
    return results(load_profile("default", overrides).notebook("02"), ROOT).get(name, own=False)


def test_another_profiles_results_apply_only_to_what_it_measured():
    """A declared fallback's run is read only where it measured this run's corpus, models, seed and capture; else
    the source names the profile with how it differs, in words, and nothing is read. Rows kept (`sample_rows`) change
    no number a quoted table holds. Planted: `results` without its `applies` quotes the other corpus and fails."""
    assert _source(BOTH).source.differs == {}  # rows kept differ (30,000): no number quoted does
    assert _source(BOTH, "r2_curve_overview").source.differs == {}
    code = _source({**BOTH, "corpus": "code"})
    assert code.table is None and code.source.differs == {"full": "corpus 'wiki', not this run's 'code'"}
    models = _source({}).source.differs["full"]  # SmolLM2 alone
    assert models.startswith("models smollm2-135m and gemma3-270m")  # in words, not a list repr (issue 90)
    assert _source({**BOTH, "seed": 1}).source.differs == {"full": "seed 0, not this run's 1"}
    assert _source({**BOTH, "capture": {"tokens": 2560}}, "r2_curve_overview").source.differs == {
        "curve": "capture tokens 20480, not this run's 2560"
    }
    assert _source({**BOTH, "capture": {"sample_rows": 0}}).source.differs == {}


def test_a_notebook_quotes_another_profile_only_where_it_measured_the_same():
    """`results`, the notebooks' read of another profile's table: the stand-in's last run where it measured this
    run's corpus, models, seed and capture (the default with full's two models against params/full.yaml)."""
    table, source = _source(BOTH)
    assert source.profile == "full" and source.folder == ROOT / "results" / "full" and table is not None
    assert not source.own and source.why_stale is None


@pytest.mark.parametrize(
    "values, where, needles",
    [
        ({"corpus": "cod"}, "file", ["corpus: unknown corpus 'cod' (did you mean 'code'?)"]),
        ({"corpora": ["wiki", "wbe"]}, "-p", ["-p: corpora: unknown corpus 'wbe' (did you mean 'web'?)"]),
        ({"route_corpora": ["no/such/dir"]}, "file", ["route_corpora: unknown corpus 'no/such/dir'"]),
        ({"models": ["smollm2-13m"]}, "-p", ["-p: models: unknown model 'smollm2-13m'", "'smollm2-135m'?"]),
        ({"models": ["first:6:gemma3-207m"]}, "file", ["models: unknown model 'gemma3-207m'", "'gemma3-270m'?"]),
        ({"encoder_models": ["./no-such.gguf"]}, "file", ["encoder_models: model path ./no-such.gguf does not exist"]),
        ({"cross_pairs": [["smollm2-135m", "init:x:smollm2-135m"]]}, "-p", ["cross_pairs: random-init model spec"]),
    ],
)
def test_corpus_and_model_names_are_checked_at_load_with_did_you_mean(tmp_path, values, where, needles):
    """Issue 65 item 3: `-p corpus cod` passed the load (a string is a string) and failed in a notebook's cell 6 after
    29-54 s. Every corpus and model a profile names is checked at load, from a file or `-p`, before any notebook."""
    import yaml

    f = tmp_path / "p.yaml"
    f.write_text(yaml.safe_dump(values) if where == "file" else "seed: 1\n")
    with pytest.raises(LinrecError) as err:
        load_profile(f, values if where == "-p" else None, ROOT)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{f}:" if where == "file" else "-p:"), msg
    for n in needles:
        assert n in msg, msg


def test_names_a_run_can_find_pass_the_load(tmp_path):
    """Offline names, init:/first: forms, hub ids (gpt2, org/name), the hub's corpus with a split, and a folder relative
    to the project root (where the notebooks run) all pass; so does every profile in params/ (checked above)."""
    (tmp_path / "texts").mkdir()
    values = {"corpus": "wikitext-2:train", "corpora": ["wiki", "web", "code", str(tmp_path / "texts")],
              "models": ["gpt2", "EleutherAI/pythia-160m", "init:0:first:6:smollm2-135m", "notebooks"],
              "cross_pairs": [["smollm2-135m", "init:1:smollm2-135m"]]}  # fmt: skip
    p = load_profile("default", values, ROOT)
    assert p.models[-1] == "notebooks" and p.corpus == "wikitext-2:train"


def test_a_profile_that_trains_in_bf16_is_checked_against_its_own_device():
    """params/zoo_paper.yaml trains in bf16 on its device, cuda: it loads (its training section is checked with the
    profile's device, not the CPU's default); the same profile moved to the CPU is refused in one line naming the
    fix, at load, before any notebook."""
    p = load_profile("zoo_paper")
    assert p.device == "cuda" and p.training["precision"] == "bf16" and p.training["d_model"] == 768
    with pytest.raises(LinrecError, match="precision bf16 trains on a GPU.*use precision float32"):
        load_profile("zoo_paper", {"device": "cpu"})


def test_the_cpu_zoo_is_the_zoo_but_for_its_steps_and_where_it_writes():
    """params/zoo_cpu.yaml (the zoo trained on 2 CPU cores, issue 61) differs from params/zoo.yaml
    in the training steps and the output paths alone: a value changed in one and not the other would make its
    results/zoo_cpu/ another zoo than the one the report reads (planted: a learning rate or a seed list edited in
    one file fails)."""
    zoo, cpu = (yaml.safe_load((ROOT / "params" / f"{n}.yaml").read_text()) for n in ("zoo", "zoo_cpu"))
    paths = {"results_dir", "figures_dir", "report_path"}
    assert {k: v for k, v in zoo.items() if k not in paths | {"training"}} == {
        k: v for k, v in cpu.items() if k not in paths | {"training"}}  # fmt: skip
    assert {k: v for k, v in zoo["training"].items() if k != "steps"} == {
        k: v for k, v in cpu["training"].items() if k != "steps"}  # fmt: skip
    assert (zoo["training"]["steps"], cpu["training"]["steps"]) == (1500, 1000)
    assert all(str(cpu[k]).startswith("results/zoo_cpu") for k in paths)
    p = load_profile("zoo_cpu")
    assert p.device == "cpu" and p.training["steps"] == 1000


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_cross_pairs_of_exactly_two_names(n):
    """A cross pair is [inputs model, FFN model]: two names exactly. One fewer or one more (or none) is refused at
    load in one line that names the form; two pass. Planted: `len(p) == 2` → `len(p) >= 2` in
    linrec.app.profile.check_nested fails (a pair of three accepted); → `len(p) <= 2` fails (one accepted)."""
    from linrec.app.profile import check_nested
    from linrec.base.errors import LinrecError

    names = ["smollm2-135m", "init:1:smollm2-135m", "init:2:smollm2-135m"][:n]
    if n == 2:
        assert check_nested({"cross_pairs": [names]}, "p.yaml") is None
        return
    with pytest.raises(LinrecError, match=r"p.yaml: cross_pairs must be a list of \[inputs model, FFN model\] pairs"):
        check_nested({"cross_pairs": [["gpt2", "init:0:gpt2"], names]}, "p.yaml")
