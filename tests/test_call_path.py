"""benchmarks/call_path.py: the path a command's arguments take through the layers (issue 62's counts), checked on
hand-built call trees and on a real command that stops at its first check (no torch, under a second)."""

import importlib.util

from helpers import ROOT


def _call_path():
    spec = importlib.util.spec_from_file_location("linrec_benchmarks_call_path", ROOT / "benchmarks" / "call_path.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_counts_climbs_and_returns_on_a_hand_built_path():
    """cli → commands → capture → commands → models → commands: 4 modules; two climbs (capture and models back up to
    commands); two returns (commands, left twice, entered again twice). A path per root is counted on its own: cut
    after capture, the step capture → commands is no step at all."""
    cp = _call_path()
    path = ["app.cli", "app.commands", "collect.capture", "app.commands", "inputs.models", "app.commands"]
    assert cp.counts([path]) == {"modules": 4, "climbs": 2, "returns": 2}
    assert cp.counts([path[:3], path[3:]]) == {"modules": 4, "climbs": 1, "returns": 1}
    assert cp.counts([["app.cli", "collect.capture", "stats.moments", "app.commands"]])["climbs"] == 1  # not 2 down
    assert cp.layer("base.files") < cp.layer("stats.moments") < cp.layer("app.cli") < cp.layer("api")


def test_walk_goes_depth_first_once_per_function():
    """main calls a (in commands); a calls b and then c (both in capture): each edge is walked once (a loop's second
    call is no edge), into a callee and back to its caller, so a's two calls go down twice; consecutive visits to a
    module merged (b calling b2 in its own module stays one visit). A function reached twice is walked once."""
    cp = _call_path()
    main, a, b, c = "app.cli:main:1", "app.commands:a:1", "collect.capture:b:1", "collect.capture:c:9"
    b2, d = "collect.capture:b2:20", "inputs.models:d:1"
    assert cp.walk([(main, a), (a, b), (b, b2), (a, c)]) == [
        ["app.cli", "app.commands", "collect.capture", "app.commands", "collect.capture", "app.commands", "app.cli"]
    ]
    assert cp.walk([(main, a), (a, d), (main, d)]) == [["app.cli", "app.commands", "inputs.models", "app.commands",
                                                        "app.cli"]]  # fmt: skip


def test_trace_follows_the_arguments_of_a_real_command():
    """`linrec swap --corpus wikk` stops at its name check, before torch: every call goes into the request and the
    offline names; followed, only the calls handed the parsed arguments (the Namespace, a request) are kept, so the
    check of a plain string (linrec.inputs.offline) drops out."""
    cp = _call_path()
    argv = ["swap", "--model", "smollm2-135m", "--corpus", "wikk"]
    every = cp.walk(cp.trace(argv, follow=False))
    followed = cp.walk(cp.trace(argv, follow=True))
    assert len(every) == 1 and every[0][0] == every[0][-1] == "app.cli"
    assert {"app.commands", "app.requests", "inputs.offline"} <= set(every[0])
    assert followed[0][:3] == ["app.cli", "app.commands", "app.requests"]
    assert "inputs.offline" not in {m for path in followed for m in path}


def test_the_benchmarks_layers_are_the_packages_picture():
    """call_path.LAYERS is written out in the script; it must give every module the layer that the picture in
    lib/linrec/__init__.py gives it (tests/test_layers.py reads the picture), or a layer added there miscounts here."""
    from test_layers import _layer_of, _modules

    cp = _call_path()
    assert {m: cp.layer(m) for m in _modules()} == {m: _layer_of(m) for m in _modules()}
