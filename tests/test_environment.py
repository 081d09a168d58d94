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
