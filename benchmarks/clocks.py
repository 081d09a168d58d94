"""Benchmark: the times and loads the tests no longer assert (they check the same behaviour without a clock).

    .venv/bin/python benchmarks/clocks.py                                  # prints the measures (~1 min on 2 cores)
    .venv/bin/python benchmarks/clocks.py --csv results/bench/clocks.csv   # and writes them

- A misspelt model name without the Hugging Face hub: seconds to its one-line error (target < 30 s: the hub
  clients' retries took 26 s before the error, on top of the imports). tests/app/test_cli.py checks that no client
  retries, by the hub lookups the run makes (at most 2).
- A hub corpus (wikitext-2) without the hub: seconds to its one-line error (target < 8 s: a fresh interpreter's
  imports, then no waiting; it took 30.5 s). tests/inputs/test_corpora.py checks that the hub is looked up once.
- `linrec.base.threads.busy_cpus` beside one process spinning on one CPU (target ≥ 0.7 CPUs; more where the machine
  has other work), and `free_cpus` then (target: 1 … CPUs − 1). tests/base/test_threads.py checks both on an injected
  clock and /proc/stat, and that this process's own CPU time shows in /proc/stat.

"Without the hub" is a hub address that does not resolve (HF_ENDPOINT=https://hub.invalid), an empty HF_HOME and an
empty $LINREC_CACHE, as in the tests. Run it on an otherwise quiet machine: it waits up to a minute for one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SPIN = "import time\nt = time.time()\nwhile time.time() - t < 6: pass\n"


def error_seconds(*args: str) -> tuple[float, str]:
    """Seconds `python -m linrec ARGS` takes without the hub, and the last line of its stderr."""
    with tempfile.TemporaryDirectory(prefix="linrec-clocks-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_HOME=f"{tmp}/hf", HF_ENDPOINT="https://hub.invalid")
        env.update(LINREC_CACHE=f"{tmp}/cache", PIP_NO_INDEX="1")  # nothing fetched, and nothing to fetch from
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "linrec", *args], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
    lines = proc.stderr.strip().splitlines() or ["(no output)"]
    return wall, f"exit {proc.returncode}, {len(lines)} line(s): {lines[-1][:100]}"


def beside_a_spinner() -> tuple[float, int]:
    """busy_cpus over 1.5 s and free_cpus over 0.5 s, while another process spins on one CPU."""
    from linrec.base.threads import busy_cpus, free_cpus

    spin = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        time.sleep(0.5)
        return busy_cpus(1.5), free_cpus(0.5)
    finally:
        spin.kill()
        spin.wait()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csv", type=Path, default=None, help="write the measures here (results/bench/clocks.csv)")
    args = p.parse_args(argv)

    sys.path.insert(0, str(HERE))
    from capture import wait_quiet, write_csv

    ncpu = os.cpu_count() or 1
    share = wait_quiet(60.0, ncpu)
    model_s, model_err = error_seconds("measure", "--model", "smolllm2-135m")
    corpus_s, corpus_err = error_seconds("measure", "--model", "smollm2-135m", "--corpus", "wikitext-2")
    busy, free = beside_a_spinner()
    rows = [
        ("misspelt_model_error_s", model_s, "< 30", model_s < 30, model_err),
        ("hub_corpus_error_s", corpus_s, "< 8", corpus_s < 8, corpus_err),
        ("busy_cpus_beside_a_spinner", busy, ">= 0.7", busy >= 0.7, ""),
        ("free_cpus_beside_a_spinner", free, f"1 … {max(1, ncpu - 1)}", 1 <= free <= max(1, ncpu - 1), ""),
    ]
    print(f"{ncpu} CPUs; other processes at {share:.0%} before the run")
    for name, value, target, ok, note in rows:
        print(f"{name:28s} {value:7.2f}  ({'PASS' if ok else 'MISS'} against {target}){'  ' + note if note else ''}")
    if args.csv:
        measures = [(name, value, target, "PASS" if ok else "MISS") for name, value, target, ok, _ in rows]
        measures.append(("other_cpu_share_before", share, "", ""))
        write_csv(args.csv, "clocks", "", 0, measures)
        print(f"measures written to {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
