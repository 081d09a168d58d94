"""How far a run trained here (`linrec.inputs.training`) has got: its held-out loss while it trains, and the plateau
rule on it.

`heldout_loss` is the mean next-token loss of a model over held-out windows (the run's own text's held-out documents,
never trained on), in float32 whatever the training's precision, evaluated at step 0, at `n_evals` evenly spaced steps
and at every checkpoint (`TrainConfig.eval_steps`).

**The plateau rule** (`plateau`, `Plateau`). A run is *plateaued* where its held-out loss fell by less than
`PLATEAU_MAX_GAIN` (1 %) of its value over the last `PLATEAU_WINDOW` (20 %) of the steps: from the last evaluation
at or before 80 % of the steps to the last step (a loss that rose counts: the run has stopped improving, and
`best_step` says where it was lowest). It has *learned* where its final held-out loss is at least `LEARNED_MIN_DROP`
(20 %) below its step-0 value: a run that did not move (learning rate 0) is flat over its last steps too, and is no
trained model. It has *converged* where both hold; the zoo draws its verdicts from converged runs alone
(`linrec.analyses.zoo`, `linrec.claims.zoo`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

from linrec.base.errors import LinrecError
from linrec.inputs.training_text import train_windows

PLATEAU_WINDOW = 0.2  # the last share of the steps the plateau rule looks over
PLATEAU_MAX_GAIN = 0.01  # plateaued: the held-out loss fell by less than 1 % of its value over that window
LEARNED_MIN_DROP = 0.2  # learned: the final held-out loss at least 20 % below its value at step 0


def heldout_windows(docs: list[str], tokenizer, cfg) -> torch.Tensor:
    """The first `cfg.eval_windows` (a `TrainConfig`'s) windows of `seq_len` tokens of the held-out documents
    (`linrec.inputs.training_text.heldout_documents`; [m, seq_len] int64); one line naming the fix where they make
    none."""
    windows = train_windows(docs, tokenizer, cfg.seq_len)[: cfg.eval_windows]
    if not len(windows):
        raise LinrecError(
            f"the held-out documents of {cfg.text} make no window of {cfg.seq_len} tokens to evaluate the held-out "
            "loss on; raise measure_frac, lower seq_len or set n_evals 0"
        )
    return windows


@torch.no_grad()
def heldout_loss(model: torch.nn.Module, windows: torch.Tensor, batch_size: int) -> torch.Tensor:
    """The mean next-token loss of `model` over `windows` (already on the model's device), in float32 whatever the
    training's precision, as a 0-d tensor (no host sync). Every window holds as many targets, so the mean of the
    windows' means is the mean over tokens."""
    was = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=windows.device)
    for i in range(0, len(windows), batch_size):
        ids = windows[i : i + batch_size]
        total += model(input_ids=ids, labels=ids).loss.double() * len(ids)
    model.train(was)
    return total / len(windows)


@dataclass(frozen=True)
class Plateau:
    """The plateau rule on one run's held-out losses (`plateau`): the loss at step 0 (`init_loss`), at the last
    evaluation at or before `1 − PLATEAU_WINDOW` of the steps (`start_step`, `start_loss`) and at the last step
    (`final_loss`); `gain` = (start − final) / start, `drop` = (init − final) / init; the best evaluation."""

    init_loss: float
    start_step: int
    start_loss: float
    final_step: int
    final_loss: float
    best_step: int
    best_loss: float

    @property
    def gain(self) -> float:
        return (self.start_loss - self.final_loss) / self.start_loss

    @property
    def drop(self) -> float:
        return (self.init_loss - self.final_loss) / self.init_loss

    @property
    def plateaued(self) -> bool:
        """The held-out loss improved by less than `PLATEAU_MAX_GAIN` of its value over the last `PLATEAU_WINDOW`
        of the steps (a loss that rose counts: the run has stopped improving)."""
        return bool(self.gain < PLATEAU_MAX_GAIN)

    @property
    def learned(self) -> bool:
        """The final held-out loss is at least `LEARNED_MIN_DROP` of its step-0 value below it (a run that did not
        move, e.g. at learning rate 0, is flat over its last steps too, and is no trained model)."""
        return bool(self.drop >= LEARNED_MIN_DROP)

    @property
    def converged(self) -> bool:
        return self.plateaued and self.learned

    def row(self) -> dict:
        """The run's columns in `zoo_runs`."""
        return {"converged": self.converged, "plateaued": self.plateaued, "learned": self.learned,
                "heldout_gain": self.gain, "heldout_drop": self.drop, "init_heldout_loss": self.init_loss,
                "final_heldout_loss": self.final_loss, "final_heldout_ppl": math.exp(self.final_loss),
                "best_heldout_loss": self.best_loss, "best_heldout_step": self.best_step}  # fmt: skip


def plateau(evals: pd.DataFrame, steps: int) -> Plateau:
    """The plateau rule (`Plateau`) on a run's held-out evaluations (`evals`: step, heldout_loss) over `steps`
    training steps; one line naming the fix where they do not hold step 0, the last step and one at or before
    `1 − PLATEAU_WINDOW` of the steps."""
    loss = evals.set_index("step")["heldout_loss"].astype(float).sort_index()
    cut = (1 - PLATEAU_WINDOW) * steps
    before = loss[(loss.index <= cut + 1e-9) & (loss.index > 0)]
    if 0 not in loss.index or steps not in loss.index or before.empty:
        raise LinrecError(
            f"the plateau rule needs the held-out loss at step 0, at step {steps} and at a step in (0, {cut:g}]; "
            f"evaluated at {list(loss.index)}: set n_evals (e.g. 20) in the training section"
        )
    best = int(loss.idxmin())
    return Plateau(float(loss[0]), int(before.index[-1]), float(before.iloc[-1]), steps, float(loss[steps]), best,
                   float(loss[best]))  # fmt: skip
