"""Small decoder-only language models trained from scratch, with checkpoints: notebook 08's seeds experiment and zoo.

The paper's title claim (arXiv 2606.19379: recoverability is "learned, not architectural") rests on published models
that differ in much more than their weights. This module trains controlled versions: one thing changed at a time.

**Layouts.** `layout` is a row of `linrec.inputs.layouts.LAYOUTS`, each built from transformers' own classes so every
other stage loads, captures and swaps it like any model: `gelu` and `swiglu` (the llama decoder with a plain GELU MLP,
`ArceeForCausalLM`, or its own SwiGLU MLP, `LlamaForCausalLM`; the seeds experiment's two variants), and the paper's
three layouts in miniature, `gpt2` (`GPT2LMHeadModel`), `pythia` (`GPTNeoXForCausalLM`: partial rotary, parallel
residual) and `llama` (`LlamaForCausalLM`). By default every layout's blocks hold the same parameters (within 0.2 % at
d = 128; `linrec.inputs.layouts.check_block_params` refuses a set more than 2 % apart).

**Text and tokenizer.** A text (`text`, default the offline `wiki`: Wikipedia articles, 2.1 MB; several texts joined
by "+" are one text) is split once, by document and with a fixed seed, into the training documents and the measuring
documents (`measure_frac`); a text held as one document (the offline code, technical and stories texts) is first cut
at its separators and blank lines into documents of at least `MIN_DOC_CHARS` characters (the cut, the split and the
tokenizer are `linrec.inputs.training_text`). The measuring documents are never trained on: they are written to
`measure.txt` in the run's cache entry and every measurement (`linrec.analyses.seeds`) captures on that file, so both
the map's train split and its held-out split are text the model never saw. A byte-level BPE tokenizer of `vocab`
tokens is trained on the training documents alone (`tokenizers`, deterministic), with `<|endoftext|>` as the
document separator (EOS) and no BOS token.

**Shared texts.** Runs trained on different texts would otherwise differ in tokenizer and measuring windows too, so
their profiles could not be compared on the same windows. With `shared_texts` (texts joined by ","; `text` one of
them) the tokenizer is trained on the training documents of every shared text, and the measuring documents are the
held-out documents of every shared text, shuffled together with a fixed seed (so any prefix of the measuring stream
holds both): every run naming the same `shared_texts` has the same tokenizer and the same measuring windows, whichever
of the texts it trained on.

**Training.** Plain torch: the training documents tokenised and joined by EOS, cut into windows of `seq_len`; each
epoch visits them in an order drawn from `data_seed`; weights are drawn under `init_seed` (transformers' own
initialisation); AdamW (weight decay on the matrices, embeddings included, none on norms and biases) with linear
warm-up and cosine decay to a tenth, gradient clipping at 1, float32 (`precision` bf16: the forward pass under bf16
autocast on a GPU, weights and optimizer float32). The loop never waits for the device between steps (`train_model`).
On the CPU a rerun with the same configuration is bit-identical (the tests check it). Checkpoints at log-spaced steps,
step 0 (the random initialisation) included, each a complete model directory (`config.json`, `model.safetensors`,
tokenizer) that `linrec.inputs.models.load_model` loads by its path. With `n_evals`, the held-out loss of the run's
own text is evaluated while it trains (`heldout.csv`), and the plateau rule says whether the run has converged
(`linrec.inputs.plateau`; `TrainedRun.plateau`).

**Cache.** One entry per configuration under `$LINREC_CACHE/training/`, keyed by every field of `TrainConfig`, the
text's identity, the torch and transformers versions and the device that trained it (the CPU, or the GPU's name):
written in a temporary folder and renamed when complete, with a sealed `meta.json` holding the sha256 of every file
(`linrec.base.files.write_entry`), so a killed run leaves nothing that is later read as valid.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from linrec.base.cache import entry_path, get_or_compute
from linrec.base.errors import LinrecError
from linrec.base.files import scratch_dir, write_entry, writing
from linrec.base.params import check_settings
from linrec.base.progress import bar as progress_bar
from linrec.base.threads import available_memory, one_thread
from linrec.inputs.corpora import DOC_SEPARATOR
from linrec.inputs.hf import check_device, no_tf32, quiet_transformers, transformers_version
from linrec.inputs.layouts import build, check_block_params, param_counts
from linrec.inputs.layouts import ffn_width as layout_ffn_width
from linrec.inputs.layouts import layout as layout_row
from linrec.inputs.layouts import model_config as layout_config
from linrec.inputs.plateau import Plateau, heldout_loss, heldout_windows, plateau
from linrec.inputs.train_settings import EVAL_WINDOWS, TrainSettings
from linrec.inputs.training_text import (
    heldout_documents,
    split_texts,
    text_identity,
    text_tag,
    tokenized,
)

log = logging.getLogger(__name__)

TRAINING_VERSION = "1"  # bump when what a run's entry holds or means changes
PRECISIONS = ("float32", "bf16")
# Fields added after runs were cached: left out of the cache key while they hold these values, so that a run cached
# before them keeps its key (change one of these defaults only with TRAINING_VERSION).
KEYED_WHEN_SET = {"n_evals": 0, "eval_windows": EVAL_WINDOWS, "precision": "float32"}
SYNC_EVERY = 50  # the training losses are read off the device (and checked finite) once per this many steps


@dataclass(frozen=True)
class TrainConfig(TrainSettings):
    """Everything that decides a trained run's weights (and so its cache key): `TrainSettings`' fields, with their
    checks, the sizes they make and the key."""

    def validate(self) -> None:
        layout_row(self.layout)
        if self.shared_texts and self.text not in self.texts:
            raise LinrecError(
                f"text '{self.text}' is not one of shared_texts ({self.shared_texts}); add it there or train on one of "
                "them"
            )
        if len(set(self.texts)) != len(self.texts):
            raise LinrecError(f"shared_texts names a text twice ({self.shared_texts}); name each once")
        for name in ("d_model", "n_layers", "n_heads", "seq_len", "batch_size", "steps", "vocab"):
            if int(getattr(self, name)) < 1:
                raise LinrecError(f"{name} must be ≥ 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise LinrecError(
                f"d_model {self.d_model} must split into {self.n_heads} heads of an even width (rotary positions)"
            )
        if self.vocab < 260:
            raise LinrecError(f"vocab must be ≥ 260 (the 256 bytes and the separator), got {self.vocab}")
        if not 0 < self.measure_frac < 1:
            raise LinrecError(f"measure_frac must be in (0, 1), got {self.measure_frac}")
        if self.n_checkpoints < 2:
            raise LinrecError(f"n_checkpoints must be ≥ 2 (step 0 and the last step), got {self.n_checkpoints}")
        if self.d_ff < 0 or self.warmup < 0:
            raise LinrecError(f"d_ff and warmup must be ≥ 0, got d_ff {self.d_ff} and warmup {self.warmup}")
        if not (math.isfinite(self.lr) and self.lr > 0):  # nan or inf would train a step of NaN weights first
            raise LinrecError(f"lr must be a finite number > 0, got {self.lr}; e.g. lr 3e-3")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise LinrecError(f"weight_decay must be a finite number ≥ 0, got {self.weight_decay}; e.g. 0.1")
        for name in ("init_seed", "data_seed", "split_seed"):
            if not 0 <= getattr(self, name) < 2**63:
                raise LinrecError(f"{name} must be a whole number from 0 to 2**63 − 1, got {getattr(self, name)}")
        if self.n_evals < 0 or self.eval_windows < 1:
            raise LinrecError(
                f"n_evals must be ≥ 0 and eval_windows ≥ 1, got n_evals {self.n_evals} and eval_windows "
                f"{self.eval_windows}; e.g. n_evals 20 (every 5 % of the steps)"
            )
        if self.n_evals > self.steps:
            raise LinrecError(f"n_evals {self.n_evals} is more than the {self.steps} steps; use at most one a step")
        if self.precision not in PRECISIONS:
            raise LinrecError(f"precision must be one of {', '.join(PRECISIONS)}, got '{self.precision}'")
        if self.precision != "float32" and not str(self.device).startswith("cuda"):
            raise LinrecError(
                f"precision {self.precision} trains on a GPU (device cuda); on {self.device} use precision float32"
            )

    def param_count(self, vocab_size: int | None = None) -> int:
        """The model's parameters (the embedding tied with the LM head counted once), from the configuration alone
        (the model built on the meta device: shapes, no weights)."""
        return param_counts(self, vocab_size)[0]

    @property
    def texts(self) -> list[str]:
        """The texts that share this run's tokenizer and measuring text: `shared_texts`, or the training text."""
        return [t.strip() for t in self.shared_texts.split(",")] if self.shared_texts else [self.text]

    def train_bytes(self, vocab_size: int | None = None) -> int:
        """About what a training step holds: float32 weights, gradients and AdamW's two moments (16 bytes a
        parameter), and the activations kept for the backward pass (per token and block: the residual stream, the
        attention's projections and its weights over the window, the MLP's hidden layer; per token: the logits)."""
        d, v, t = self.d_model, vocab_size or self.vocab, self.batch_size * self.seq_len
        per_token = self.n_layers * (12 * d + 3 * self.ffn_width + 2 * self.n_heads * self.seq_len) + 3 * v
        return 16 * self.param_count(vocab_size) + 4 * t * per_token

    def check_fits(self, available: int | None = None) -> None:
        """One line naming the fix, before any text is read or weight allocated, when a training step would not fit
        in the memory available (`linrec.base.threads.available_memory`; on a GPU, its free memory)."""
        need = self.train_bytes()
        if available is None:
            device = check_device(self.device)
            if device.startswith("cuda"):
                available = int(torch.cuda.mem_get_info(torch.device(device))[0])
            else:
                available = available_memory()
        if available is not None and need > available:
            gib = 2**30
            raise LinrecError(
                f"training {self.name} (d_model {self.d_model}, {self.n_layers} layers, vocab {self.vocab}, "
                f"{self.param_count():,} parameters) needs about {need / gib:,.1f} GiB and {available / gib:,.1f} GiB "
                "are available; lower d_model, layers, vocab, batch_size or seq_len"
            )

    @property
    def ffn_width(self) -> int:
        """The MLP's hidden width: `d_ff`, or the width that gives every layout 8·d² MLP weights."""
        return layout_ffn_width(self.layout, self.d_model, self.d_ff)

    @property
    def name(self) -> str:
        """A short label: layout, init seed, data seed, and the text where it is not the default wiki (e.g.
        gelu-i0-d1, gpt2-i1-d0-web+stories)."""
        tag = "" if self.text == "wiki" else "-" + "+".join(text_tag(t) for t in self.text.split("+"))
        return f"{self.layout}-i{self.init_seed}-d{self.data_seed}{tag}"

    def checkpoint_steps(self) -> list[int]:
        """Step 0, then `n_checkpoints − 1` steps spaced evenly in log(step) up to `steps` (distinct, rounded)."""
        if self.steps < 1:
            return [0]
        grid = np.geomspace(1, self.steps, self.n_checkpoints - 1)
        return sorted({0, *(int(round(s)) for s in grid), self.steps})

    def eval_steps(self) -> list[int]:
        """The steps the held-out loss is evaluated at: none without `n_evals`; else step 0, `n_evals` evenly spaced
        steps up to `steps` (k·steps/n_evals, rounded) and every checkpoint step."""
        if not self.n_evals:
            return []
        even = {int(round(k * self.steps / self.n_evals)) for k in range(1, self.n_evals + 1)}
        return sorted({0, *even, *self.checkpoint_steps()})

    def request(self) -> dict:
        """The configuration an entry is checked against (`linrec.base.cache.other_request`, which compares the
        fields the entry recorded): every field, and the layout also under its old name `mlp`, as `key` keys it, so
        that a run cached before layouts (its meta says "mlp") is read, not trained again."""
        return {**asdict(self), "mlp": self.layout}

    def key(self, made_on: str) -> str:
        ident = {
            **asdict(self),
            "device": made_on,
            "text": text_identity(self.text),
            "torch": torch.__version__,
            "transformers": transformers_version(),
            "version": TRAINING_VERSION,
        }
        ident["mlp"] = ident.pop("layout")  # the key's name from before layouts: runs cached then stay valid
        for name, default in KEYED_WHEN_SET.items():  # added later: in the key only where set (cached runs stay valid)
            if ident[name] == default:
                del ident[name]
        if self.shared_texts:  # only when set, for the same reason
            ident["shared_texts"] = [text_identity(t) for t in self.texts]
        else:
            del ident["shared_texts"]
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:20]


def made_on(device: str) -> str:
    """What trains on `device`, for the cache key: "cpu", or "cuda:<GPU name>" (a GPU run is a different run)."""
    device = check_device(device)
    if device.startswith("cuda"):
        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    return device


@dataclass
class TrainedRun:
    """A finished training run read from its cache entry."""

    config: TrainConfig
    path: Path
    meta: dict
    cached: bool = False
    log: object = field(default=None, repr=False)  # pandas.DataFrame: step, loss, lr, seconds
    heldout: object = field(default=None, repr=False)  # pandas.DataFrame: step, heldout_loss (None without n_evals)

    @property
    def steps(self) -> list[int]:
        return [int(s) for s in self.meta["checkpoints"]]

    def checkpoint(self, step: int) -> Path:
        """The model directory of checkpoint `step` (a spec for `linrec.inputs.models.load_model`)."""
        if step not in self.steps:
            raise LinrecError(f"run {self.config.name} has checkpoints at steps {self.steps}, not {step}")
        return self.path / f"step_{step:06d}"

    @property
    def final(self) -> Path:
        return self.checkpoint(self.steps[-1])

    def plateau(self) -> Plateau | None:
        """The plateau rule on the run's held-out losses; None for a run trained without them (`n_evals` 0)."""
        return None if self.heldout is None else plateau(self.heldout, self.config.steps)

    @property
    def measure_corpus(self) -> str:
        """The measuring documents as a corpus spec (a file of documents joined by the separator)."""
        return str(self.path / "measure.txt")


# ---- the model ---------------------------------------------------------------------------------------------------
def model_config(cfg: TrainConfig, vocab_size: int):
    """The transformers config of `cfg`: its layout's row (`linrec.inputs.layouts.LAYOUTS`) filled in."""

    return layout_config(cfg, vocab_size)


def build_model(cfg: TrainConfig, vocab_size: int) -> torch.nn.Module:
    """A fresh model of `cfg`, its weights drawn under `cfg.init_seed` (the global RNG is left as it was)."""

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.init_seed)
        model = build(cfg, vocab_size)
    return model.float()


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of optimizer step `step` (0-based): linear warm-up, then cosine decay to lr/10 at `steps`."""
    if cfg.warmup and step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def batches(n_windows: int, cfg: TrainConfig):
    """Window indices of each step: epochs of a permutation drawn from (`data_seed`, epoch), `batch_size` a step."""
    if n_windows < cfg.batch_size:
        raise LinrecError(
            f"the training text makes {n_windows} windows of {cfg.seq_len} tokens, fewer than one batch of "
            f"{cfg.batch_size}; use a larger text, a smaller batch_size or a smaller seq_len"
        )
    per_epoch = n_windows // cfg.batch_size
    for step in range(cfg.steps):
        epoch, k = divmod(step, per_epoch)
        order = np.random.default_rng([cfg.data_seed, 36, epoch]).permutation(n_windows)
        yield order[k * cfg.batch_size : (k + 1) * cfg.batch_size]


def _autocast(cfg: TrainConfig, device: str):
    """The forward pass's precision: bf16 autocast on a GPU for precision bf16, else as it is (float32)."""
    if cfg.precision == "bf16":
        return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def train_model(
    cfg: TrainConfig, vocab_size: int, windows: torch.Tensor, on_checkpoint=None, progress: bool = True,
    heldout: torch.Tensor | None = None, on_eval=None,
) -> tuple[torch.nn.Module, list[dict]]:  # fmt: skip
    """Train a fresh model of `cfg` (a vocabulary of `vocab_size`) on `windows` [n, seq_len]; `on_checkpoint(step,
    model)` at every checkpoint step (step 0 before the first update); with `heldout` windows [m, seq_len],
    `on_eval(step, loss)` with their mean loss (`heldout_loss`) at every `cfg.eval_steps()` step. Returns the trained
    model and the log (one dict per step: step, loss, lr, seconds since the start when the step was queued).

    The loop never waits for the device between steps: the windows and every step's batch indices are moved to it
    once, the losses read back (and checked finite) every `SYNC_EVERY` steps, at evaluations and checkpoints. On the
    CPU it is a loop reading every loss at once, on one thread (`one_thread`): bit-identical on any thread count."""
    device = check_device(cfg.device)
    with one_thread(device):  # on the CPU, the same numbers on any thread count (linrec.base.threads)
        cuda = device.startswith("cuda")
        model = build_model(cfg, vocab_size).to(device)
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        rest = [p for n, p in model.named_parameters() if p.ndim < 2]
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}],
            lr=cfg.lr,
            betas=(0.9, 0.95),
            eps=1e-8,
            **({"fused": True} if cuda else {}),  # one kernel for the whole update on a GPU; the CPU's loop as before
        )
        order = torch.as_tensor(np.stack(list(batches(len(windows), cfg)))).to(device)  # [steps, batch_size]
        windows = windows.to(device)
        keep, evals = set(cfg.checkpoint_steps()), set(cfg.eval_steps()) if heldout is not None else set()
        heldout = heldout.to(device) if heldout is not None else None
        rows, pending, t0 = [], [], time.perf_counter()
        bar = progress_bar(total=cfg.steps, desc=f"train {cfg.name}", unit="step", disable=not progress)

        def flush() -> None:  # the pending steps' losses read off the device at once
            if not pending:
                return
            values = torch.stack([loss for _, loss, _ in pending]).tolist()
            for (step, _, seconds), value in zip(pending, values):
                if not math.isfinite(value):
                    raise LinrecError(f"training {cfg.name} diverged at step {step - 1} (loss {value}); lower lr")
                rows.append({"step": step, "loss": value, "lr": lr_at(step - 1, cfg), "seconds": seconds})
            bar.update(len(pending))
            bar.set_postfix(loss=f"{values[-1]:.3f}", refresh=False)
            pending.clear()

        def visit(step: int) -> None:  # evaluation and checkpoint at `step` (0: before the first update)
            if step in evals:
                flush()
                on_eval(step, float(heldout_loss(model, heldout, cfg.batch_size)))
            if on_checkpoint is not None and step in keep:
                flush()
                model.eval()
                on_checkpoint(step, model)
                model.train()

        model.train()
        try:
            visit(0)
            for step in range(cfg.steps):
                ids = windows[order[step]]
                for group in opt.param_groups:
                    group["lr"] = lr_at(step, cfg)
                with _autocast(cfg, device):
                    loss = model(input_ids=ids, labels=ids).loss
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                pending.append((step + 1, loss.detach(), time.perf_counter() - t0))
                if len(pending) >= SYNC_EVERY:
                    flush()
                visit(step + 1)
            flush()
        finally:  # on an error its one line follows: the bar is cleared, not drawn again when collected
            bar.leave = bar.leave and sys.exc_info()[0] is None
            bar.close()
        model.eval()
        return model, rows


# ---- the cache ---------------------------------------------------------------------------------------------------
def get_run(cfg: TrainConfig, cache: bool = True, progress: bool = True) -> TrainedRun:
    """The run of `cfg`: read from the cache if its entry is intact, else trained (minutes) and cached."""

    cfg.validate()
    on = made_on(cfg.device)
    entry = entry_path("training", cfg.name, cfg.key(on))

    def load(directory: Path, meta: dict) -> TrainedRun:
        held = directory / "heldout.csv"
        return TrainedRun(cfg, directory, meta, True, pd.read_csv(directory / "log.csv"),
                          pd.read_csv(held) if held.is_file() else None)  # fmt: skip

    def compute(tmp: Path | None) -> TrainedRun:
        cfg.check_fits()  # before any folder is made, any text read or any weight allocated
        if tmp is None:  # not cached: the checkpoints still need a folder, a fresh temporary one (killed: swept)
            scratch = scratch_dir("train")
            try:
                with writing(scratch):  # a full disk: one line naming the folder
                    return compute(scratch)  # kept when the run finishes: its checkpoints are what the caller gets
            except BaseException:  # Ctrl-C, SIGTERM (SystemExit under the command line), an error: nothing left
                shutil.rmtree(scratch, ignore_errors=True)
                raise
        train_docs, vocab_docs, measure_docs, identity = split_texts(cfg)
        tokenizer, windows = tokenized(train_docs, vocab_docs, cfg.vocab, cfg.seq_len)  # made once for runs alike
        held = heldout_windows(heldout_documents(cfg), tokenizer, cfg) if cfg.n_evals else None
        evals = []

        def save(step: int, model) -> None:
            out = tmp / f"step_{step:06d}"
            with quiet_transformers():
                model.save_pretrained(out, safe_serialization=True)
                tokenizer.save_pretrained(out)

        t0 = time.perf_counter()
        with no_tf32():  # float32 matmuls on a GPU too, as everywhere in linrec
            model, rows = train_model(cfg, len(tokenizer), windows, on_checkpoint=save, progress=progress,
                                      heldout=held, on_eval=lambda step, loss: evals.append((step, loss)))  # fmt: skip
        (tmp / "measure.txt").write_text(f"\n{DOC_SEPARATOR}\n".join(measure_docs))
        table = pd.DataFrame(rows)
        table.to_csv(tmp / "log.csv", index=False)
        heldout = pd.DataFrame(evals, columns=["step", "heldout_loss"]) if held is not None else None
        if heldout is not None:
            heldout.to_csv(tmp / "heldout.csv", index=False)
            rule = plateau(heldout, cfg.steps)
        n_params = sum(p.numel() for p in model.parameters())
        n_embedding = model.get_input_embeddings().weight.numel()  # tied with the LM head: counted once
        meta = {
            "version": TRAINING_VERSION,
            "config": asdict(cfg),
            "made_on": on,
            "text_identity": identity,
            "checkpoints": cfg.checkpoint_steps(),
            "n_params": n_params,
            "n_params_blocks": n_params - n_embedding,  # all but the token embedding, as runs cached before say;
            # the blocks alone: linrec.inputs.layouts.block_params
            "vocab_size": len(tokenizer),
            "n_train_docs": len(train_docs),
            "n_measure_docs": len(measure_docs),
            "n_tokenizer_docs": len(vocab_docs),
            "n_train_windows": len(windows),
            "train_tokens_available": int(windows.numel()),
            "tokens_seen": cfg.steps * cfg.batch_size * cfg.seq_len,
            "final_train_loss": float(table["loss"].tail(20).mean()),
            "seconds": time.perf_counter() - t0,
        }
        if heldout is not None:
            meta.update({"n_heldout_windows": len(held), "final_heldout_loss": rule.final_loss,
                         "converged": rule.converged})  # fmt: skip
        write_entry(tmp, meta)
        return TrainedRun(cfg, entry if cache else tmp, meta, False, table, heldout)

    return get_or_compute(entry, TRAINING_VERSION, load, compute, cache, {"config": cfg.request()})


def runs(configs: list[TrainConfig], progress: bool = True) -> dict[str, TrainedRun]:
    """{name: run} of every configuration, each from the cache or trained."""
    return {c.name: get_run(c, progress=progress) for c in configs}


def training_settings(section: dict, where: str = "the profile's training section", device: str = "cpu") -> dict:
    """A profile's `training:` mapping checked as a notebook would use it: every key a `TrainConfig` field (device
    is the profile's own key, given as `device`), every value of its field's type, and the whole a valid
    configuration; one line naming the fix otherwise. {} (not run in that profile) is returned as it is."""

    names = [f.name for f in fields(TrainConfig) if f.name != "device"]
    checked = check_settings(section, TrainConfig, where, "training setting", names,
                             " (device is the profile's own key)")  # fmt: skip
    if section:
        try:
            TrainConfig(**checked, device=device).validate()
        except LinrecError as err:
            raise LinrecError(f"{where}: {err}") from None
    return section


def profile_configs(
    base: dict, variants: list[str], init_seeds: list[int], data_seeds: list[int], texts: list[str] = (),
    text_seeds: list[int] | None = None, block_tolerance: float | None = None,
) -> list[TrainConfig]:  # fmt: skip
    """The runs of notebook 08: every variant (layout) × init seed on data order `data_seeds[0]`; for the first
    variant and first init seed, every other data order; and for the first variant, each other training text in
    `texts` at every init seed of `text_seeds` (default `init_seeds`), on the first data order. With `texts`, every
    run shares the tokenizer and the measuring text of its own text and the others (`shared_texts`), so all are
    measured on the same windows. `base`: the other `TrainConfig` fields. With `block_tolerance` (e.g. 0.02), layouts
    whose blocks differ in parameters by more than that share are refused (`linrec.inputs.layouts.
    check_block_params`; at a tiny width the gated MLP's rounded width alone can be 4 % off)."""

    cfg = TrainConfig(**base)
    if texts:
        cfg = replace(cfg, shared_texts=",".join([cfg.text, *texts]))
    out = [replace(cfg, layout=v, init_seed=s, data_seed=data_seeds[0]) for v in variants for s in init_seeds]
    out += [replace(cfg, layout=variants[0], init_seed=init_seeds[0], data_seed=d) for d in data_seeds[1:]]
    out += [replace(cfg, layout=variants[0], init_seed=s, data_seed=data_seeds[0], text=t) for t in texts
            for s in (init_seeds if text_seeds is None else text_seeds)]  # fmt: skip
    for c in out:
        c.validate()
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise LinrecError(f"two runs of the profile share a name ({', '.join(names)}); list each seed and text once")
    if block_tolerance is not None:
        check_block_params(out, block_tolerance)
    return out
