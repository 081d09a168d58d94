"""Benchmark: `make test` from a fresh clone with an empty cache, the way CI runs it (issue 19: ≤ 5 min).

    .venv/bin/python benchmarks/tests.py                                   # prints the times
    .venv/bin/python benchmarks/tests.py --csv results/bench/tests.csv     # and writes them (what `make bench` does)

The repository's committed HEAD is cloned into a temporary directory and `make test` runs there with
`$LINREC_CACHE` pointing at an empty temporary directory: the venv is created and installed, ruff runs, the
offline models and corpora are fetched and dequantised, and pytest runs every test (on every CPU, pytest-xdist).
Uncommitted changes are not measured. Run it on an otherwise quiet machine: it waits up to a minute for one.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET_S = 300.0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", type=Path, default=None, help="write the measures here (results/bench/tests.csv)")
    args = p.parse_args(argv)

    sys.path.insert(0, str(HERE))
    from capture import wait_quiet, write_csv

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    with tempfile.TemporaryDirectory(prefix="linrec-tests-") as tmp:
        clone, cache = Path(tmp) / "clone", Path(tmp) / "cache"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        cache.mkdir()
        share = wait_quiet(60.0, os.cpu_count() or 1)
        env = {**os.environ, "LINREC_CACHE": str(cache)}
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # as on a fresh CI machine
            env.pop(var, None)
        t0 = time.perf_counter()
        proc = subprocess.run(["make", "test"], cwd=clone, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        sys.exit(f"make test failed in the fresh clone: {' | '.join(tail)}")
    found = re.search(r"(\d+) passed.* in ([\d.]+)s", proc.stdout)
    passed, pytest_s = (int(found[1]), float(found[2])) if found else (0, float("nan"))
    status = "PASS" if wall <= TARGET_S else "MISS"
    print(
        f"make test from a fresh clone of {head.stdout.strip()} with an empty cache: {wall:.0f} s ({status} against "
        f"≤ {TARGET_S:.0f} s); pytest {pytest_s:.0f} s, {passed} passed; other processes at {share:.0%} before it"
    )
    if args.csv:
        measures = [
            ("make_test_s", wall, f"<= {TARGET_S:.0f}", status),
            ("pytest_s", pytest_s, "", ""),
            ("passed", passed, "", ""),
            ("other_cpu_share_before", share, "", ""),
        ]
        write_csv(args.csv, f"make test at {head.stdout.strip()}", "", 0, measures)
        print(f"measures written to {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
