"""A result does not depend on how many threads computed it (issue 50, item 1): the trained fits and the solves
whose numbers are written come out bit for bit the same on 1 and 3 threads, each in a fresh process (a thread count
is set once per process in practice: by `linrec figures` for its kernels, by torch's default in Jupyter)."""

import subprocess
import sys

from linrec.base.files import project_root

ROOT = project_root(__file__)

# Rows with the shapes that made the difference: a batch's squared error over more than torch's 32,768-element grain
# (summed in per-thread parts) and a 96 × 96 eigensolve. Every number the fits return, as exact hex floats.
SCRIPT = r"""
import math
import sys
import numpy as np
import torch

torch.set_num_threads(int(sys.argv[1]))
from linrec.analyses.pitfall import Split, covariance_kappa, gd_curve, reexpress, ridge_path, train_curves
from linrec.analyses.probe import ProbeTraining, Rows, Schedule, fit_probe, quadratic_closed_form, train_affine
from linrec.analyses.routing import fit_gate
from linrec.stats.ceiling import fit_affine
from linrec.stats.moments import Moments

rng = np.random.default_rng(0)
scales = np.geomspace(0.1, 30.0, 96)
x = (rng.standard_normal((3000, 96)) * scales).astype(np.float32)
y = (np.tanh(x[:, :96] / 50) @ rng.standard_normal((96, 96)) + x @ rng.standard_normal((96, 96)) / 100)
y = y.astype(np.float32)
t = torch.from_numpy
rows = Rows(t(x[:2400]), t(y[:2400]), t(x[2400:]), t(y[2400:]))
fit = fit_affine(Moments.of(rows.xtr.double(), rows.ytr.double()))
out = [train_affine(rows, "adam", Schedule(epochs=2)).r2_test, train_affine(rows, "sgd", Schedule(epochs=2)).r2_test]
p = fit_probe(rows, fit, rank=8, training=ProbeTraining(max_epochs=3, batch_size=1024))
out += [p.r2_poly, *p.losses, quadratic_closed_form(rows, k=8)]
split = Split.of(rows)
out += list(train_curves(split, "adam", [1e-3, 1e-2], [5, 20], batch_size=1024)["r2_test"])
out += list(gd_curve(split, [5, 50])["r2_test"]) + [covariance_kappa(rows.xtr)]
out += [math.fsum(reexpress(rows.xtr, 1e4)(rows.xte).numpy().ravel())]  # fsum: exact, in any order
out += [math.fsum(np.ravel(w)) for w, _ in ridge_path(split, alphas=[0.0, 1e-3])]
gate = fit_gate(x[:2400].astype(np.float64), (y[:2400, 0] > np.median(y[:2400, 0])).astype(float))
out += [math.fsum(gate.w), gate.b]
print(" ".join(float(v).hex() for v in out))
"""


def _run(threads: int) -> str:
    env_lib = str(ROOT / "lib")
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([env_lib, os.environ.get("PYTHONPATH", "")])}
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.pop(var, None)  # the script sets torch's count itself
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(threads)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_trained_fits_and_solves_give_the_same_bits_on_any_thread_count():
    one, three = _run(1), _run(3)
    assert len(one.split()) >= 19
    assert one == three, "\n".join(
        f"value {i}: {a} vs {b}" for i, (a, b) in enumerate(zip(one.split(), three.split())) if a != b
    )
