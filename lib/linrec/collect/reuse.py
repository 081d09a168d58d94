"""A capture request before it runs: a cached capture that serves it with more stored rows than it asks for, what one
that is not cached will cost, and the notices said about it (`linrec.collect.capture.get_captures` calls these).

**Fewer rows from a capture that holds more.** A capture's statistics, held-out sums and first positions do not
depend on how many raw rows it keeps (`sample_rows`); only the stored row sample does, and that sample is a seeded
choice of global row numbers (`row_selection`), the same function of (rows in the corpus, rows kept, seed) whatever
the model. So a request for k rows is served by a cached capture of the same settings that keeps K > k rows exactly
when every row a fresh k-row capture would keep is among the K stored: then the served capture holds those rows, in
the same order, and every number read from it is the one a fresh capture would give, bit for bit. numpy's seeded
choice keeps that for most k (at 20,480 rows, every k from 1,000 to 10,240 is inside the 10,240-row sample) but not
every one, so it is checked, never assumed; a request for 0 rows (statistics only) is served by any K. Notebooks 02
and 04 ask for 0 rows, so the capture notebook 05 made of another corpus (statistics only) serves them too.

**The cost said before it is paid.** Before a capture that is not cached runs, one line names it and estimates its
time from the parameters its forward multiplies by (`compute_params`: the embedding tables are looked up and the LM
head never runs, since the pass stops after the last block) and the tokens the corpus gives (not those asked for: a
512-token corpus asked for 40,000 is 512 tokens of work): seconds per token and parameter as this machine's earlier
captures took (their meta.json records the seconds, the tokens and, since issue 65, those parameters; earlier entries
of the same model count with this model's), else `REFERENCE_SECONDS`. In a notebook's cell (Run All in Lab on a fresh
clone makes its captures there, each announced so) the line goes on with the quicker paths, `QUICKER`.

**What the rows allow, said before the pass** (`say_rows`): a corpus that holds fewer windows than the budget asks for,
and train rows too few for the blocks' width. A least-squares map with p = d + 1 parameters per output, fitted on n
train rows, loses about (1 − R²)·p/(n − p − 1) of R² held out; under `ROWS_PER_PARAMETER` rows a parameter that bias
is over a tenth of the unexplained share (SmolLM2's block 0 read 0.53 on 2,048 train rows, 0.909 on 12,160), and at
n ≤ p no map can be fitted. The line names the fix: a larger corpus where the corpus ran out, else more `--tokens`.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from linrec.base import progress as _progress
from linrec.base.cache import entry_path, folder
from linrec.base.errors import LinrecError
from linrec.base.files import unseal
from linrec.base.progress import notice
from linrec.collect.config import CaptureConfig
from linrec.inputs.source import ModelSource
from linrec.stats.distributed import world

log = logging.getLogger(__name__)

# CPU-thread seconds per token and compute parameter (`compute_params`) of a capture on CPU, statistics only: a
# capture's seconds are this × compute parameters × tokens / threads, × ROWS_COST where it keeps a row sample. From
# the captures measured on 2 cores (AMD EPYC): SmolLM2-135M (106.2M compute parameters of its 134.5M) 39.5 s at
# 20,480 tokens on 2 threads, statistics only (results/bench/capture.csv, 2026-11-24: 3.6e-11 thread-seconds) and
# 83-173 s with rows kept in notebook 01 on 2 threads (6-12e-11 after ROWS_COST); Gemma-3-270M (100.3M of 268M: its
# 262k-token embedding is most of it) 55-274 s there; measured 2026-11-27 on 1 thread beside other jobs (load 3.3 on
# 2 cores), statistics only: SmolLM2-135M 51.1 s at 4,096 tokens (1.2e-10), MiniLM-L6 (10.8M) 28.1 s at 20,480
# (1.3e-10), first:4:smollm2-135m (14.2M) 4.2 s at 4,096 (7.2e-11). (Until issue 65 it was 4e-14 per parameter,
# about 1,000× too small: every first capture said "about 1 s".)
REFERENCE_SECONDS = 7e-11
ROWS_COST = 1.3  # a capture keeping a row sample over one keeping statistics only (1.51 / 1.16 in the benchmark)
ROWS_PER_PARAMETER = 10  # train rows per fitted parameter (d + 1) under which R²_lin is said to be biased low
# After the cost line where it reaches a notebook's cell (`notice`): Run All in Lab on a fresh clone makes every
# capture its notebooks need, one cell at a time (about 50 min on 2 cores for the default profile); the quicker paths.
QUICKER = (
    "this cell computes it now; quicker: `make figures` in a terminal makes every notebook's captures first (Run All "
    'then reads them), or profile_file = "params/smoke.yaml" in the parameters cell runs the small smoke profile'
)
# In a notebook without a parameters cell (00, which makes its one small capture on purpose, uncached): no profile to
# change and nothing to cache first, so only what happens.
IN_THIS_CELL = "this cell computes it now"


def quicker() -> str:
    """What the cost line goes on with in a notebook's cell: `QUICKER` in a notebook with a parameters cell (the
    numbered ones), `IN_THIS_CELL` in one without (00: Jupyter's server names the notebook in JPY_SESSION_NAME)."""
    session = os.environ.get(_progress.SESSION_ENV, "").strip()
    try:
        source = Path(session).read_text(errors="replace") if session else None
    except OSError:
        source = None
    return IN_THIS_CELL if source is not None and '"parameters"' not in source else QUICKER  # the cell's tag


def row_selection(n_rows: int, k: int, seed: int) -> np.ndarray:
    """The global row numbers (train windows first, then test, row-major within a window) a capture of `n_rows` rows
    keeps when asked for `k`, sorted: a seeded choice without replacement, the same for every model."""
    rng = np.random.default_rng([seed, 1])
    return np.sort(rng.choice(n_rows, size=min(k, n_rows), replace=False))


def larger_capture(
    model: str, config: CaptureConfig, source: ModelSource | None = None
) -> tuple[Path, CaptureConfig, np.ndarray | None] | None:
    """A cached capture of `model` with `config`'s settings but more stored rows whose row sample holds every row a
    capture of `config` would keep: (its entry, its config, the positions of those rows among its stored rows; None
    when `config` keeps none); the one storing fewest rows where several do. None if there is none. `source`: `model`
    parsed, where the caller has it (`CaptureConfig.key`)."""
    here = folder("capture")
    if not here.is_dir():
        return None
    prefix = entry_path("capture", model, "x").name[:-1]  # "<model slug>-"
    found = []
    for entry in here.iterdir():
        if not entry.name.startswith(prefix) or not (entry / "meta.json").is_file():
            continue
        try:
            meta = unseal(entry / "meta.json")
            stored = int(meta["config"]["sample_rows"])
            windows = sum(int(v) for v in meta["n_windows"].values())
        except (ValueError, KeyError, TypeError, OSError):
            continue  # damaged or another kind of entry: the cache's own reading deals with it
        if stored <= config.sample_rows:
            continue
        theirs = replace(config, sample_rows=stored)
        if entry_path("capture", model, theirs.key(source)) != entry:
            continue  # other settings, another model's weights or another corpus
        found.append((stored, entry, theirs, windows * config.seq_len))
    for stored, entry, theirs, n_rows in sorted(found, key=lambda f: f[0]):
        if config.sample_rows == 0:
            return entry, theirs, None
        big, small = row_selection(n_rows, stored, config.seed), row_selection(n_rows, config.sample_rows, config.seed)
        at = np.searchsorted(big, small)
        if np.all(at < len(big)) and np.array_equal(big[np.minimum(at, len(big) - 1)], small):
            return entry, theirs, at
    return None


def served(capture, config: CaptureConfig, positions: np.ndarray | None):
    """`capture` (read from a larger entry) as the capture of `config`: its rows limited to `positions` (none when
    `config` keeps none), and its recorded settings those asked for (it is fresh from `_load`: no row index read)."""
    capture.config = config
    capture.meta = {**capture.meta, "config": asdict(config)}
    capture.row_subset = positions
    return capture


def compute_params(model) -> int:
    """The parameters a capture's forward multiplies by: every parameter of `model` but its embedding tables' (looked
    up, not multiplied) and its output head's (the pass stops after the last block); tied weights counted once."""
    import torch  # here, not at the top: only a capture that runs needs it

    skip = {id(p) for m in model.modules() if isinstance(m, torch.nn.Embedding) for p in m.parameters(recurse=False)}
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is not None:
        skip |= {id(p) for p in head.parameters()}
    return int(sum(p.numel() for p in model.parameters() if id(p) not in skip))


# A capture measured on fewer tokens than this does not set the rate: its fixed cost (loading, the first batch's
# allocations) dominates its seconds per token (the smoke profile's 2,560-token captures, cached by `make test`, put
# the default's first 20,480-token capture at "about 36 min" for the 33 s it took, 2026-11-29).
RATE_MIN_TOKENS = 8192


def estimate_seconds(
    model_label: str, n_params: int, tokens: int, threads: int | None = 1, rows: bool = False
) -> tuple[float | None, str]:
    """Seconds a capture of `tokens` tokens with a model of `n_params` compute parameters (`compute_params`) will take
    here on `threads` CPU threads (None: on an accelerator), `rows` whether it keeps a row sample; and on what the
    estimate rests: the median thread-seconds per token and compute parameter of this machine's cached captures on
    the same kind of device of at least `RATE_MIN_TOKENS` tokens (those of this model that predate the record counted
    with its size), else
    `REFERENCE_SECONDS` (× `ROWS_COST` with rows); on an accelerator with no capture measured there, (None, why)."""
    rates = []
    try:
        here = folder("capture")
    except LinrecError:  # no cache folder (an uncreatable $LINREC_CACHE: `linrec.api` needs none): the reference rate
        here = None
    for meta_file in here.glob("*/meta.json") if here is not None and here.is_dir() else []:
        try:
            meta = unseal(meta_file)
            params = meta.get("compute_params") or (n_params if meta.get("model_label") == model_label else None)
            on_cpu = str(meta.get("device", "cpu")) == "cpu"
            big = float(meta.get("tokens_used") or 0) >= RATE_MIN_TOKENS  # a small capture's fixed cost dominates
            if params and meta.get("seconds") and big and on_cpu == (threads is not None):
                spent = float(meta["seconds"]) * (int(meta.get("threads") or 1) if on_cpu else 1)
                rates.append(spent / (float(meta["tokens_used"]) * float(params)))
        except (ValueError, OSError, TypeError):
            continue
    per_thread = 1 if threads is None else max(int(threads), 1)
    if rates:
        basis = f"the {len(rates)} capture(s) cached here" if len(rates) > 1 else "the capture cached here"
        return float(np.median(rates)) * n_params * tokens / per_thread, basis
    if threads is None:
        return None, "no capture on this device is cached yet to estimate it from"
    rate = REFERENCE_SECONDS * (ROWS_COST if rows else 1.0)
    return rate * n_params * tokens / per_thread, f"the reference rate on {per_thread} CPU thread(s)"


def duration(seconds: float) -> str:
    """`seconds` as a cost line says them: "about 2 min" from 90 s, else "about 40 s" (never under 1 s)."""
    return "about " + (f"{seconds / 60:.0f} min" if seconds >= 90 else f"{max(seconds, 1):.0f} s")


def say_cost(
    model_label: str, config: CaptureConfig, n_params: int, tokens: int, threads: int | None = 1
) -> float | None:
    """The line said before a capture runs (one not in the cache, or asked for with --no-cache), once its plan has
    passed the memory and disk checks: what it is and about how long it will take, from the `tokens` its windows hold
    on `threads` CPU threads (None: an accelerator), and in a notebook's cell the quicker paths (`QUICKER`); by rank
    0 alone under torchrun. Returns the estimate in seconds (None where none is made), which `Pace` revises once the
    first batches show this machine's own pace."""
    if world()[0] != 0:
        return None
    seconds, basis = estimate_seconds(model_label, n_params, tokens, threads, rows=config.sample_rows > 0)
    if seconds is None:
        took = f"time not estimated ({basis}"
    else:
        took = f"{duration(seconds)} (from {basis}"
    kept = min(config.sample_rows, tokens)  # the sample keeps no more rows than the windows make
    rows = f", {kept:,} rows kept" if kept else ""
    asked = f" of the {config.tokens:,} asked for" if tokens < config.tokens else ""
    count = f"{n_params / 1e6:.0f}M" if n_params >= 1e6 else f"{n_params / 1e3:.0f}k"
    notice(
        f"capturing {model_label} on {config.corpus} ({tokens:,} tokens{asked}{rows}): {took}; "
        f"{count} parameters multiplied per token)",
        in_notebook=quicker(),
    )
    return seconds


# The estimate is revised where the measured pace says otherwise: after FIRST_LOOK batches (the first, which carries
# the warm-up, is left out of the pace), and again at each doubling of the batches done, one line each time the
# revised time is off the last said one by more than REVISE of it (off by more than half: under 0.5× or over 1.5×).
FIRST_LOOK = 3
REVISE = 0.5


class Pace:
    """The estimate said before a capture (`say_cost`), revised by the pace its batches run at: `tick()` after each
    batch; after `FIRST_LOOK` of them, and at 2×, 4×, … as many, the remaining batches are timed at the pace measured
    since the first one ended, and where the total that makes differs from the last time said by more than `REVISE`
    of it, one line says the measured pace and the revised time (`notice`). On a machine busy with other work, a
    capture estimated at "about 76 s" that will take 6:30 says so after its first batches, not at the end.
    `clock` is the seconds counter (a test passes a fake one)."""

    def __init__(self, estimate: float | None, total: int, clock=time.perf_counter, say=None):
        self.said, self.total, self.clock = estimate, total, clock
        self.say = say or notice
        self.t0 = clock()
        self.first_done: float | None = None
        self.done = 0
        self.look = FIRST_LOOK
        self.revisions: list[float] = []  # every revised total said, in seconds

    def revised(self) -> float | None:
        """The total seconds the batches done so far point to (elapsed + the rest at the measured pace), or None
        before two batches are done."""
        if self.done < 2 or self.first_done is None:
            return None
        now = self.clock()
        per_batch = (now - self.first_done) / (self.done - 1)
        return (now - self.t0) + per_batch * (self.total - self.done)

    def tick(self, n: int = 1) -> None:
        self.done += n
        if self.first_done is None:
            self.first_done = self.clock()
        if self.done < self.look or self.done >= self.total:
            return
        self.look *= 2
        total = self.revised()
        if total is None or self.said is None:
            return
        if abs(total - self.said) > REVISE * self.said:
            elapsed = self.clock() - self.t0
            pace = (self.clock() - self.first_done) / (self.done - 1)
            self.say(
                f"measured pace: {pace:.1f} s a batch over {self.done} of {self.total} batches ({elapsed:.0f} s so "
                f"far); revised: {duration(total)} in all, {duration(total - elapsed)} left (it was "
                f"{duration(self.said)})"
            )
            self.said = total
            self.revisions.append(total)


def rows_problem(config: CaptureConfig, n_windows: int, n_train_rows: int, d: int) -> tuple[str, bool] | None:
    """What `n_train_rows` train rows (in `n_windows` windows) allow a `d`-wide block, in words with the fix, and
    whether no map can be fitted at all; None where they are enough (`ROWS_PER_PARAMETER` a parameter). The fix is
    a larger corpus where the corpus holds fewer windows than `config.tokens` asks for (not where a document split's
    own cut made them fewer), else a larger --tokens."""
    p = d + 1
    if n_train_rows >= ROWS_PER_PARAMETER * p:
        return None
    short = n_windows < config.tokens // config.seq_len and not _cut_short(config, n_windows)
    need = int(np.ceil(ROWS_PER_PARAMETER * p / (1 - config.test_frac) / config.seq_len)) * config.seq_len
    fix = (
        f"the corpus is too small: give a larger corpus (about {need:,} tokens or more; --tokens {config.tokens:,} "
        "cannot take more text than it holds)"
        if short
        else f"raise --tokens to about {need:,}"
    )
    if n_train_rows <= p:
        return (
            f"{config.model} on {config.corpus}: {n_train_rows:,} train rows for a {d}-wide block: no affine map can "
            f"be fitted (it needs more than d + 1 = {p} rows); {fix}",
            True,
        )
    bias = p / (n_train_rows - p - 1)
    return (
        f"{config.model} on {config.corpus}: too few train rows for the FFN width: {n_train_rows:,} for a {d}-wide "
        f"block ({n_train_rows / p:.1f} per fitted parameter), so R²_lin is biased low (by about {bias:.2f} × "
        f"(1 − R²)); {fix}",
        False,
    )


def say_rows(config: CaptureConfig, n_windows: int, n_train_rows: int, dims: list[tuple[int, int]]) -> None:
    """Before a capture's pass: a corpus shorter than the budget, and train rows too few for the widest block
    (`rows_problem`), each one line (by rank 0 alone under torchrun). Rows too few for an affine map of any block
    (of the narrowest) are refused here, on every rank, before the pass and before anything is cached; where only
    wider blocks lack them, those blocks get no fit and the capture goes on."""
    first = world()[0] == 0
    if first and n_windows < config.tokens // config.seq_len:
        short, why = _short(config, n_windows)
        notice(f"{short}: using {n_windows * config.seq_len:,} tokens of the {config.tokens:,} asked for ({why})")
    unfit = rows_problem(config, n_windows, n_train_rows, min(d for d, _ in dims))
    problem = rows_problem(config, n_windows, n_train_rows, max(d for d, _ in dims))  # its fix fits every block
    if unfit is not None and unfit[1]:
        raise LinrecError(problem[0])
    if first and problem is not None:
        notice(problem[0])


def say_entry(capture) -> None:
    """One line on a command's console (not in a notebook, whose cells say nothing of a capture the cache serves):
    the capture's cache entry, read or just written, its size on disk and where it is (`linrec cache list`)."""
    if world()[0] != 0 or _progress.in_kernel() or capture.path is None or not Path(capture.path).is_dir():
        return
    size = sum(f.stat().st_size for f in Path(capture.path).rglob("*") if f.is_file())
    verb = "read from" if capture.cached else "written to"
    mib = f"{size / 2**20:,.0f}" if size >= 10 * 2**20 else f"{size / 2**20:.1f}"
    notice(f"{capture.model_label} on {capture.config.corpus}: capture {verb} the cache ({mib} MiB, {capture.path}; "
           "`linrec cache list` lists the entries)")  # fmt: skip


def notice_short(capture) -> None:
    """A capture read from the cache: say so, in one line, when the corpus held fewer windows than the token budget
    asked for (a capture that runs says it before its pass: `say_rows`)."""
    c = capture.config
    asked = c.tokens // c.seq_len
    got = sum(capture.meta["n_windows"].values())
    if got < asked:
        short, why = _short(c, got)
        rows = capture.meta["n_rows"]
        notice(f"{short}: using {got * c.seq_len:,} tokens of the {c.tokens:,} asked for ({rows['train']:,} train "
               f"and {rows['test']:,} test rows per block; {why})")  # fmt: skip


def _cut_short(config: CaptureConfig, n_windows: int) -> bool:
    """Whether a document split's own cut, not the corpus, made `n_windows` fewer than asked: it drops the train and
    the held-out stream's last partial window, at most two (`linrec.inputs.corpora.make_windows`)."""
    return config.split == "documents" and config.tokens // config.seq_len - n_windows <= 2


def _short(config: CaptureConfig, n_windows: int) -> tuple[str, str]:
    """A capture of fewer windows than asked for, in words: (what it holds, why), the cut's or the corpus's."""
    where = f"{n_windows} windows of {config.seq_len} tokens"
    if _cut_short(config, n_windows):
        return (f"corpus '{config.corpus}' gives {where}",
                "split 'documents' drops the train and the held-out text's last partial windows")  # fmt: skip
    return f"corpus '{config.corpus}' holds only {where}", "a larger corpus gives more"
