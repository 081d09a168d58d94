"""One source of truth for the environment, and CI runs the README's own test command."""

import re

import tomllib
import yaml

from linrec.base.files import project_root

ROOT = project_root(__file__)


def test_environment_yml_installs_this_package_and_nothing_else():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip == ["-e .[dev]"]  # every pin comes from pyproject.toml
    conda = [d for d in deps if isinstance(d, str)]
    py = next(d for d in conda if d.startswith("python"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lo = re.search(r">=\s*3\.(\d+)", project["requires-python"]).group(1)
    assert int(py.split("=")[-1].split(".")[1]) >= int(lo)
    assert set(conda) <= {py, "pip"}


def test_torch_is_pinned_to_the_cpu_wheel():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "torch==2.13.0" in deps
    for d in deps:  # every runtime dependency is pinned exactly, so pip never drifts to a CUDA torch
        assert "==" in d, d


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", readme, flags=re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
    assert len(commands) == 2, commands  # figures; tests
    test_cmd = commands[1]
    assert test_cmd in [line.strip() for line in ci.splitlines()]


def test_the_readme_is_short_links_only_pages_that_exist_and_types_no_measured_number():
    """The README is the front page (what this is, two commands, the verdicts, the notebooks, your own model);
    reference material lives in docs/. Numbers in its prose would go stale: measured ones come only from the
    generated results block, the rest of the measurements from docs/performance.md's generated block."""
    from linrec.outputs.report import README_END, README_START

    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 170
    pages = sorted(ROOT.glob("docs/*.md"))
    assert pages
    for md in [ROOT / "README.md", *pages]:
        for link in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", md.read_text()):
            assert (md.parent / link).exists(), (md.name, link)
    prose = text.split(README_START)[0] + text.split(README_END)[1]
    prose = re.sub(r"```.*?```|9[05] %", "", prose, flags=re.S)  # code, and interval levels (not measurements)
    measured = re.findall(r"\d[\d.,]*\s*(?:min\b|minutes|seconds|s\b|GB|GiB|MB|%|×)", prose)
    assert not measured, measured


def test_without_the_fetched_models_the_session_stops_at_collection_with_one_line(tmp_path):
    """tests/conftest.py: when the selected tests include `models` ones and nothing is fetched, pytest stops before
    running any, with one line saying how to fetch the models and how to run the rest; under pytest-xdist too (there a
    worker cannot stop the session: pytest.exit in a worker is an INTERNALERROR). `-m "not models"` runs the rest."""
    import os
    import subprocess
    import sys

    import pytest

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # a session of its own, not a worker's
    env["LINREC_CACHE"] = str(tmp_path / "empty")

    def pytest_on_integration(*args):
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t"), *args]
        return subprocess.run([*cmd, "tests/test_integration.py"], cwd=ROOT, env=env, capture_output=True, text=True)

    stopped = pytest_on_integration("-n", "1")
    said = stopped.stdout + stopped.stderr
    lines = [ln for ln in said.splitlines() if "make fetch" in ln]
    assert stopped.returncode == pytest.ExitCode.INTERRUPTED and len(lines) == 1, said
    assert "smollm2-135m" in lines[0] and "linrec fetch smollm2-135m minilm-l6 wiki web code" in lines[0]
    assert '-m "not models"' in lines[0] and "INTERNALERROR" not in said and " passed" not in said
    rest = pytest_on_integration("-n", "0", "-m", "not models")  # every test there is a `models` one
    assert rest.returncode == pytest.ExitCode.NO_TESTS_COLLECTED and "make fetch" not in rest.stdout, rest.stdout
    from conftest import FETCHED  # what the session looks for is what `make test` fetches before it runs pytest

    assert f"$(BIN)/linrec fetch {' '.join(FETCHED)}\n\t$(BIN)/python -m pytest\n" in (ROOT / "Makefile").read_text()
