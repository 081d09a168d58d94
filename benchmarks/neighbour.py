"""Benchmark: how much slower a notebook runs beside one other busy process (issue 19: ≤ 2.5×).

    .venv/bin/python benchmarks/neighbour.py                                  # notebook 03 of the default profile
    .venv/bin/python benchmarks/neighbour.py --only 02 --csv results/bench/neighbour.csv

`linrec figures --only NOTEBOOK` runs twice on the same profile, from the capture cache, into a temporary results
directory (the repository's results are not touched): once on a quiet machine, once beside a process that keeps one
CPU busy (a pure-Python spin loop, like any other single-threaded job). The ratio of the two wall times is the
slowdown. Losing one of two cores explains about 2×; thread pools that stall each other (OpenMP waiting on a
descheduled thread) are what made it 2.4–6.7× before the runner sized its pools to the free CPUs
(`linrec.base.threads.free_cpus`). The profile's captures must be in the cache (`make figures` leaves them there); they
are read once before the timed runs. Run it on an otherwise quiet machine: it waits up to a minute for one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET = 2.5
SPIN = "import time\nwhile True:\n    pass\n"


def run_once(params: Path, only: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "linrec", "figures", "--params", str(params), "--only", only],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"linrec figures --only {only} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return time.perf_counter() - t0


def warm_page_cache() -> None:
    """Read every cached capture file once, so that neither timed run pays for the first read from disk."""
    from linrec.base.files import cache_root

    for f in (cache_root() / "captures").rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--params", default="params/default.yaml")
    p.add_argument("--only", default="03", help="the notebook to time (default: 03, the issue's)")
    p.add_argument("--csv", type=Path, default=None, help="write the measures here (results/bench/neighbour.csv)")
    args = p.parse_args(argv)

    sys.path.insert(0, str(HERE))
    from capture import wait_quiet, write_csv

    from linrec.app.profile import load_profile

    profile = load_profile(ROOT / args.params, root=ROOT).values()  # every value, the file's over the defaults
    with tempfile.TemporaryDirectory(prefix="linrec-neighbour-") as tmp:
        out = Path(tmp)
        profile.update(results_dir=str(out / "results"), figures_dir=str(out / "figures"))
        profile.update(report_path=str(out / "report.md"), readme=str(out / "README.md"))
        params = out / "params.yaml"
        params.write_text(yaml.safe_dump(profile))
        warm_page_cache()
        share = wait_quiet(60.0, os.cpu_count() or 1)
        quiet = run_once(params, args.only)
        spinner = subprocess.Popen([sys.executable, "-c", SPIN])
        try:
            time.sleep(1.0)
            busy = run_once(params, args.only)
        finally:
            spinner.kill()
    ratio = busy / quiet
    status = "PASS" if ratio <= TARGET else "MISS"
    print(f"notebook {args.only}: {quiet:.0f} s quiet (other processes at {share:.0%} of the CPUs before it), ")
    print(f"{busy:.0f} s beside one busy process: {ratio:.2f}× ({status} against ≤ {TARGET})")
    if args.csv:
        measures = [
            ("quiet_s", quiet, "", ""),
            ("beside_busy_s", busy, "", ""),
            ("slowdown", ratio, f"<= {TARGET}", status),
            ("other_cpu_share_before", share, "", ""),
        ]
        from linrec.collect.config import capture_settings

        models = ",".join(profile.get("models", []))
        write_csv(
            args.csv, f"neighbour {args.only}", models, capture_settings(profile.get("capture"))["tokens"], measures
        )
        print(f"measures written to {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
