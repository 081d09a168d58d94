"""Where a run's time goes, per stage: every loop that shows a progress bar (`linrec.base.progress.bar`) is a stage,
and where a runner asks for it (LINREC_STAGES names a file) each one writes a row there as it ends: its name (the
bar's `desc`), how many steps it ran, its wall and CPU seconds, and how much model work it did, counted as the
tokens that went through whole models (`model_tokens`: every call of a transformer block adds its tokens over the
model's number of blocks, so a swap evaluated from a cached hidden state counts the blocks it reran, not a forward:
a block answering from `linrec.analyses.perplexity`'s prefix cache runs nothing and counts nothing). The hook is
marked passive, so a model carrying it stays keyable for the evaluation memo (`linrec.analyses.memo`).

`linrec figures` sets LINREC_STAGES for each notebook's kernel and gathers the rows into `stages.csv` beside the
executed notebooks (`linrec.app.records.record_stages`); benchmarks/stages.py turns them into a per-stage profile.
Nothing is recorded, and no hook is installed on a model, where LINREC_STAGES is unset: a run outside the runner
pays nothing for it.

A stage inside another (a bar opened while another is open) has `depth` 1, 2, …: the outer stage's seconds include
it, so a profile sums the rows of depth 0 only.
"""

from __future__ import annotations

import csv
import os
import resource
import threading
import time

ENV = "LINREC_STAGES"  # the file each stage's row is appended to (a CSV with `COLUMNS`); unset: nothing recorded
COLUMNS = ("notebook", "stage", "depth", "unit", "steps", "wall_s", "cpu_s", "model_tokens")
_WATCHED = "_linrec_stages_hook"  # the attribute that marks a block already counted
PASSIVE = "linrec_passive"  # marks a hook that only counts: what the module returns is unchanged (analyses.memo)

_tokens = 0.0  # tokens through whole models so far in this process (block calls' tokens / the model's block count)
_main_open = 0  # stages open now in the main thread
_LOCAL = threading.local()  # .open: stages open now in this thread
_LOCK = threading.Lock()  # the counters and the file, shared by stages on worker threads (analyses.parallel.run_jobs)


def _depth() -> int:
    """The depth a stage opened now gets: the stages open in its thread, and in a worker thread also the main
    thread's (which started the work, so its open stages contain this one)."""
    here = getattr(_LOCAL, "open", 0)
    return here if threading.current_thread() is threading.main_thread() else here + _main_open


def _opened(step: int) -> None:
    global _main_open
    _LOCAL.open = max(getattr(_LOCAL, "open", 0) + step, 0)
    if threading.current_thread() is threading.main_thread():
        _main_open = _LOCAL.open


def recording() -> str | None:
    """The file stages are written to, or None (LINREC_STAGES unset or empty)."""
    return os.environ.get(ENV) or None


def model_tokens() -> float:
    """Tokens through whole models so far in this process (see the module's docstring)."""
    return _tokens


def watch_blocks(blocks) -> None:
    """Count the tokens that go through `blocks` (a model's transformer blocks, all of them, in order), each call
    adding its hidden state's tokens over len(blocks): only while recording, and once per block."""
    if recording() is None:
        return
    blocks = list(blocks)
    share = 1.0 / len(blocks)

    def count(module, args, kwargs):
        global _tokens
        if "forward" in vars(module):  # answering from a cached prefix (linrec.analyses.perplexity): it runs nothing
            return
        hidden = args[0] if args else kwargs.get("hidden_states")
        if hidden is not None and hasattr(hidden, "shape") and len(hidden.shape) >= 2:
            with _LOCK:
                _tokens += share * float(hidden.shape[:-1].numel())

    setattr(count, PASSIVE, True)  # a model's evaluations stay keyable with it (linrec.analyses.memo._hooks)
    for block in blocks:
        if getattr(block, _WATCHED, None) is None:
            setattr(block, _WATCHED, block.register_forward_pre_hook(count, with_kwargs=True))


def _cpu_seconds() -> float:
    """This process's CPU seconds, its threads' and its ended child processes' included."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class Stage:
    """One stage being timed: opened by `start`, written by `end` (once; a second call does nothing)."""

    def __init__(self, name: str, unit: str):
        with _LOCK:
            self.name, self.unit, self.depth = name, unit, _depth()
            _opened(+1)
        self.wall, self.cpu, self.tokens = time.perf_counter(), _cpu_seconds(), _tokens
        self.ended = False

    def end(self, steps: int | float | None) -> None:
        if self.ended:
            return
        self.ended = True
        with _LOCK:
            _opened(-1)
        path = recording()
        if path is None:
            return
        row = {
            "notebook": os.environ.get("LINREC_NOTEBOOK", ""),
            "stage": self.name,
            "depth": self.depth,
            "unit": self.unit,
            "steps": "" if steps is None else int(steps),
            "wall_s": f"{time.perf_counter() - self.wall:.3f}",
            "cpu_s": f"{_cpu_seconds() - self.cpu:.3f}",
            "model_tokens": f"{_tokens - self.tokens:.1f}",
        }
        with _LOCK, open(path, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            if f.tell() == 0:
                writer.writeheader()
            writer.writerow(row)


def start(name: str, unit: str = "it") -> Stage | None:
    """A `Stage` named `name`, or None where nothing is recorded."""
    return Stage(name, unit) if recording() is not None else None


class _Timed:
    """A progress bar (a tqdm) that ends its stage when its loop ends, when its `with` block leaves, or when it is
    closed, whichever comes first; everything else is the bar's own (attributes, `update`, `len`)."""

    def __init__(self, progress, stage: Stage):
        self._progress, self._stage, self._steps = progress, stage, None

    def __getattr__(self, name):
        return getattr(self._progress, name)

    def __iter__(self):
        self._steps = 0
        try:
            for item in self._progress:  # a disabled tqdm counts nothing: the steps are counted here
                self._steps += 1
                yield item
        finally:
            self._end()

    def __len__(self):
        return len(self._progress)

    def __enter__(self):
        self._progress.__enter__()
        return self

    def __exit__(self, *exc):
        self._end()
        return self._progress.__exit__(*exc)

    def close(self) -> None:
        self._end()
        self._progress.close()

    def _end(self) -> None:
        self._stage.end(self._steps if self._steps is not None else getattr(self._progress, "n", None))


def timed(progress, desc: str, unit: str = "it"):
    """`progress` (a tqdm) as a `_Timed` that records a stage named `desc` (a disabled tqdm keeps no `desc`);
    returned as it was where nothing is recorded."""
    stage = start(desc or "loop", unit)
    return progress if stage is None else _Timed(progress, stage)
