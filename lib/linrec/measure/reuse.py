"""A capture request before it runs: a cached capture that serves it with more stored rows than it asks for, what one
that is not cached will cost, and the notices said about it (`linrec.measure.capture.get_captures` calls these).

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
time from the model's size and the tokens: seconds per token and parameter as this machine's earlier captures took
(their meta.json records the seconds, the tokens and, since this module, the parameters; earlier entries of the same
model count with this model's size), else `REFERENCE_SECONDS` (the default run's captures on 2 cores).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from linrec.base.cache import entry_path, folder
from linrec.base.files import unseal
from linrec.base.progress import notice
from linrec.inputs.source import ModelSource
from linrec.measure.config import CaptureConfig
from linrec.stats.distributed import world

log = logging.getLogger(__name__)

# Seconds per token and model parameter of a capture with stored rows on 2 CPU cores: the default run's captures
# (2026-11-26, AMD EPYC, one thread each beside another notebook) took 83–173 s for SmolLM2-135M (134.5M parameters)
# and 75–274 s for Gemma-3-270M (268M) on 20,480 tokens, 15 s for MiniLM-L6 (22.7M): 1.4e-14 to 5e-14.
REFERENCE_SECONDS = 4e-14


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


def estimate_seconds(model_label: str, n_params: int, tokens: int) -> tuple[float, str]:
    """Seconds a capture of `tokens` tokens with a model of `n_params` parameters will take here, and on what the
    estimate rests: the median seconds per token and parameter of this machine's cached captures (those of this
    model counted with its size), else `REFERENCE_SECONDS`."""
    rates = []
    here = folder("capture")
    for meta_file in here.glob("*/meta.json") if here.is_dir() else []:
        try:
            meta = unseal(meta_file)
            params = meta.get("params") or (n_params if meta.get("model_label") == model_label else None)
            if params and meta.get("seconds") and meta.get("tokens_used"):
                rates.append(float(meta["seconds"]) / (float(meta["tokens_used"]) * float(params)))
        except (ValueError, OSError, TypeError):
            continue
    if rates:
        basis = f"the {len(rates)} capture(s) cached here" if len(rates) > 1 else "the capture cached here"
        return float(np.median(rates)) * n_params * tokens, basis
    return REFERENCE_SECONDS * n_params * tokens, "the default run's captures on 2 cores"


def say_cost(model_label: str, config: CaptureConfig, n_params: int, n_rows: int | None = None) -> None:
    """The line said before a capture runs (one not in the cache, or asked for with --no-cache), once its plan has
    passed the memory and disk checks: what it is and about how long it will take (by rank 0 alone under torchrun).
    `n_rows`: the rows its windows make, the most its row sample keeps."""
    if world()[0] != 0:
        return
    seconds, basis = estimate_seconds(model_label, n_params, config.tokens)
    took = f"{seconds / 60:.0f} min" if seconds >= 90 else f"{max(seconds, 1):.0f} s"
    kept = config.sample_rows if n_rows is None else min(config.sample_rows, n_rows)
    rows = f", {kept:,} rows kept" if kept else ""
    notice(
        f"capturing {model_label} on {config.corpus} ({config.tokens:,} tokens{rows}): about {took} "
        f"(from {basis}; {n_params / 1e6:.0f}M parameters)"
    )


def notice_short(capture) -> None:
    """Say so, in one line, when the corpus held fewer windows than the token budget asked for."""
    c = capture.config
    asked = c.tokens // c.seq_len
    got = sum(capture.meta["n_windows"].values())
    if got < asked:
        log.warning(
            "corpus '%s' holds only %d windows of %d tokens: using %d tokens of the %d asked for "
            "(n_train %d, n_test %d rows per block)",
            c.corpus,
            got,
            c.seq_len,
            got * c.seq_len,
            c.tokens,
            capture.meta["n_rows"]["train"],
            capture.meta["n_rows"]["test"],
        )
