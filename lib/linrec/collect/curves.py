"""R²_lin against the number of train tokens: learning curves, refit variance and a large-n estimate.

A held-out R² of a least-squares map fitted on n rows is biased low: the map also fits the
train split's noise, and with p = d_in + 1 parameters per output that costs, for a linear
model with Gaussian inputs, (1 − R²∞)·p/(n − p − 1) of held-out R² on average (the textbook
out-of-sample error of ordinary least squares). At the default 16k train rows and p = 577
(SmolLM2) that is a few hundredths. This module measures the curve instead of assuming it.

**Design.** One corpus is cut into windows of `seq_len` tokens: enough for the largest train
size plus `test_tokens`. For each split seed s the windows are permuted (seeded); the first
`test_tokens` worth are seed s's held-out windows and the rest, in permuted order, its train
pool. Train size n_k takes the first n_k tokens' worth of the pool, so for one seed the train
sets are nested and differ between seeds, and each seed has its own held-out windows: the
spread between seeds is the refit variance (which train rows, which held-out rows).

**One pass for every seed and size.** Train statistics are additive, so each window's rows go
into the `Moments` of its *chunk* (the rows between checkpoints k−1 and k) for every seed at
once; the cumulative statistics at checkpoint k are the chunks ≤ k merged (Chan's update,
`linrec.stats.moments`). A second pass over the union of the seeds' held-out windows then adds, per
held-out window, n, Σ(y − c), Σ‖y − c‖² and, for each checkpoint's map, Σ‖e‖² (c: the seed's
train mean of y). Memory: seeds × checkpoints × blocks × (d_in + d_out)² × 8 bytes for the
chunk statistics during the first pass: 5.7 GB for SmolLM2-135M with 3 seeds and 6 sizes
(30 blocks, d = 576 + 576), 4.2 GB for Gemma-3-270M. Time: one forward pass over the corpus plus
one over the held-out windows, with three float64 moment updates per train row.

**The interval.** `curve_summary` resamples both levels at once (a hierarchical bootstrap):
each replicate draws the seeds with replacement and, within each drawn seed, its held-out windows
with replacement (the same window draw for every train size of that seed, so the curve moves
together); the replicate's value is the mean over its drawn seeds. The percentile interval
therefore holds refit variance (between seeds) and held-out sampling (within a seed). With three
seeds the between-seed part is coarse; it is reported separately as `seed_sd`.

**The large-n estimate.** `extrapolate` fits, per block, R²(n) = R²∞ − a·x(n) with
x(n) = p/(n − p − 1), by least squares over the checkpoints with n ≥ `MIN_ROWS_PER_PARAM`·p, on
the seed-mean curve and on every bootstrap replicate (its interval). The slope a is free: for a
well-specified linear model a = 1 − R²∞, and a nonlinear FFN adds terms of the same order in 1/n.
`fit_rmse` says how well the straight line in x describes the measured points; where it is large
against the interval, the extrapolation is not to be trusted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from linrec.base.cache import entry_path, get_or_compute
from linrec.base.errors import LinrecError
from linrec.base.files import (
    write_entry,
)
from linrec.base.progress import bar as progress_bar
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.collect.plan import site_dims
from linrec.inputs.corpora import WindowCut, corpus_identity, load_windows
from linrec.inputs.hf import LoadedModel, check_context, no_tf32
from linrec.inputs.models import load_model
from linrec.inputs.sites import ffn_hooks, run_until_stop
from linrec.inputs.source import ModelSource, as_source
from linrec.stats.ceiling import NON_FINITE, fit_affine, score
from linrec.stats.moments import PRODUCTS, Moments

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

CURVE_VERSION = "1"
# train sizes: 5k … 200k tokens; 16_384 is the default capture's train split (80 % of 20_480)
CURVE_TOKENS = (5_120, 10_240, 16_384, 40_960, 102_400, 204_800)
CURVE_SEEDS = (0, 1, 2)
MIN_ROWS_PER_PARAM = 5.0  # checkpoints with fewer train rows per parameter stay out of the large-n fit


@dataclass(frozen=True)
class CurveConfig:
    """Everything that determines a learning curve's numbers (and so its cache key)."""

    model: str
    corpus: str = CaptureConfig.corpus
    seq_len: int = CaptureConfig.seq_len
    train_tokens: tuple[int, ...] = CURVE_TOKENS
    test_tokens: int = CaptureConfig.tokens  # held-out tokens per split seed: a capture's whole budget
    seeds: tuple[int, ...] = CURVE_SEEDS
    product: str = "float64"

    def __post_init__(self):
        object.__setattr__(self, "train_tokens", tuple(int(t) for t in self.train_tokens))
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))

    def validate(self) -> None:
        t = self.train_tokens
        if not t or any(a >= b for a, b in zip(t, t[1:])) or t[0] < self.seq_len:
            raise LinrecError(
                f"train_tokens must increase and start at ≥ seq_len ({self.seq_len}), got {list(t)}; "
                "e.g. 5120 10240 20480 51200 102400 204800"
            )
        if self.test_tokens < self.seq_len:
            raise LinrecError(f"test_tokens {self.test_tokens} holds no window of {self.seq_len}; raise it")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise LinrecError(f"seeds must be distinct and ≥ 0, got {list(self.seeds)}")
        if self.product not in PRODUCTS:
            raise LinrecError(f"product must be one of {', '.join(PRODUCTS)}, got '{self.product}'")

    @property
    def windows_per_size(self) -> np.ndarray:
        return np.array([t // self.seq_len for t in self.train_tokens])

    @property
    def n_test_windows(self) -> int:
        return self.test_tokens // self.seq_len

    @property
    def total_tokens(self) -> int:
        return (int(self.windows_per_size[-1]) + self.n_test_windows) * self.seq_len

    def key(self, source: ModelSource | None = None) -> str:
        """The cache key. `source`: `model` parsed, where the caller has it; else it is parsed here."""
        source = ModelSource.parse(self.model) if source is None else source
        if source.spec != self.model:
            raise ValueError(f"the source of {source.spec!r} is not that of this config's model {self.model!r}")
        ident = {
            **asdict(self),
            "model": source.identity(),
            "corpus": corpus_identity(self.corpus),
            "version": CURVE_VERSION,
        }
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


def split_plan(n_windows: int, config: CurveConfig) -> tuple[np.ndarray, list[np.ndarray]]:
    """(chunk [S, n_windows], tests): chunk[s, w] = k if window w joins seed s's train set at checkpoint k
    (−1: not in its train set), tests[s] = seed s's held-out windows (sorted)."""
    sizes, n_test = config.windows_per_size, config.n_test_windows
    if n_windows < sizes[-1] + n_test:
        raise LinrecError(
            f"corpus '{config.corpus}' is too small for this curve: {n_windows} windows of {config.seq_len} tokens, "
            f"need {sizes[-1] + n_test} ({config.train_tokens[-1]} train + {config.test_tokens} test tokens); "
            "lower the largest train size (--train-tokens; a profile's curve_train_tokens) or the held-out tokens "
            "(--test-tokens; curve_test_tokens), or use a larger corpus"
        )
    chunk = np.full((len(config.seeds), n_windows), -1, dtype=np.int64)
    tests = []
    for i, s in enumerate(config.seeds):
        perm = np.random.default_rng([s, 18]).permutation(n_windows)
        tests.append(np.sort(perm[:n_test]))
        pool = perm[n_test:]
        lo = 0
        for k, hi in enumerate(sizes):
            chunk[i, pool[lo:hi]] = k
            lo = hi
    return chunk, tests


class CurveAccumulator:
    """The learning curve's statistics, fed window by window; model-free, so tests can feed it planted rows.

    Pass 1: `add_train(block, windows, x, y)` with x [n_windows_batch, T, d_in]; then `finish_train()`.
    Pass 2: `add_test(block, windows, x, y)` for windows held out by some seed; then `result()`.
    """

    def __init__(self, dims: list[tuple[int, int]], config: CurveConfig, n_windows: int):
        self.dims, self.config = dims, config
        self.chunk, self.tests = split_plan(n_windows, config)
        S, K = len(config.seeds), len(config.train_tokens)
        self.S, self.K = S, K
        self.acc = [[[Moments(dx, dy) for dx, dy in dims] for _ in range(K)] for _ in range(S)]
        # position of each window among seed s's held-out windows (−1: not held out by s)
        self.test_pos = np.full((S, n_windows), -1, dtype=np.int64)
        for s, t in enumerate(self.tests):
            self.test_pos[s, t] = np.arange(len(t))
        self.fits = None
        self.seconds_fit = 0.0

    # ---- pass 1 ------------------------------------------------------------------------------------------
    def add_train(self, block: int, windows: np.ndarray, x: torch.Tensor, y: torch.Tensor) -> None:
        for s in range(self.S):
            ks = self.chunk[s, windows]
            for k in np.unique(ks[ks >= 0]):
                sel = torch.from_numpy(np.flatnonzero(ks == k)).to(x.device)
                self.acc[s][k][block].update(x.index_select(0, sel), y.index_select(0, sel), self.config.product)

    def finish_train(self) -> None:
        """Merge each seed's chunks into cumulative statistics and fit every (seed, size, block) map."""
        t0 = time.perf_counter()
        S, K, B = self.S, self.K, len(self.dims)
        self.fits = [[[None] * B for _ in range(K)] for _ in range(S)]
        self.train_r2 = np.full((S, K, B), np.nan)
        self.n_train = np.zeros((S, K, B), dtype=np.int64)
        self.cond_scaled = np.full((S, K, B), np.nan)
        self.shift = [[None] * B for _ in range(S)]
        for s in range(S):
            for b in range(B):
                cum = Moments(*self.dims[b])
                for k in range(K):
                    cum.merge(self.acc[s][k][b])
                    self.acc[s][k][b] = None  # free the chunk as soon as it is merged
                    if not cum.is_finite():
                        raise LinrecError(f"block {b}: {NON_FINITE}")
                    fit = fit_affine(cum, block=b, condition=False)
                    self.fits[s][k][b] = fit
                    self.train_r2[s, k, b] = score(fit, cum, block=b).r2
                    self.n_train[s, k, b] = cum.n
                    self.cond_scaled[s, k, b] = fit.cond_scaled
                self.shift[s][b] = cum.mean_y.copy()  # c: the largest train set's mean of y
        self.acc = None
        self._stack = {}
        self._alloc_test()
        self.seconds_fit = time.perf_counter() - t0

    # ---- pass 2 ------------------------------------------------------------------------------------------
    def _alloc_test(self) -> None:
        B = len(self.dims)
        self.t_n = [np.zeros(len(t), np.int64) for t in self.tests]
        self.t_sy = [[np.zeros((len(t), dy)) for _, dy in self.dims] for t in self.tests]
        self.t_syy = [[np.zeros(len(t)) for _ in range(B)] for t in self.tests]
        self.t_sse = [[np.zeros((len(t), self.K)) for _ in range(B)] for t in self.tests]
        self._n_seen = [np.zeros(len(t), bool) for t in self.tests]

    def _stacked(self, s: int, b: int, device) -> tuple[torch.Tensor, torch.Tensor]:
        key = (s, b)
        if key not in self._stack:
            fits = [self.fits[s][k][b] for k in range(self.K)]
            W = torch.from_numpy(np.concatenate([f.W for f in fits], axis=1)).to(device)  # [d_in, K·d_out]
            c = self.shift[s][b]
            bias = torch.from_numpy(np.stack([f.b - c for f in fits])).to(device)  # [K, d_out]
            self._stack[key] = (W, bias)
        return self._stack[key]

    def add_test(self, block: int, windows: np.ndarray, x: torch.Tensor, y: torch.Tensor) -> None:
        if self.fits is None:
            raise LinrecError("add_test before finish_train: the maps are fitted from the finished train statistics")
        d_in, d_out = self.dims[block]
        for s in range(self.S):
            pos = self.test_pos[s, windows]
            hit = np.flatnonzero(pos >= 0)
            if hit.size == 0:
                continue
            sel = torch.from_numpy(hit).to(x.device)
            xs = x.index_select(0, sel).to(torch.float64)  # [w, T, d_in]
            nw, T = xs.shape[0], xs.shape[1]
            yc = y.index_select(0, sel).to(torch.float64) - torch.from_numpy(self.shift[s][block]).to(x.device)
            W, bias = self._stacked(s, block, x.device)
            pred = (xs.reshape(-1, d_in) @ W).view(nw, T, self.K, d_out) + bias  # prediction − c
            sse = (yc.unsqueeze(2) - pred).square_().sum(dim=(1, 3))  # [w, K]
            p = pos[hit]
            self.t_sse[s][block][p] += sse.cpu().numpy()
            self.t_sy[s][block][p] += yc.sum(dim=1).cpu().numpy()
            self.t_syy[s][block][p] += yc.square().sum(dim=(1, 2)).cpu().numpy()
            if block == 0:
                self.t_n[s][p] += T
                self._n_seen[s][p] = True

    def result(self, meta: dict | None = None) -> Curve:
        if self.fits is None:
            raise LinrecError("no train pass finished; nothing to report")
        missing = [s for s in range(self.S) if not self._n_seen[s].all()]
        if missing:
            raise LinrecError(f"seeds {missing}: some held-out windows were never scored; run the second pass over all")
        return Curve(
            config=self.config,
            meta=meta or {},
            n_train=self.n_train,
            train_r2=self.train_r2,
            cond_scaled=self.cond_scaled,
            test_n=self.t_n,
            test_sy=self.t_sy,
            test_syy=self.t_syy,
            test_sse=self.t_sse,
            dims=list(self.dims),
        )


@dataclass
class Curve:
    """A finished learning curve: per seed s, train size k and block b, the map's train and held-out sums."""

    config: CurveConfig
    meta: dict
    n_train: np.ndarray  # [S, K, B] train rows
    train_r2: np.ndarray  # [S, K, B] in-sample R²
    cond_scaled: np.ndarray  # [S, K, B] κ of the Jacobi-scaled Gram the solver saw
    test_n: list[np.ndarray]  # [S] → [W_s] rows per held-out window
    test_sy: list[list[np.ndarray]]  # [S][B] → [W_s, d_out] Σ(y − c)
    test_syy: list[list[np.ndarray]]  # [S][B] → [W_s] Σ‖y − c‖²
    test_sse: list[list[np.ndarray]]  # [S][B] → [W_s, K] Σ‖e‖² of each size's map
    dims: list = field(default_factory=list)
    path: Path | None = None
    cached: bool = False

    @property
    def n_blocks(self) -> int:
        return self.n_train.shape[2]

    @property
    def model_label(self) -> str:
        return self.meta.get("model_label", self.config.model)

    def r2_counts(self, s: int, b: int, counts: np.ndarray) -> np.ndarray:
        """Held-out R² of every train size's map under window multiplicities `counts` [R, W_s] → [R, K]."""
        c = np.asarray(counts, dtype=np.float64)
        n = c @ self.test_n[s]
        sy = c @ self.test_sy[s][b]
        sst = c @ self.test_syy[s][b] - (sy * sy).sum(axis=1) / n
        sse = c @ self.test_sse[s][b]
        return 1.0 - sse / sst[:, None]

    def r2(self) -> np.ndarray:
        """[S, K, B] held-out R² on all of each seed's held-out windows."""
        S, K, B = self.n_train.shape
        out = np.empty((S, K, B))
        for s in range(S):
            ones = np.ones((1, len(self.test_n[s])))
            for b in range(B):
                out[s, :, b] = self.r2_counts(s, b, ones)[0]
        return out

    def bootstrap(self, n_boot: int, seed: int = 0) -> np.ndarray:
        """[n_boot, K, B] hierarchical replicates: seeds drawn with replacement, then each drawn seed's held-out
        windows (one draw per seed and replicate, shared by every train size); a replicate is its seeds' mean."""
        S, K, B = self.n_train.shape
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, S, size=(n_boot, S))  # which seeds each replicate draws
        out = np.zeros((n_boot, K, B))
        for s in range(S):
            W = len(self.test_n[s])
            counts = rng.multinomial(W, np.full(W, 1.0 / W), size=n_boot)
            weight = (picks == s).sum(axis=1) / S  # [n_boot]: share of the replicate's draws that are seed s
            for b in range(B):
                out[:, :, b] += weight[:, None] * self.r2_counts(s, b, counts)
        return out

    # ---- storage ------------------------------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        arrays = {"n_train": self.n_train, "train_r2": self.train_r2, "cond_scaled": self.cond_scaled}
        for s in range(len(self.test_n)):
            arrays[f"{s}/n"] = self.test_n[s]
            for b in range(self.n_blocks):
                arrays[f"{s}/{b}/sy"] = self.test_sy[s][b]
                arrays[f"{s}/{b}/syy"] = self.test_syy[s][b]
                arrays[f"{s}/{b}/sse"] = self.test_sse[s][b]
        return arrays

    @classmethod
    def from_state(cls, z, config: CurveConfig, meta: dict) -> Curve:
        S, _, B = z["n_train"].shape
        return cls(
            config=config,
            meta=meta,
            n_train=z["n_train"],
            train_r2=z["train_r2"],
            cond_scaled=z["cond_scaled"],
            test_n=[z[f"{s}/n"] for s in range(S)],
            test_sy=[[z[f"{s}/{b}/sy"] for b in range(B)] for s in range(S)],
            test_syy=[[z[f"{s}/{b}/syy"] for b in range(B)] for s in range(S)],
            test_sse=[[z[f"{s}/{b}/sse"] for b in range(B)] for s in range(S)],
            dims=[tuple(d) for d in meta.get("dims", [])],
        )


# ---- running it on a model ------------------------------------------------------------------------------------
@torch.no_grad()
def run_curve(loaded: LoadedModel, config: CurveConfig, batch_size: int = 8, progress: bool = True) -> Curve:
    """Both passes of the learning curve of `loaded` on `config.corpus` (see the module docstring)."""
    config.validate()
    check_context(loaded, config.seq_len)
    windows = load_windows(config.corpus, loaded.tokenizer, WindowCut(config.seq_len, config.total_tokens, 0, 0.5))
    n_windows = windows.ids.shape[0]
    model = loaded.model
    sites = loaded.sites
    device = next(model.parameters()).device
    kwargs = {"use_cache": False} if loaded.is_causal else {}
    acc = CurveAccumulator(site_dims(loaded, sites, windows), config, n_windows)
    current: dict = {}

    def train_hook(b, x, y):
        acc.add_train(b, current["w"], x, y)

    def test_hook(b, x, y):
        acc.add_test(b, current["w"], x, y)

    t0 = time.perf_counter()
    with no_tf32():
        for name, hook, use in (
            ("train", train_hook, np.flatnonzero((acc.chunk >= 0).any(axis=0))),
            ("held-out", test_hook, np.unique(np.concatenate(acc.tests))),
        ):
            if name == "held-out":
                acc.finish_train()
            batches = [use[i : i + batch_size] for i in range(0, len(use), batch_size)]
            with ffn_hooks(sites, hook, stop_after_last=True):
                for w in progress_bar(
                    batches, desc=f"curve {loaded.name} ({name})", unit="batch", disable=not progress
                ):
                    current["w"] = w
                    run_until_stop(model, input_ids=windows.ids[w].to(device), **kwargs)
    meta = {
        "config": {**asdict(config), "train_tokens": list(config.train_tokens), "seeds": list(config.seeds)},
        "model_label": loaded.name,
        "identity": loaded.identity,
        "corpus_identity": windows.identity,
        "n_blocks": len(sites),
        "dims": [list(acc.dims[i]) for i in range(len(sites))],
        "n_windows": int(n_windows),
        "seconds": time.perf_counter() - t0,
        "fit_seconds": acc.seconds_fit,
        "version": CURVE_VERSION,
    }
    return acc.result(meta)


def _load(directory: Path, meta: dict, config: CurveConfig) -> Curve:
    with np.load(directory / "curve.npz") as z:
        curve = Curve.from_state({k: z[k] for k in z.files}, config, meta)
    curve.path, curve.cached = directory, True
    return curve


def get_curve(
    config: CurveConfig,
    run: CaptureRun = CaptureRun(),
    *,
    source: ModelSource | None = None,
    loaded: LoadedModel | None = None,
    cache: bool = True,
    progress: bool = True,
) -> Curve:
    """The learning curve `config` asks for: from the cache if intact, else computed (and cached atomically), `run`'s
    batch size of windows per pass on its device. `source`: `config.model` parsed
    (`linrec.inputs.source.ModelSource`), where the caller has it; `loaded` reuses a model already loaded."""
    source = as_source(config.model if source is None else source)
    config.validate()
    entry = entry_path("curve", source.spec, config.key(source))

    def compute(tmp: Path | None) -> Curve:
        curve = run_curve(loaded or load_model(source, device=run.device), config, run.batch_size, progress)
        if tmp is not None:
            np.savez(tmp / "curve.npz", **curve.state())
            write_entry(tmp, curve.meta)
            curve.path = entry
        return curve

    asked = {"config": asdict(config)}  # an entry made for another request is computed again
    return get_or_compute(entry, CURVE_VERSION, partial(_load, config=config), compute, cache, asked)
