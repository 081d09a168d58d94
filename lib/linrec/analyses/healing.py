"""Healing: swap k blocks for their maps, then fine-tune briefly, and compare with the same fine-tune unswapped.

The anchor paper (arXiv 2603.03459, "Half the Nonlinearity Is Wasted", Balogh 2026) replaces whole middle MLPs of
GPT-2 by frozen linear maps and fine-tunes briefly: 5 of 24 layers cost nothing, and against a fine-tuning control
(the unswapped model given the same training) a longer budget even improves perplexity. This module is that
experiment on linrec's closed-form maps, with every choice made without the held-out windows:

- **The blocks** (`heal_blocks`): the k blocks with the lowest ΔPPL swapped alone on the screening windows
  (`linrec.analyses.screening.Screening.order("screening")`), for k in `ks` (1, 2, 4 by default), so the sets are
  nested. Their maps are the capture's (`Capture.fit`, the same maps every swap uses).
- **The fine-tune** (`fine_tune`): `steps` AdamW steps (no weight decay, gradient norm clipped at 1, float32, dropout
  off) on batches of `batch_size` *train* windows of the capture drawn by `seed` alone: the same batches in the same
  order for every configuration, the control included. Two modes (`MODES`): "all" trains every weight of the
  swapped model; "maps" trains the maps alone (everything else frozen).
- **The control**: the unswapped model under the same fine-tune. For "all", every weight of the unswapped model
  (one control, k = 0). For "maps", the same k blocks' own FFNs, trained alone under the maps' schedule (one control
  per k): a map that only matches a trained-alike FFN has healed, while a comparison with the untrained base would
  credit the map with whatever any training of those blocks on in-domain text gives (on notebook 08's small models,
  still improving when their training stopped, that alone is 4-8 % perplexity). The k = 0 row of "maps" is the base
  model itself (nothing trained).
- **Reported** (`heal_study`), on the held-out windows of the swap study (`report_ids`), each a difference of
  perplexities on the same windows with its paired 95 % skew-corrected jackknife interval: `delta_before` =
  PPL(swapped) − PPL(base), the zero-shot cost; `delta_after` = PPL(swapped, fine-tuned) − PPL(control,
  fine-tuned), the cost once healed (the anchor's comparison); `delta_after_base` = PPL(swapped, fine-tuned) −
  PPL(base).

Cost: every configuration is a copy of the model trained for `steps` steps (forward and backward through the whole
model), so on a CPU this is minutes for a 100M-parameter model per configuration: the default profile heals only the
small trained models of notebook 08; params/healing.yaml heals SmolLM2 within a stated budget.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from linrec.analyses.perplexity import PerplexityEvaluator
from linrec.analyses.uncertainty import delta_ppl_interval
from linrec.base.cache import entry_path
from linrec.base.errors import LinrecError
from linrec.base.params import check_settings
from linrec.base.progress import bar as progress_bar
from linrec.base.threads import one_thread
from linrec.inputs.sites import find_ffn_sites
from linrec.inputs.surgery import AffineFFN, set_submodule
from linrec.inputs.training import get_run, made_on

MODES = ("all", "maps")
KS = (1, 2, 4)


@dataclass(frozen=True)
class FineTune:
    """One fine-tune's schedule (`fine_tune`): `steps` AdamW steps at learning rate `lr` on batches of `batch_size`
    windows."""

    steps: int
    lr: float
    batch_size: int


@dataclass(frozen=True)
class Heal:
    """The healing experiment's settings (`heal_study`; a profile's `heal` and `heal_trained` mappings, `Heal.of`):
    the k of each swapped set (`ks`), the `modes`, and each configuration's fine-tune: `steps` steps on batches of
    `batch_size` windows at learning rate `lr`, mode "maps" at `lr_maps` (None: `lr`)."""

    ks: Sequence[int] = KS
    modes: Sequence[str] = MODES
    steps: int = 50
    lr: float = 1e-4
    lr_maps: float | None = None
    batch_size: int = 8

    @classmethod
    def of(cls, settings: Mapping, where: str = "the profile's heal section") -> Heal:
        """The settings of a profile's mapping (`check_settings`: an unknown key or a value of the wrong type is one
        line naming the fix)."""
        return cls(**check_settings(settings, cls, where, "healing setting"))

    @classmethod
    def of_trained(
        cls, settings: Mapping, where: str = "the profile's heal_trained section"
    ) -> tuple[Heal, list[str] | None]:
        """A profile's `heal_trained` mapping: its settings (`of`) and, beside them, `runs`, the names of notebook
        08's runs it heals (None: every cached one); a `runs` that is no list of names is one line."""
        runs = settings.get("runs")
        if runs is not None and not (isinstance(runs, list) and all(isinstance(r, str) for r in runs)):
            raise LinrecError(f"{where}: runs must be a list of run names, got {runs!r}")
        return cls.of({k: v for k, v in settings.items() if k != "runs"}, where), runs

    def schedule(self, mode: str) -> FineTune:
        """The fine-tune of `mode`: mode "maps" at `lr_maps` where it is given."""
        lr = self.lr if mode == "all" or self.lr_maps is None else self.lr_maps
        return FineTune(self.steps, lr, self.batch_size)


def heal_blocks(screening, k: int) -> list[int]:
    """The `k` blocks with the lowest ΔPPL swapped alone on the screening windows (ties: the lower block)."""
    if k < 1:
        raise LinrecError(f"heal at least one block, got k={k}")
    return screening.order("screening")[:k]


def fine_tune(model: torch.nn.Module, ids: torch.Tensor, params: list, tune: FineTune, seed: int = 0,
              progress: bool = False, desc: str = "fine-tune") -> list[float]:  # fmt: skip
    """`tune.steps` AdamW steps at `tune.lr` on `params` of `model` (the rest left as they are), next-token loss on
    batches of `tune.batch_size` windows of `ids` [n, T] drawn by `seed` alone (a seeded permutation, renewed after
    each pass): the same batches for every model given the same arguments. Returns the loss of each step. On the CPU
    the steps run on one thread (`linrec.base.threads.one_thread`): the same losses and weights on any thread count."""
    steps, lr, batch_size = tune.steps, tune.lr, tune.batch_size
    if steps < 0 or lr <= 0 or batch_size < 1:
        raise LinrecError(f"a fine-tune needs steps ≥ 0, lr > 0 and batch_size ≥ 1, got {steps}, {lr}, {batch_size}")
    if steps and not params:
        raise LinrecError("nothing to fine-tune: no parameters were given")
    device = next(model.parameters()).device
    rng = np.random.default_rng([seed, 41])
    order, at = rng.permutation(len(ids)), 0
    keep = {id(p) for p in params}
    flags = [(p, p.requires_grad) for p in model.parameters()]
    for p, _ in flags:
        p.requires_grad_(id(p) in keep)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    losses = []
    with one_thread(device):  # on the CPU, one thread: the same steps on any thread count (linrec.base.threads)
        try:
            for _ in progress_bar(range(steps), desc=desc, unit="step", disable=not progress, leave=False):
                if at + batch_size > len(order):
                    order, at = rng.permutation(len(ids)), 0
                batch = ids[order[at : at + batch_size]].to(device)
                at += batch_size
                loss = model(input_ids=batch, labels=batch, use_cache=False).loss
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                losses.append(float(loss.detach()))
        finally:
            for p, flag in flags:
                p.requires_grad_(flag)
    return losses


def swapped_copy(model: torch.nn.Module, maps: dict[int, AffineFFN]) -> torch.nn.Module:
    """A float32 copy of `model` with FFN block i replaced by a copy of `maps[i]` (trainable parameters)."""
    out = copy.deepcopy(model).float()
    sites = find_ffn_sites(out)
    for i, m in maps.items():
        set_submodule(out, sites[i].path, copy.deepcopy(m).float())
    return out


def heal_study(study, heal: Heal = Heal(), seed: int = 0, progress: bool = True):
    """The healing experiment (module docstring, `heal`: its settings) on a swap study
    (`linrec.analyses.swap.SwapStudy`): one row per mode and k (k = 0: the control), with the blocks swapped, the
    three held-out differences and their paired intervals, the mean training loss over the last tenth of the steps
    and the seconds taken."""
    ks, modes = heal.ks, heal.modes
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise LinrecError(f"healing modes must be among {', '.join(MODES)}, got {bad}")
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise LinrecError(f"heal k ≥ 1 blocks, got ks={ks}")
    h, base = study.heldout, study.loaded.model
    if max(ks) > h.n_blocks:
        raise LinrecError(f"the model has {h.n_blocks} blocks; heal at most that many (ks={ks})")
    order = heal_blocks(study.screening, max(ks))
    train = study.windows.split("train")
    label = study.capture.model_label

    def nll(model: torch.nn.Module) -> np.ndarray:
        return PerplexityEvaluator(model, h.report_ids, h.batch_size, reuse_prefix=False).base_window_nll

    # a float32 model's unswapped and zero-shot NLLs are the swap study's own (cached; prefix reuse is exact);
    # any other dtype is evaluated in float32, the dtype every fine-tuned copy runs in
    exact = all(p.dtype == torch.float32 for p in base.parameters())
    base_nll = h.evaluator.base_window_nll if exact else nll(swapped_copy(base, {}))
    tpw = h.evaluator.tokens_per_window
    n_tokens = len(base_nll) * tpw

    def ppl(v: np.ndarray) -> float:
        return float(np.exp(v.sum() / n_tokens))

    def diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
        lo, hi = delta_ppl_interval(a, b, tpw)
        return ppl(b) - ppl(a), lo, hi

    def tuned(model: torch.nn.Module, blocks: list[int], mode: str, desc: str) -> tuple[np.ndarray, list[float]]:
        """`model` after the fine-tune of `mode` ("all": every weight; "maps": the FFN modules of `blocks`, a map
        where swapped, the block's own FFN where not): its held-out window NLLs and its losses."""
        if mode == "all":
            params = list(model.parameters())
        else:
            sites = find_ffn_sites(model)
            params = [p for b in blocks for p in sites[b].module.parameters()]
        losses = fine_tune(model, train, params, heal.schedule(mode), seed, progress, desc)
        return nll(model), losses

    rows = []
    for mode in modes:
        tune = heal.schedule(mode)
        for k in [0, *ks]:
            t0 = time.perf_counter()
            blocks = order[:k]
            model = swapped_copy(base, {b: h.module(b) for b in blocks})
            if not k:
                before = base_nll
            else:
                before = h.test_nll([(b, None, "map") for b in blocks], "test: sets") if exact else nll(model)
            if k == 0 and mode == "maps":  # nothing to train: the base itself
                after, losses = before, []
            else:
                after, losses = tuned(model, blocks, mode, f"heal {label} k={k} ({mode})")
            if k == 0:
                control = after
            elif mode == "maps":  # the same blocks' own FFNs, trained alike in the unswapped model
                control, _ = tuned(swapped_copy(base, {}), blocks, mode, f"heal {label} k={k} (control: FFNs)")
            d_before, d_after, d_base = diff(base_nll, before), diff(control, after), diff(base_nll, after)
            rows.append({"model": label, "mode": mode, "k": k, "blocks": " ".join(map(str, blocks)),
                         "steps": tune.steps, "lr": tune.lr, "batch_size": tune.batch_size, "ppl_base": ppl(base_nll),
                         "ppl_control": ppl(control),
                         "ppl_before": ppl(before), "ppl_after": ppl(after),
                         "delta_before": d_before[0], "delta_before_lo": d_before[1], "delta_before_hi": d_before[2],
                         "delta_after": d_after[0], "delta_after_lo": d_after[1], "delta_after_hi": d_after[2],
                         "delta_after_base": d_base[0], "delta_after_base_lo": d_base[1],
                         "delta_after_base_hi": d_base[2],
                         "loss_end": float(np.mean(losses[-max(1, len(losses) // 10) :])) if losses else np.nan,
                         "seconds": time.perf_counter() - t0})  # fmt: skip
            del model
    return pd.DataFrame(rows)


def cached_runs(configs) -> list:
    """The training runs of `configs` (`linrec.inputs.training.TrainConfig`, e.g. a profile's
    `profile_configs`) whose cache entry is complete, read from it; a run not trained yet is left out (healing never
    trains one: params/training.yaml does)."""
    out = []
    for c in configs:
        if (entry_path("training", c.name, c.key(made_on(c.device))) / "meta.json").exists():
            out.append(get_run(c, progress=False))
    return out
