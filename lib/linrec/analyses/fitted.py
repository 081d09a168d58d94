"""The pass `linrec.capture` makes, fitted (`Fit`): every FFN block's closed-form affine map (`BlockMap`: `W`, `b`,
scikit-learn's `coef_` and `intercept_`, its held-out R²_lin with its interval, κ and rank), the ceiling table
(`linrec.analyses.recoverability.ceiling_table`, as `linrec measure` writes it), the swaps on the same held-out
windows (`linrec.analyses.swap.HeldOutSwaps`, as `linrec swap`), the swapped model, in memory or saved as
`linrec swap --save` writes it, and the profile drawn with its intervals. It holds the model and the windows, so
nothing after the pass goes over the corpus again: a swap runs the held-out windows only (once unswapped, once per
swapped set).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from linrec.analyses.recoverability import ceiling_table
from linrec.analyses.swap import SwapStudy
from linrec.base.constraints import Blocks, Integer, Optional, OptionsList, validate
from linrec.base.errors import LinrecTypeError
from linrec.base.voice import in_python_words, speaking
from linrec.collect.capture import Capture
from linrec.inputs.corpora import Windows
from linrec.inputs.hf import LoadedModel
from linrec.inputs.memory import check_causal, check_exist, running
from linrec.inputs.surgery import FIRST_MODES, AffineFFN, set_submodule

if TYPE_CHECKING:
    import pandas

RENAMED = {"r2_lo": "r2_lin_lo", "r2_hi": "r2_lin_hi"}  # the table's columns: r2_lin's interval named beside it
SWAP_CONSTRAINTS = {"blocks": Blocks(), "first": OptionsList(FIRST_MODES),
                    "test_windows": Optional(Integer(low=2, example=32))}  # fmt: skip


@dataclass(frozen=True)
class BlockMap:
    """One block's closed-form affine map y ≈ x @ W + b (x the FFN's input, y its output), fitted on the train
    windows, and how well it does on the held-out ones.

    Attributes
    ----------
    block : int
    W : numpy.ndarray, [d_in, d_out] float64
    b : numpy.ndarray, [d_out] float64
    r2_lin, r2_lin_lo, r2_lin_hi : float
        Held-out R²_lin and its 95 % interval over the held-out windows.
    kappa : float
        Condition number of the train inputs' centred Gram matrix (λmax / λmin; inf where singular).
    rank : int
        Directions of the inputs the solver kept.
    n_train : int
        Train rows the map was fitted on.
    """

    block: int
    W: np.ndarray = field(repr=False)
    b: np.ndarray = field(repr=False)
    r2_lin: float
    r2_lin_lo: float
    r2_lin_hi: float
    kappa: float
    rank: int
    n_train: int

    @property
    def coef_(self) -> np.ndarray:
        """scikit-learn's name and layout: [d_out, d_in], so ``x @ coef_.T + intercept_`` predicts y."""
        return self.W.T

    @property
    def intercept_(self) -> np.ndarray:
        """scikit-learn's name: `b`, [d_out]."""
        return self.b

    def predict(self, x) -> np.ndarray:
        """The map applied to FFN inputs `x` ([n, d_in]): [n, d_out] float64."""
        return np.asarray(x, dtype=np.float64) @ self.W + self.b


class Fit:
    """What `linrec.capture` returns: one pass over the windows, every block's map fitted, and the model and windows
    it was made of, so reading, swapping and saving need no second pass over the corpus.

    The model is held, not copied: change its weights and the maps no longer describe it (capture again).

    Attributes
    ----------
    capture : linrec.collect.capture.Capture
        The pass (statistics per block and split), for the other analyses (`linrec.analyses.spectrum`, …).
    loaded : linrec.inputs.hf.LoadedModel
        The model and tokenizer.
    windows : linrec.inputs.corpora.Windows
        The windows and their train/test split.
    blocks : list of int
        The blocks reported by default (`capture`'s `blocks`; every block for None).
    """

    def __init__(self, made: Capture, loaded: LoadedModel, windows: Windows, blocks, device, batch_size, progress):
        self.capture, self.loaded, self.windows = made, loaded, windows
        self.blocks = list(range(made.n_blocks)) if blocks is None else list(blocks)
        self._device, self._batch_size, self._progress = device, batch_size, progress
        self._studies: dict[int | None, SwapStudy] = {}
        self._table: pandas.DataFrame | None = None

    def __repr__(self) -> str:
        return (f"<Fit of {self.capture.model_label} on {self.capture.config.corpus}: {self.n_blocks} blocks, "
                f"{len(self.windows.train)} train and {len(self.windows.test)} held-out windows of "
                f"{self.windows.seq_len}>")  # fmt: skip

    @property
    def n_blocks(self) -> int:
        """Blocks of the model (all captured)."""
        return self.capture.n_blocks

    def __getitem__(self, block: int) -> BlockMap:
        """Block `block`'s map (`BlockMap`)."""
        if not isinstance(block, Integral) or isinstance(block, bool):
            raise LinrecTypeError(f"fit[{block!r}]: a block's map is asked for by its number, e.g. fit[0]; fit.maps "
                                  "holds every reported block's")  # fmt: skip
        (block,) = self._blocks(int(block))
        fit, row = self.capture.fit(block), self._full_table().set_index("block").loc[block]
        return BlockMap(block, fit.W, fit.b, float(row["r2_lin"]), float(row["r2_lin_lo"]), float(row["r2_lin_hi"]),
                        float(fit.cond_gram), int(fit.rank), int(fit.n_train))  # fmt: skip

    @property
    def maps(self) -> dict[int, BlockMap]:
        """Every reported block's map, by block."""
        return {b: self[b] for b in self.blocks}

    def _full_table(self) -> pandas.DataFrame:
        if self._table is None:
            with speaking(self._progress):
                table = ceiling_table(self.capture, progress=self._progress)
            self._table = table.rename(columns=RENAMED)
        return self._table

    def table(self, blocks: Sequence[int] | None = None) -> pandas.DataFrame:
        """`linrec.measure`'s table (`linrec measure`'s, its interval named `r2_lin_lo`, `r2_lin_hi`), one row per
        block of `blocks` (None: the fit's `blocks`)."""
        table = self._full_table()
        chosen = self._blocks(blocks)
        if chosen == list(range(self.n_blocks)):
            return table.copy()
        return table.set_index("block").loc[chosen].reset_index()[table.columns].reset_index(drop=True)

    def _blocks(self, blocks) -> list[int]:
        """`blocks` checked (ints, distinct, existing); None: the fit's own."""
        if blocks is None:
            return list(self.blocks)
        chosen = validate({"blocks": Blocks()}, {"blocks": blocks})["blocks"]
        check_exist(chosen, self.n_blocks)
        return chosen

    def _study(self, test_windows: int | None) -> SwapStudy:
        """The swap study of this pass on its windows (one per `test_windows`): no second capture."""
        if test_windows not in self._studies:
            with speaking(self._progress):
                self._studies[test_windows] = SwapStudy(self.capture, self.loaded, windows=self.windows,
                                                        batch_size=self._batch_size, progress=self._progress,
                                                        seed=self.capture.config.seed,
                                                        test_windows=test_windows)  # fmt: skip
        return self._studies[test_windows]

    def swap(self, blocks: Sequence[int] | None = None, *, first: str | Sequence[str] = "map",
             test_windows: int | None = None) -> pandas.DataFrame:  # fmt: skip
        """`linrec.swap`'s table on this pass's held-out windows: each block of `blocks` (None: the fit's `blocks`)
        swapped alone for its map; with two or more named and ``first="map"``, also together (``attrs["joint"]``,
        and `joint`; as `linrec swap --blocks`). Only the held-out windows are run (once unswapped, once per
        swap); the corpus is not passed again.

        Parameters
        ----------
        blocks : int or list of int, optional
        first : {"map", "ffn", "mean"} or a list of them
        test_windows : int, optional
            As `linrec.swap`'s.
        """
        checked = validate(SWAP_CONSTRAINTS, {"blocks": blocks, "first": first, "test_windows": test_windows})
        with speaking(self._progress):
            check_causal(self.loaded)
            chosen = self._blocks(checked["blocks"])
            study = self._study(checked["test_windows"])
            with running(self.loaded.model, self._device):
                table = study.heldout.table(chosen, first=checked["first"])
                if checked["blocks"] is not None and len(chosen) > 1 and checked["first"] == "map":
                    table.attrs["joint"] = study.heldout.joint(sorted(chosen))
        return table

    def joint(self, blocks: Sequence[int], *, test_windows: int | None = None) -> dict:
        """The held-out perplexity with every block of `blocks` swapped at once, and its ΔPPL with its 99 % interval
        (`blocks`, `ppl_base`, `ppl`, `delta_ppl`, `delta_lo`, `delta_hi`, `delta_level`, `params_removed`,
        `params_added`): what ``swap(blocks).attrs["joint"]`` holds, read again at no cost after it."""
        checked = validate(SWAP_CONSTRAINTS, {"blocks": blocks, "test_windows": test_windows})
        with speaking(self._progress):
            check_causal(self.loaded)
            chosen = self._blocks(checked["blocks"])
            study = self._study(checked["test_windows"])
            with running(self.loaded.model, self._device):
                return study.heldout.joint(sorted(chosen))

    def _modules(self, blocks) -> dict[int, AffineFFN]:
        """The affine modules of `blocks`, in the dtype and on the device of the FFN each replaces."""
        out = {}
        for i in self._blocks(blocks):
            p = next(self.loaded.sites[i].module.parameters())
            out[i] = AffineFFN.from_fit(self.capture.fit(i), p.dtype, p.device)
        return out

    def swapped_model(self, blocks: Sequence[int] | None = None) -> torch.nn.Module:
        """A copy of the model (`copy.deepcopy`: memory for a second one) with the FFN of each block of `blocks`
        (None: the fit's `blocks`) replaced by its affine map (`linrec.inputs.surgery.AffineFFN`); the model itself
        is left as it is. Its perplexity on the held-out windows is `joint(blocks)`'s `ppl`. It is written as
        `linrec swap --save` writes by `save`, or as it stands by ``linrec.inputs.surgery.save_swapped(swapped,
        tokenizer, {}, directory)`` (each map records the parameters of the FFN it replaced)."""
        with in_python_words():
            mods = self._modules(blocks)
            model = copy.deepcopy(self.loaded.model)
            for i, m in mods.items():
                m.params_replaced = sum(p.numel() for p in self.loaded.sites[i].module.parameters())
                set_submodule(model, self.loaded.sites[i].path, m)
        return model

    def save(self, directory: str | Path, blocks: Sequence[int] | None = None) -> Path:
        """Write the model with `blocks` (None: the fit's `blocks`) swapped for their maps to `directory`, as
        `linrec swap --save` does (`linrec.inputs.surgery.save_swapped`: weights, config, tokenizer and a
        checksummed record); read it back with `linrec.inputs.surgery.load_swapped`, or measure it by path on the
        command line. The model in memory is left as it is. Returns the directory."""
        with in_python_words():
            chosen = self._blocks(blocks)
            return self._study(None).heldout.save(directory, chosen)

    def plot(self, blocks: Sequence[int] | None = None, ax=None):
        """R²_lin per block with its 95 % interval (matplotlib, imported here); `ax` to draw into (None: a new
        figure). Returns the axes."""
        import matplotlib.pyplot as plt

        table = self.table(blocks)
        if ax is None:
            _, ax = plt.subplots(figsize=(max(4.0, 0.3 * len(table) + 2), 3))
        r2 = table["r2_lin"].to_numpy()
        below, above = r2 - table["r2_lin_lo"].to_numpy(), table["r2_lin_hi"].to_numpy() - r2
        ax.errorbar(table["block"], r2, yerr=np.vstack([below, above]), fmt="o-", capsize=3, label="R²_lin (95 %)")
        ax.set_xlabel("block")
        ax.set_ylabel("held-out R²_lin")
        ax.set_title(f"{self.capture.model_label} on {self.capture.config.corpus}")
        return ax
