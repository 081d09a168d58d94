"""benchmarks/peers.py times the same work for every method: each peer (nnsight, TransformerLens) collects exactly
the rows linrec's statistics are built from (same tokens, same blocks, same order), its two fits reproduce linrec's
ceiling, a method that runs out of its memory cap becomes a row instead of a crash, and the table's ratios and goal
lines follow the records. The peer tests need the optional bench extra (`pip install -e '.[bench]'`)."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import ROOT

BATCH, SEQ, TOKENS = 4, 32, 2048


def _peers():
    spec = importlib.util.spec_from_file_location("linrec_benchmarks_peers", ROOT / "benchmarks" / "peers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """The tiny llama saved to a folder, its windows, and linrec's capture of them keeping every row on disk."""
    from helpers import save_tiny_model, tiny_windows
    from linrec.collect.capture import run_capture
    from linrec.collect.config import CaptureConfig
    from linrec.inputs.models import load_model

    tmp = tmp_path_factory.mktemp("peers")
    model_dir = save_tiny_model(tmp / "model")
    loaded = load_model(model_dir)
    windows = tiny_windows(loaded.tokenizer, tokens=TOKENS, seq_len=SEQ)
    config = CaptureConfig(model_dir, "t", SEQ, TOKENS, 0, 0.2, sample_rows=int(windows.ids.numel()))
    capture = run_capture(loaded, windows, config, tmp / "capture", BATCH, progress=False)
    return model_dir, windows, capture


@pytest.fixture(scope="module", params=["nnsight", "transformer_lens"])
def library(request):
    """Each peer library, skipped with one line where the bench extra is not installed (before the capture is made)."""
    pytest.importorskip(
        request.param, reason=f"{request.param} is in the optional bench extra: pip install -e '.[bench]'"
    )
    return request.param


def test_each_peer_collects_linrecs_rows_and_its_fits_give_linrecs_ceiling(library, captured):
    """Plant a peer that keeps the block's output after the residual add (nnsight: `layers[i].output[0]`), or rows
    shifted by one position, and the row comparison fails; plant SST around the train mean in `r2_lstsq` and the R²
    comparison fails."""
    from linrec.inputs.models import load_model
    from linrec.stats.moments import Moments

    peers = _peers()
    model_dir, windows, capture = captured
    loaded = load_model(model_dir)  # a model of its own: TransformerLens's bridge edits the one it wraps
    run = peers.RUNNERS[library](loaded.model, loaded.tokenizer)
    dims = [(x.shape[-1], y.shape[-1]) for x, y in run(windows.ids[windows.train[:BATCH]])]
    X, Y, n_train = peers.collect(run, windows, BATCH, dims)
    assert len(X) == capture.n_blocks == 2 and n_train == capture.stats["train"][0].n
    for b in range(capture.n_blocks):
        x, y = capture.rows(b)  # every row, in capture order: train windows first, then test, position-major
        assert X[b].shape == x.shape and Y[b].shape == y.shape and len(x) == windows.ids.numel()
        np.testing.assert_allclose(X[b], x, rtol=0, atol=1e-5 * np.abs(x).max())
        np.testing.assert_allclose(Y[b], y, rtol=0, atol=1e-5 * np.abs(y).max())
        for split, rows in (("train", slice(None, n_train)), ("test", slice(n_train, None))):
            ours, theirs = capture.stats[split][b], Moments.of(X[b][rows], Y[b][rows])
            assert theirs.n == ours.n
            np.testing.assert_allclose(theirs.M, ours.M, rtol=0, atol=1e-5 * np.abs(ours.M).max())
    r2 = [capture.score(b).r2 for b in range(capture.n_blocks)]
    assert 0.05 < min(r2) and max(r2) < 0.999  # a real fit, neither trivial nor exact
    np.testing.assert_allclose(peers.r2_closed_form(X, Y, n_train), r2, rtol=0, atol=1e-6)
    np.testing.assert_allclose(peers.r2_lstsq(X, Y, n_train), r2, rtol=0, atol=1e-6)


def test_a_method_over_its_memory_cap_is_a_row_with_the_error_not_a_crash(tmp_path):
    """The worker caps its own address space: an allocation past the cap is a MemoryError, which becomes the row's
    error (its first line), and the process ends normally. Drop the setrlimit and the 3 GiB array is allocated (here
    without cap: 0). The peak is the child's own: read from ru_maxrss it would be at least this process's (planted)."""
    script = (
        "import importlib.util, json, sys, types\n"
        f"spec = importlib.util.spec_from_file_location('p', {str(ROOT / 'benchmarks' / 'peers.py')!r})\n"
        "peers = importlib.util.module_from_spec(spec); spec.loader.exec_module(peers)\n"
        "import numpy as np\n"
        "def measure(method, args):\n"
        "    keep = np.empty(3 * 2**30, np.uint8)\n"  # address space only: never touched, so never resident
        "    return {'seconds': 1.0, 'r2': [float(len(keep) / 2**30)]}\n"
        "peers.measure = measure\n"
        "cap = float(sys.argv[1])\n"
        "args = types.SimpleNamespace(worker='nnsight', tokens=204800, mem_cap_gib=cap)\n"
        "print(json.dumps(peers.worker(args)))\n"
    )
    import resource

    held = np.ones(300 * 2**20, np.uint8)  # this process now peaks above 300 MiB: its children must not report that
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 300 * 1024 and held[-1] == 1
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    capped = subprocess.run([sys.executable, "-c", script, "1.5"], capture_output=True, text=True, env=env)
    assert capped.returncode == 0, capped.stderr
    rec = eval(capped.stdout.strip().replace("null", "None"))  # noqa: S307 - our own JSON of plain values
    assert rec["error"].startswith("MemoryError: Unable to allocate 3.00 GiB") and "seconds" not in rec
    assert rec["method"] == "nnsight" and rec["tokens"] == 204800 and rec["peak_rss_mib"] < 150  # its own, not ours
    free = subprocess.run([sys.executable, "-c", script, "0"], capture_output=True, text=True, env=env)
    assert free.returncode == 0 and '"error"' not in free.stdout and '"r2": [3.0]' in free.stdout


def _record(method, tokens, seconds, peak, r2, error=None):
    rec = {"method": method, "tokens": tokens, "tokens_asked": tokens, "peak_rss_mib": peak, "other_cpu_share": 0.0}
    if error:
        return {**rec, "error": error}
    return {**rec, "seconds": seconds, "collect_s": seconds * 0.9, "fit_s": seconds * 0.1, "setup_s": 2.0, "r2": r2}


def test_the_table_takes_the_fastest_round_compares_with_linrec_and_applies_the_goals():
    peers = _peers()
    exact = [0.9, 0.5, 0.7]
    records = [
        _record("linrec", 20480, 40.0, 2500, exact),
        _record("linrec", 20480, 38.0, 2520, exact),  # the faster round counts; the higher peak
        _record("nnsight", 20480, 60.0, 4000, [0.9, 0.5 + 3e-7, 0.7]),
        _record("tlens_lstsq", 20480, 95.0, 6000, [0.9, 0.5, 0.7 - 2e-9]),
        _record("linrec", 204800, 380.0, 2800, exact),
        _record("nnsight", 204800, 0, 17000, None, "MemoryError: Unable to allocate 264. MiB"),
        _record("tlens_lstsq", 204800, 0, 600, None, "ImportError: transformer-lens is not installed"),
    ]
    rows = peers.summarise(records, {"nnsight": "0.8.1", "linrec": "0.1.0"})
    by = {(r["method"], r["tokens"]): r for r in rows}
    lin = by["linrec", 20480]
    assert lin["seconds"] == 38.0 and lin["peak_mib"] == 2520 and lin["rounds"] == 2 and lin["max_abs_dr2"] == 0
    nn = by["nnsight", 20480]
    assert nn["seconds_over_linrec"] == pytest.approx(60 / 38) and nn["peak_over_linrec"] == pytest.approx(4000 / 2520)
    assert nn["max_abs_dr2"] == pytest.approx(3e-7) and nn["version"] == "0.8.1"
    assert by["nnsight", 204800]["error"].startswith("MemoryError") and "seconds" not in by["nnsight", 204800]
    text = "\n".join(peers.report_lines(rows))
    assert "| nnsight trace + fit_affine | 20,480 | 60.0 | 54.0 + 6.0 | 1.58 | 3.91 | 1.59 | 3.0e-07 |" in text
    assert "nnsight trace + fit_affine failed" in text and "linrec exact (f64 stats + ceiling table) 1.11×" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("- 20,480 tokens"))
    assert "the fastest peer (nnsight trace + fit_affine) takes 1.58× linrec exact's time (>= 2 MISS)" in line
    assert "linrec exact needs 0.63× the peak memory of the leanest peer (nnsight" in line and "<= 0.5 MISS" in line
    assert "- 204,800 tokens: no peer method finished (see the failed rows); linrec did." in text  # an ImportError too
    assert "| 204,800 | failed: MemoryError: Unable to allocate 264. MiB | | | 16.6 at failure | | |" in text
    capped = [r | {"mem_cap_gib": 17.7} for r in rows if not r["method"].startswith("tlens")]
    line = next(ln for ln in peers.report_lines(capped) if ln.startswith("- 204,800"))
    assert "each ran out of its 17.7 GiB address space" in line and "peaked at 2.73 GiB, under 0.15× that" in line
    assert "(<= 0.5 PASS); no time ratio" in line
    growth = next(ln for ln in peers.report_lines(capped) if ln.startswith("Peak memory"))
    assert "nnsight trace + fit_affine more than 4.5× (out of memory at the cap)" in growth  # 17.7 GiB / 4,000 MiB
    capped = [r | {"mem_cap_gib": 4.0} for r in capped]  # a cap linrec's own peak is not far below
    assert "under 0.68× that (<= 0.5 MISS)" in next(ln for ln in peers.report_lines(capped) if ln.startswith("- 204"))
    records[2] = _record("nnsight", 20480, 90.0, 6000, exact)  # now linrec is 2.4× faster and 0.42× the memory
    line = next(ln for ln in peers.report_lines(peers.summarise(records, {})) if ln.startswith("- 20,480"))
    assert ">= 2 PASS" in line and "<= 0.5 PASS" in line and "(nnsight trace + fit_affine;" in line


def test_each_method_is_timed_to_the_same_r2_as_linrec_exact(tiny_model_dir, tiny_corpus):
    """`measure`, what each method's process runs, in this process: linrec exact, its fast mode and (with the bench
    extra) each peer with either fit reach the same R²_lin per block, after a warm-up, with their time split into
    collection and fits."""
    import types

    peers = _peers()
    args = types.SimpleNamespace(model=tiny_model_dir, corpus=tiny_corpus(6000), seq_len=SEQ, tokens=1024, seed=0,
                                 batch_size=BATCH, progress=False)  # fmt: skip
    exact = peers.measure("linrec", args)
    assert exact["tokens"] == 1024 and len(exact["r2"]) == 2 and 0.05 < min(exact["r2"]) < max(exact["r2"]) < 0.999
    methods = ["linrec32"] + [m for m in ("nnsight", "tlens_lstsq") if importlib.util.find_spec(peers.METHODS[m][1])]
    for method in methods:
        rec = peers.measure(method, args)
        assert rec["seconds"] == pytest.approx(rec["collect_s"] + rec["fit_s"]) and rec["collect_s"] > 0
        np.testing.assert_allclose(rec["r2"], exact["r2"], rtol=0, atol=1e-5 if method == "linrec32" else 1e-6)
    if "tlens_lstsq" in methods:
        assert rec["note"] == "TransformerBridge, LlamaArchitectureAdapter"


def test_a_tiny_run_writes_the_csv_with_linrec_and_a_peer_or_its_missing_extra(tmp_path, tiny_model_dir, tiny_corpus):
    """The whole script on the tiny model: each method in its own process, one round, the CSV written. The peer
    either agrees with linrec or, without the bench extra, its row names the extra (and takes no time)."""
    import pandas as pd

    peers = _peers()
    out = tmp_path / "peers.csv"
    args = ["--model", tiny_model_dir, "--corpus", tiny_corpus(6000), "--tokens", "1024", "--seq-len", str(SEQ),
            "--batch-size", str(BATCH), "--rounds", "1", "--methods", "linrec", "nnsight", "--wait-quiet", "0",
            "--no-progress", "--csv", str(out)]  # fmt: skip
    assert peers.main(args) == 0
    table = pd.read_csv(out, keep_default_na=False).set_index("method")
    assert list(table.index) == ["linrec", "nnsight"] and set(table["tokens"]) == {1024}
    assert float(table.loc["linrec", "max_abs_dr2"]) == 0 and float(table.loc["linrec", "seconds_over_linrec"]) == 1
    assert float(table.loc["linrec", "peak_mib"]) > 100 and table.loc["linrec", "error"] == ""
    assert table.loc["linrec", "corpus"] == args[3] and int(table.loc["linrec", "batch_size"]) == BATCH
    from linrec.app.bench import performance_script  # docs/performance.md's renderer reads what the script wrote

    shown = "\n".join(performance_script(ROOT).peers_lines(out, "peers.csv"))
    assert f"{tiny_model_dir} on {args[3]}, batches of {BATCH} × {SEQ} tokens, the fastest of 1 rounds" in shown
    assert "| linrec exact (f64 stats + ceiling table) | 1,024 |" in shown and "| 0.0e+00 |" in shown
    row = table.loc["nnsight"]
    if importlib.util.find_spec("nnsight") is None:
        assert row["error"].startswith("ImportError: nnsight is not installed") and "'.[bench]'" in row["error"]
    else:
        assert row["error"] == "" and float(row["max_abs_dr2"]) < 1e-6 and float(row["seconds"]) > 0
