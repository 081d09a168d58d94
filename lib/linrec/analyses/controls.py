"""Is R²_lin a property of the learned map or of the inputs it sees? Controls for notebook 07.

The paper compares profiles of different trained models; each FFN is scored on its own model's
activations, so a difference between models could come from the inputs rather than the maps
(the referee's first major comment). Three controls, each a table per block:

- **random init** — the same architecture and config with transformers' own initialisation
  (`linrec.inputs.models.random_init_spec`, several seeds), captured on the same corpus: its R²_lin
  profile beside the trained one (`linrec.collect.capture.get_capture` on `init:SEED:MODEL`).
- **input distribution** (`input_controls`) — each trained FFN re-scored on (a) its own captured
  input rows (the reference: identical to the capture's R²_lin when every row is stored),
  (b) Gaussian inputs with the same mean and covariance as its captured inputs, (c) the inputs
  captured at the next block of the same model (the previous one for the last block). A block whose R²_lin holds up
  on Gaussian inputs is linear as a map over that region of input space; one whose R²_lin moves
  with the inputs is "linear on what it is fed".
- **cross feeding** (`cross_feed`) — the inputs captured in model A, raw and re-coloured to
  model B's input mean and covariance (whiten with A's statistics, colour with B's), through
  model B's FFN at the same block index. Any two models of equal width: offline, a trained
  model against its random-init twin; with the hub, GPT-2 against Pythia-160m (both 768).

Every R² here comes from the same code path as the capture's: float64 `Moments` of
(x, FFN(x)) on a train part, `ceiling.fit_affine`, `ceiling.score` on a held-out part. The
train/held-out parts of the stored rows follow the capture's own window split.

Claim 2a's summaries, table to table: the trained profile against its random-init twins (`random_init_summary`), the
Gaussian-input control's (`input_control_summary`), and the trained profile against the untrained architecture with
the reference it is judged against (`learned_summary`; the rule is `linrec.claims.learned`'s).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import pandas as pd
import torch

from linrec.analyses.parallel import run_jobs
from linrec.analyses.uncertainty import spearman
from linrec.base.errors import LinrecError
from linrec.base.threads import one_thread
from linrec.collect.capture import get_capture
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.models import load_model, random_init_spec
from linrec.stats.ceiling import factor_gram, fit_affine, score
from linrec.stats.heldout import HeldOut
from linrec.stats.moments import Moments

# A random-init twin is "degenerate" when its median train − held-out gap exceeds the trained model's by more than
# this: it memorises its train split (few effectively distinct inputs), so its held-out profile is no reference.
CLAIM2_DEGENERATE_GAP = 0.1
GAUSSIAN_DROP = 0.1  # notebook 07: a block "loses" on Gaussian inputs when its R² falls by more than this


@torch.no_grad()
def ffn_outputs(module: torch.nn.Module, x: np.ndarray | torch.Tensor, batch: int = 4096) -> torch.Tensor:
    """FFN(x) row by row, in the module's dtype; x [n, d_in] → [n, d_out] on the CPU."""
    p = next(module.parameters())
    x = torch.as_tensor(np.asarray(x)) if not isinstance(x, torch.Tensor) else x
    out = [module(x[i : i + batch].to(device=p.device, dtype=p.dtype)[None])[0].cpu() for i in range(0, len(x), batch)]
    return torch.cat(out) if out else torch.empty(0, 0)


def r2_of_map(module: torch.nn.Module, x_train, x_test, block: int | str = "?") -> dict:
    """Held-out R²_lin of `module` as a map on the given inputs: moments of (x, module(x)), closed form, score."""
    stats = []
    for x in (x_train, x_test):
        x = torch.as_tensor(np.asarray(x))
        y = ffn_outputs(module, x)
        if not torch.isfinite(y).all():
            raise LinrecError(f"block {block}: the FFN returned NaN/inf on these inputs; check the inputs' scale")
        stats.append(Moments.of(x.double(), y.double()))
    fit = fit_affine(stats[0], block=block)
    s = score(fit, stats[1], block=block)
    return {"r2": s.r2, "r2_feature_median": s.r2_feature_median, "n_train": int(stats[0].n), "n_test": int(stats[1].n)}


def _sqrt_and_isqrt(C: np.ndarray, rcond: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric square root and pseudo-inverse square root of a covariance (float64, eigh)."""
    with one_thread():
        lam, V = torch.linalg.eigh(torch.from_numpy(np.ascontiguousarray(C, dtype=np.float64)))
    lam, V = lam.numpy(), V.numpy()
    keep = lam > rcond * max(lam.max(), 0.0)
    root = np.sqrt(np.where(keep, lam, 0.0))
    inv = np.where(keep, 1 / np.where(keep, root, 1.0), 0.0)
    return (V * root) @ V.T, (V * inv) @ V.T


def covariance_roots(m: Moments) -> tuple[np.ndarray, np.ndarray]:
    """Σ_x^½ and Σ_x^-½ of `m`'s inputs (unbiased covariance; `_sqrt_and_isqrt`)."""
    return _sqrt_and_isqrt(m.Cxx / max(m.n - 1, 1))


def gaussian_like(m: Moments, n: int, seed: int | list[int] = 0, roots=covariance_roots) -> np.ndarray:
    """n float32 rows from N(μ_x, Σ_x) with the input mean and (unbiased) covariance of `m`. `roots` (Moments →
    (Σ^½, Σ^-½)) may be a memo's (`MapScores.roots`): each block's covariance is then decomposed once."""
    root, _ = roots(m)
    z = np.random.default_rng(seed).standard_normal((n, m.d_in))
    return (m.mean_x + z @ root).astype(np.float32)


def recolour(x: np.ndarray, source: Moments, target: Moments, roots=covariance_roots) -> np.ndarray:
    """Rows `x` (distributed like `source`'s inputs) mapped to `target`'s input mean and covariance:
    x' = μ_t + Σ_t^½ Σ_s^-½ (x − μ_s) (symmetric roots; directions without variance are dropped). `roots` as in
    `gaussian_like`."""
    if source.d_in != target.d_in:
        raise LinrecError(
            f"cannot re-colour width {source.d_in} inputs to width {target.d_in}; cross feeding needs equal widths"
        )
    mu_s, mu_t = source.mean_x, target.mean_x
    _, isq = roots(source)
    sq, _ = roots(target)
    return (mu_t + (np.asarray(x, np.float64) - mu_s) @ (isq @ sq)).astype(np.float32)


def _split_rows(capture, block: int, n_rows: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stored input rows of `block`, train and held-out (the capture's window split), at most `n_rows` in all."""
    tr, te = split_windows(capture, n_rows, seed)
    if min(len(tr), len(te)) < 2:
        raise LinrecError(
            f"block {block}: too few stored rows for a control; capture with sample_rows ≥ a few thousand"
        )
    x, _ = capture.rows(block)
    return np.asarray(x[tr]), np.asarray(x[te])


def _complete(capture, n_rows: int | None) -> bool:
    """True when the stored rows are every captured row and all of them are used."""
    total = capture.stats["train"][0].n + capture.stats["test"][0].n
    return len(capture.row_index()) == total and (n_rows is None or n_rows >= total)


class MapScores:
    """What the controls compute more than once, computed once: the held-out fit of an FFN as a map on a capture's
    stored rows (per (FFN, rows)), the rows' factored Gram matrix (per rows), and a covariance's square roots (per
    statistics).

    The controls score the same pairs more than once: FFN i on its own rows is `input_controls`' reference, one side
    of the cross feed, and (the norm gain folded or not: the same fit, since an invertible rescaling of the inputs
    leaves the closed form's fitted values unchanged) `inputs_or_weights`' trained entry; the random-init twin's FFN on
    the trained rows is asked for by both cross feeds. Different FFNs on the same rows (block i + 1's FFN on its own
    rows, block i's on them in `input_controls`, the twin's in the cross feed) share one `SharedRows`; the Gaussian
    control and both cross feeds' re-colouring share each block's covariance roots (`roots`). Pass one `MapScores` to
    each control (notebook 07 does) and each runs once: the same numbers, since a pair's rows are drawn by (block,
    n_rows, seed) alone and each computation is deterministic. Entries are keyed by the objects themselves (the
    module, the capture, the statistics), which the memo keeps alive so that a key never outlives its object.
    Thread-safe: jobs on several threads (`linrec.analyses.parallel.run_jobs`) asking for one entry compute it once,
    the others wait for it. `computed`, `reused`, `factored` and `decomposed` count the work done."""

    def __init__(self):
        self._memo: dict[tuple, object] = {}
        self._alive: list = []  # the modules, captures and statistics the keys refer to
        self._lock = threading.Lock()
        self._locks: dict[tuple, threading.Lock] = {}
        self.computed = self.reused = self.factored = self.decomposed = 0

    def _once(self, key: tuple, compute, counter: str, alive):
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._memo:
                with self._lock:
                    self.reused += counter == "computed"
                return self._memo[key]
            value = compute()
            with self._lock:
                self._memo[key] = value
                self._alive.append(alive)
                setattr(self, counter, getattr(self, counter) + 1)
            return value

    def rows(self, capture, block: int, n_rows: int | None, seed: int, label="?") -> SharedRows:
        """The stored rows of `capture`'s block `block` (`_split_rows`) as a `SharedRows`, its Gram factored once."""

        def build():
            xtr, xte = _split_rows(capture, block, n_rows, seed)
            _, te = split_windows(capture, n_rows, seed)
            return SharedRows(xtr, xte, capture.row_index()[te, 0], block=label)

        return self._once(("rows", id(capture), int(block), n_rows, seed), build, "factored", capture)

    def heldout(self, module: torch.nn.Module, capture, block: int, n_rows: int | None, seed: int, label="?"):
        """Held-out per-window sums of `module`'s best affine map on the stored rows of `capture`'s block `block`."""
        key = ("fit", id(module), id(capture), int(block), n_rows, seed)
        compute = lambda: self.rows(capture, block, n_rows, seed, label).score(module)  # noqa: E731
        return self._once(key, compute, "computed", (module, capture))

    def r2(self, module: torch.nn.Module, capture, block: int, n_rows: int | None, seed: int, label="?") -> float:
        """R² of `module` on the stored rows of `capture`'s block `block` (`_split_rows`)."""
        return self.heldout(module, capture, block, n_rows, seed, label).r2()

    def roots(self, m: Moments) -> tuple[np.ndarray, np.ndarray]:
        """`covariance_roots(m)`, decomposed once per statistics object."""
        return self._once(("roots", id(m)), lambda: covariance_roots(m), "decomposed", m)


def input_controls(
    capture,
    loaded,
    n_rows: int | None = None,
    seed: int = 0,
    progress: bool = True,
    scores: MapScores | None = None,
    workers: int | None = None,
) -> pd.DataFrame:
    """Per block: R² of the trained FFN on its own stored rows (`r2_own`), on Gaussian inputs with the
    captured mean/covariance (`r2_gaussian`), and on the inputs captured at the next block
    (`r2_other_block`; the previous one for the last block; NaN where widths differ).

    All conditions use the same numbers of train and held-out rows. When the capture stored every
    row and `n_rows` is None, `r2_own` is the capture's R²_lin itself (re-running the FFN on its
    own inputs gives the same statistics; the tests check it). `scores` shares FFN-on-rows results with the
    other controls (`MapScores`). The blocks run as jobs on `workers` threads (`linrec.analyses.parallel.run_jobs`;
    None: the caller's torch thread count): the same table at any count.
    """
    scores = MapScores() if scores is None else scores
    sites = loaded.sites
    if len(sites) != capture.n_blocks:
        raise LinrecError(
            f"the capture has {capture.n_blocks} blocks but the model has {len(sites)}; pass the capture of this model"
        )
    complete = _complete(capture, n_rows)

    def block(i: int) -> dict:  # a job: reads the capture, the memo (locked) and its own seeded draws only
        xtr, xte = _split_rows(capture, i, n_rows, seed)
        module = sites[i].ffn
        own = capture.score(i).r2 if complete else scores.r2(module, capture, i, n_rows, seed, i)
        m = capture.stats["train"][i]
        j = i + 1 if i + 1 < capture.n_blocks else i - 1
        other = float("nan")
        if j >= 0 and capture.stats["train"][j].d_in == m.d_in:
            other = scores.r2(module, capture, j, n_rows, seed, f"{i} on {j}")
        gauss = [gaussian_like(m, len(x), [seed, i, part], roots=scores.roots) for part, x in enumerate((xtr, xte))]
        return {
            "model": capture.model_label,
            "block": i,
            "n_train": len(xtr),
            "n_test": len(xte),
            "r2_own": own,
            "r2_gaussian": r2_of_map(module, *gauss, block=i)["r2"],
            "other_block": j,
            "r2_other_block": other,
        }

    out = run_jobs(block, range(capture.n_blocks), workers, desc=f"input controls {capture.model_label}",
                   unit="block", progress=progress)  # fmt: skip
    return pd.DataFrame(out)


def cross_feed(
    capture_a,
    capture_b,
    loaded_b,
    n_rows: int | None = None,
    seed: int = 0,
    progress: bool = True,
    scores: MapScores | None = None,
    workers: int | None = None,
) -> pd.DataFrame:
    """Model A's stored FFN inputs through model B's FFN at the same block, raw and re-coloured to
    B's input statistics (`recolour`), beside B's FFN on B's own inputs. Any two models of equal width.
    `scores` shares FFN-on-rows results with the other controls (`MapScores`); `workers` as in `input_controls`."""
    scores = MapScores() if scores is None else scores
    sites = loaded_b.sites
    if len(sites) != capture_b.n_blocks:
        raise LinrecError(
            f"capture B has {capture_b.n_blocks} blocks but model B has {len(sites)}; pass model B's own capture"
        )
    complete_b = _complete(capture_b, n_rows)

    def block(i: int) -> dict:  # a job: reads the captures, the memo (locked) and nothing else that changes
        sa, sb = capture_a.stats["train"][i], capture_b.stats["train"][i]
        if sa.d_in != sb.d_in:
            raise LinrecError(
                f"block {i}: widths differ ({sa.d_in} vs {sb.d_in}); cross feeding needs two models of equal width"
            )
        a_tr, a_te = _split_rows(capture_a, i, n_rows, seed)
        module = sites[i].ffn
        if complete_b:
            own = score(fit_affine(sb, block=i), capture_b.stats["test"][i], block=i).r2
        else:
            own = scores.r2(module, capture_b, i, n_rows, seed, i)
        recoloured = [recolour(a, sa, sb, roots=scores.roots) for a in (a_tr, a_te)]
        return {"inputs_from": capture_a.model_label, "ffn_of": capture_b.model_label, "block": i,
                "r2_ffn_own_inputs": own, "r2_raw": scores.r2(module, capture_a, i, n_rows, seed, i),
                "r2_recoloured": r2_of_map(module, *recoloured, block=i)["r2"]}  # fmt: skip

    out = run_jobs(block, range(min(capture_a.n_blocks, capture_b.n_blocks)), workers, unit="block",
                   desc=f"{capture_a.model_label} → {capture_b.model_label}", progress=progress)  # fmt: skip
    return pd.DataFrame(out)


# ---- claim 2, decomposed: inputs against weights ----------------------------------------------------------
def twin_pairs(models, init_seed: int) -> list[tuple[str, str]]:
    """The default cross-feeding pairs: each model with its random-init twin
    (`linrec.inputs.models.random_init_spec`), in
    both directions (inputs of A through the FFN of B)."""

    pairs = [(m, random_init_spec(m, init_seed)) for m in models]
    return pairs + [(b, a) for a, b in pairs]


def cross_feed_pairs(
    pairs,
    captures: dict,
    loaded: dict,
    config: CaptureConfig,
    run: CaptureRun = CaptureRun(),
    n_rows: int | None = None,
    seed: int = 0,
    scores: MapScores | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`cross_feed` over `pairs` [(A, B), …], and its summary: per (inputs_from, ffn_of) the median over blocks of B's
    FFN on its own inputs, on A's raw inputs and on A's inputs re-coloured to B's statistics.

    `captures` and `loaded` ({spec: Capture}, {spec: LoadedModel}) hold what is already at hand; a spec missing from
    them is captured (`get_capture` with `config`'s settings, its model that spec, run as `run` says; from the cache
    when it is there) or loaded once (on `run.device`), and added, so a model that several pairs share is loaded
    once. The blocks run on the caller's torch threads, as in `input_controls`."""

    def capture_of(name: str):
        if name not in captures:
            captures[name] = get_capture(replace(config, model=name), run)
        return captures[name]

    def model_of(name: str):
        if name not in loaded:
            loaded[name] = load_model(name, device=run.device)
        return loaded[name]

    cross = pd.concat(
        [
            cross_feed(capture_of(a), capture_of(b), model_of(b), n_rows=n_rows, seed=seed, scores=scores)
            for a, b in pairs
        ],
        ignore_index=True,
    )
    cols = ["r2_ffn_own_inputs", "r2_raw", "r2_recoloured"]
    summary = cross.groupby(["inputs_from", "ffn_of"], sort=False)[cols].median().reset_index()
    return cross, summary


def shuffled_weights(module: torch.nn.Module, seed: int | list[int] = 0) -> torch.nn.Module:
    """A copy of `module` whose every weight matrix (parameters with ≥ 2 dimensions) has its entries permuted at
    random (seeded): each matrix keeps its multiset of values, so its scale and entry distribution, and loses
    whatever structure training put in it. Vectors (biases, norm weights) are kept."""

    out = copy.deepcopy(module)
    gen = torch.Generator().manual_seed(int(np.random.default_rng(seed).integers(2**62)))
    with torch.no_grad():
        for p in out.parameters():
            if p.ndim >= 2:
                flat = p.detach().reshape(-1).cpu()
                p.copy_(flat[torch.randperm(flat.numel(), generator=gen)].reshape(p.shape).to(p.device))
    return out


class SharedRows:
    """One block's rows (train part, held-out part with its windows) for scoring many FFNs as maps on them.

    The centred train Gram matrix is built in float64 and factored once (`linrec.stats.ceiling.factor_gram`, the
    ceiling's
    own solver); each FFN then costs its forward pass, Xᵀy and one solve. `heldout` returns the held-out per-window
    sums (`linrec.stats.heldout.HeldOut`), so R² is `.r2()` (the same number as `ceiling.score` from moments; the tests
    check it) and its window bootstrap is `linrec.stats.heldout.r2_of_counts`."""

    def __init__(self, x_train, x_test, test_windows, block: int | str = "?"):
        self.x_train, self.x_test = np.asarray(x_train, np.float32), np.asarray(x_test, np.float32)
        X = torch.from_numpy(self.x_train).double()
        n, d = X.shape
        if n <= d + 1:
            raise LinrecError(f"block {block}: singular statistics: {n} train rows for {d + 1} parameters per output; "
                              "use more rows (control_rows) or a capture with more tokens")  # fmt: skip
        self.mean_x = X.mean(0)
        self.Xc = X - self.mean_x
        self.factor = factor_gram((self.Xc.T @ self.Xc).numpy(), block=block)
        self.X_test = torch.from_numpy(self.x_test).double()
        self.windows, self.window_of = np.unique(np.asarray(test_windows), return_inverse=True)
        self.block = block

    def heldout(self, y_train, y_test) -> HeldOut:
        """Fit y_train on the train rows (closed form) and return the held-out per-window sums on y_test."""
        Y, Yt = torch.as_tensor(y_train).double(), torch.as_tensor(y_test).double()
        if not (torch.isfinite(Y).all() and torch.isfinite(Yt).all()):
            raise LinrecError(f"block {self.block}: the FFN returned NaN/inf on these inputs; check the inputs' scale")
        mean_y = Y.mean(0)
        W = torch.from_numpy(self.factor.solve((self.Xc.T @ (Y - mean_y)).numpy()))
        b = mean_y - self.mean_x @ W
        e2 = ((Yt - self.X_test @ W - b) ** 2).sum(1)
        c = Yt - mean_y
        k = len(self.windows)
        idx = torch.from_numpy(self.window_of)

        def per_window(v):
            return torch.zeros((k, *v.shape[1:]), dtype=torch.float64).index_add_(0, idx, v).numpy()

        return HeldOut(
            windows=self.windows.astype(np.int64),
            n=np.bincount(self.window_of, minlength=k).astype(np.int64),
            sse=per_window(e2)[:, None],
            sy=per_window(c),
            syy=per_window((c * c).sum(1))[:, None],
            shift=mean_y.numpy(),
        )

    def score(self, module: torch.nn.Module) -> HeldOut:
        """`module` as a map on these rows: held-out per-window sums of its best affine map."""
        return self.heldout(ffn_outputs(module, self.x_train), ffn_outputs(module, self.x_test))


def split_windows(capture, n_rows: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row positions (into the stored rows) of the train and held-out parts, as `_split_rows` draws them."""
    idx = capture.row_index()
    rng = np.random.default_rng([seed, 7])
    parts = []
    for split in (0, 1):
        sel = np.flatnonzero(idx[:, 2] == split)
        if n_rows is not None and len(idx) > n_rows:
            k = int(round(n_rows * len(sel) / len(idx)))
            sel = np.sort(rng.choice(sel, size=k, replace=False))
        parts.append(sel)
    return parts[0], parts[1]


def random_init_summary(profiles: pd.DataFrame, init_seeds: Iterable[int]) -> pd.DataFrame:
    """Per model: its trained R²_lin profile against its random-init twins (`weights` = "trained" or
    "random init, seed S"), and the twins against each other."""
    seeds = list(init_seeds)
    rows = []
    for model, p in profiles.groupby("model", sort=False):
        tr = p[p["weights"] == "trained"].sort_values("block")["r2_lin"].to_numpy()
        ini = [p[p["weights"] == f"random init, seed {s}"].sort_values("block")["r2_lin"].to_numpy() for s in seeds]
        init0 = p[p["weights"] == f"random init, seed {seeds[0]}"]
        row = {
            "model": model,
            "trained_r2_min": float(tr.min()),
            "trained_r2_max": float(tr.max()),
            "init_r2_min": float(min(i.min() for i in ini)),
            "init_r2_max": float(max(i.max() for i in ini)),
            "init_r2_spread": float(np.std(ini[0])),  # across blocks, seed 0: against the seed-to-seed difference
            "mean_abs_trained_init": float(sum(abs(tr - i).mean() for i in ini) / len(ini)),
            "spearman_trained_init": spearman(tr, ini[0])[0],
            "init_r2_train_median": float(init0["r2_train"].median()),
            "trained_gap_median": float(
                (p.loc[p["weights"] == "trained", "r2_train"] - p.loc[p["weights"] == "trained", "r2_lin"]).median()
            ),  # fmt: skip
            "init_r2_test_median": float(init0["r2_lin"].median()),
            "mean_abs_init_seeds": float(abs(ini[0] - ini[1]).mean()) if len(ini) > 1 else np.nan,
            "spearman_init_seeds": spearman(ini[0], ini[1])[0] if len(ini) > 1 else np.nan,
        }
        rows.append(row)
    return pd.DataFrame(rows)


def input_control_summary(inputs: pd.DataFrame) -> pd.DataFrame:
    """Per model: the trained FFNs scored on their own inputs, on Gaussian inputs with the same moments, and on the
    next block's inputs."""
    rows = []
    for model, t in inputs.groupby("model", sort=False):
        rows.append(
            {
                "model": model,
                "r2_own_median": float(t["r2_own"].median()),
                "r2_gaussian_median": float(t["r2_gaussian"].median()),
                "n_gaussian_drop": int((t["r2_gaussian"] < t["r2_own"] - GAUSSIAN_DROP).sum()),
                "r2_next_block_median": float(t["r2_other_block"].median()),
                "spearman_own_gaussian": spearman(t["r2_own"], t["r2_gaussian"])[0],
            }
        )
    return pd.DataFrame(rows)


def learned_summary(init_summary: pd.DataFrame, blocks: pd.DataFrame | None = None) -> pd.DataFrame:
    """Claim 2a per model: the trained profile against the untrained architecture.

    Two references, each with its own noise: the random-init twin on its own inputs (`effect_twin` = mean |trained −
    init| over blocks and seeds, `noise_twin` = mean |seed − seed|, from `random_init_summary`), and the random-init
    FFN ensemble on the trained inputs (`effect_null` = mean over blocks of |trained − the ensemble's mean|,
    `noise_null` = mean over blocks of the mean |draw − draw|, from `null_blocks`). The twin is `twin_degenerate`
    when its median train − held-out gap exceeds the trained model's by more than CLAIM2_DEGENERATE_GAP; the
    verdict's reference is then the null ensemble."""
    rows = []
    by_model = {} if blocks is None else {m: t for m, t in blocks.groupby("model", sort=False)}
    for r in init_summary.to_dict("records"):
        twin_gap = r["init_r2_train_median"] - r["init_r2_test_median"]
        trained_gap = r.get("trained_gap_median", np.nan)
        b = by_model.get(r["model"])
        effect_null = noise_null = np.nan
        if b is not None and (b["n_init"] > 1).all():
            effect_null = float((b["r2_trained"] - b["init_mean"]).abs().mean())
            noise_null = float(b["init_pair_gap"].mean())
        degenerate = bool(np.isfinite(trained_gap) and twin_gap - trained_gap > CLAIM2_DEGENERATE_GAP)
        rows.append(
            {
                "model": r["model"],
                "twin_gap": float(twin_gap),
                "trained_gap": float(trained_gap),
                "twin_degenerate": degenerate,
                "effect_twin": float(r["mean_abs_trained_init"]),
                "noise_twin": float(r["mean_abs_init_seeds"]),
                "effect_null": effect_null,
                "noise_null": noise_null,
                "reference": "random-init FFNs on the trained inputs" if degenerate else "random-init twin",
                "effect": effect_null if degenerate else float(r["mean_abs_trained_init"]),
                "noise": noise_null if degenerate else float(r["mean_abs_init_seeds"]),
            }
        )
    return pd.DataFrame(rows)
