"""Does a token's identity decide whether its block can go linear, or does its context? (arXiv 2603.03459's claim)

The anchor paper ("Half the Nonlinearity Is Wasted", Balogh 2026) reports that "nonlinearity need cannot be predicted
from token identity": per-token routing lists built on one corpus correlate at r < 0.05 with another's, and a gate on
the context alone matches the full gate while token identity adds nothing. Two measurements here, each on the map and
gates of `linrec.analyses.routing`:

**Per token type, on two corpora** (`type_study`). One hooked pass over each corpus's windows (`token_table`) records,
per routed block and token type, the occurrences, how many the gate routes linear, and the *need*: the map's squared
error ‖ŷ − y‖² on each occurrence (the quantity the gate's target is cut from). Across the types seen at least
`min_count` times in *both* corpora (`type_agreement`):
- `r_need`, `rho_need`: Pearson and Spearman correlation of each type's mean need on one corpus with its mean need on
  the other, with percentile intervals from one bootstrap over types — the anchor's quantity: does a type's need on
  one corpus predict it on another?
- `lookup_r2`: the same question per token — how much of the need's variance over the other corpus's tokens a
  lookup of the first corpus's type means explains (1 − SS_res/SS_tot; below 0: worse than the other corpus's mean),
  beside `type_share`, the most any type lookup could explain there (the between-type share of that corpus's
  variance, η²).
- `r_need_rel`: the same r with each token's need divided by its ‖y‖² first: a type whose outputs are large has a
  large error on every corpus, so `r_need` can carry the output's scale; this r has it divided out.
- `r`: Pearson r of the share of each type's occurrences *the gate* routes linear (what linrec reported before). The
  gate is a linear function of the input, which carries the token's identity, so this r can be high while the need
  itself follows the context: it is not the anchor's quantity, and is kept beside it to show the difference.

**Token against context** (`split_study`). Each stored row's input x is split in two: the part its token identity
explains, the mean input of its token type over the train rows, and the rest, x − that mean (`TokenMeans`). On the
train rows each row's type mean leaves out the row's own window (a type seen in one window only gets the train mean
of every row), so the token part of a train row never holds its own context; held-out rows take the train means.
Three gates, each a `fit_gate` on the same train rows and the same labels (the target the routing study chose), see
x, the token part and the context part (`split_gates`). Reported on held-out data: each gate's AUC for the target on
the stored held-out rows (labels cut at the train rows' cut), with a leave-one-window-out jackknife interval, and the
differences full − token and full − context; and held-out ΔPPL when each gate routes the same share of tokens
(thresholds from each gate's own train scores), with paired intervals of PPL(part) − PPL(full) (`PartRoutedFFN`). The
token gate is a lookup (one score per type); the context gate needs the token's identity too, to subtract its type's
mean, so both read the windows' token ids (`feeding_ids`).

Every gate and threshold reads train rows only; the held-out rows and windows report.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import torch
from scipy.stats import rankdata

from linrec.analyses.routing import Gate, auc, fit_gate, gate_target, map_errors
from linrec.analyses.uncertainty import delta_ppl_interval
from linrec.base.errors import LinrecError
from linrec.collect.capture import SPLITS
from linrec.inputs.corpora import WindowCut, load_windows
from linrec.inputs.sites import ffn_hooks, find_ffn_sites, run_until_stop
from linrec.stats import N_BOOT
from linrec.stats.jackknife import from_replicates

PARTS = ("full", "token", "context")


# ---- per token type, on two corpora ---------------------------------------------------------------------------------
@torch.no_grad()
def token_table(model: torch.nn.Module, ids: torch.Tensor, blocks: dict, batch_size: int = 8):
    """Per block and token type of windows `ids` [n, T]: occurrences `n`, how many the gate routes linear
    (`routed`), and the map's squared error summed over them (`need`), its square summed (`need_sq`) and its ratio to
    the token's ‖y‖² summed (`need_rel`; float64)
    `blocks`: {block: (fit, Gate, threshold)} (an `AffineFit`). One hooked pass that stops after the deepest block."""

    sites = [s for s in find_ffn_sites(model) if s.index in blocks]
    device = next(model.parameters()).device
    vocab = int(ids.max()) + 1
    sums = {b: np.zeros((5, vocab)) for b in blocks}  # n, routed, need, need_sq, need_rel
    batch = {}

    def grab(block, x, y):
        fit, gate, threshold = blocks[block]
        x = x.detach().reshape(-1, x.shape[-1]).double().cpu().numpy()
        y = y.detach().reshape(-1, y.shape[-1]).double().cpu().numpy()
        err, norm = map_errors(fit, x, y)
        tok = batch["ids"].reshape(-1).numpy()
        s = sums[block]
        s[0] += np.bincount(tok, minlength=vocab)
        s[1] += np.bincount(tok, weights=(gate.scores(x) >= threshold).astype(float), minlength=vocab)
        s[2] += np.bincount(tok, weights=err, minlength=vocab)
        s[3] += np.bincount(tok, weights=err**2, minlength=vocab)
        s[4] += np.bincount(tok, weights=err / np.maximum(norm, np.finfo(float).tiny), minlength=vocab)

    with ffn_hooks(sites, grab, stop_after_last=True):
        for start in range(0, len(ids), batch_size):
            batch["ids"] = ids[start : start + batch_size]
            run_until_stop(model, input_ids=batch["ids"].to(device), use_cache=False)
    parts = []
    for b, s in sums.items():
        seen = np.flatnonzero(s[0])
        parts.append(pd.DataFrame({"block": b, "token": seen, "n": s[0, seen].astype(np.int64),
                                   "routed": s[1, seen].astype(np.int64), "need": s[2, seen],
                                   "need_sq": s[3, seen], "need_rel": s[4, seen]}))  # fmt: skip
    return pd.concat(parts, ignore_index=True)


def _boot_corr(a: np.ndarray, b: np.ndarray, idx: np.ndarray, rank: bool) -> dict:
    """Pearson (or, `rank`, Spearman) correlation of `a` and `b` with percentile 95 % and 90 % intervals over the
    bootstrap resamples `idx` [n_boot, n] (draws with a constant side skipped)."""

    def corr(u, v):
        if rank:
            u, v = rankdata(u, axis=-1), rankdata(v, axis=-1)
        u, v = u - u.mean(axis=-1, keepdims=True), v - v.mean(axis=-1, keepdims=True)
        den = np.sqrt((u * u).sum(-1) * (v * v).sum(-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, (u * v).sum(-1) / np.where(den > 0, den, 1.0), np.nan)

    point = float(corr(a, b))
    draws = corr(a[idx], b[idx])
    draws = draws[np.isfinite(draws)]
    if not np.isfinite(point) or len(draws) == 0:
        return dict.fromkeys(("", "lo", "hi", "lo90", "hi90"), np.nan)
    q = np.quantile(draws, [0.025, 0.975, 0.05, 0.95])
    return {"": point, "lo": q[0], "hi": q[1], "lo90": q[2], "hi90": q[3]}


def type_agreement(a, b, min_count: int = 5, n_boot: int = N_BOOT, seed: int = 0):
    """Per block, across the token types seen at least `min_count` times in both `token_table`s `a` and `b` (two
    corpora): `r` (the gate-routed share, Pearson), `r_need` (mean need, Pearson), `rho_need` (Spearman) and
    `r_need_rel` (Pearson of the mean need relative to each token's ‖y‖²: what is left once a type's output scale is
    divided out), each with 95 % (`_lo`, `_hi`) and 90 % (`_lo90`, `_hi90`) percentile intervals from one bootstrap
    over types (the tables keep the 90 % ones of `r_need` only); `lookup_r2`,
    the share of the need's variance over b's tokens of those types that a's type means explain, and `type_share`,
    the share b's own type means explain (see the module docstring)."""

    rng = np.random.default_rng([seed, 29])
    out = []
    m = a.merge(b, on=["block", "token"], suffixes=("_a", "_b"))
    for block, t in m.groupby("block"):
        t = t[(t["n_a"] >= min_count) & (t["n_b"] >= min_count)]
        row = {"block": int(block), "n_types": len(t), "n_tokens_b": int(t["n_b"].sum())}
        idx = rng.integers(0, max(len(t), 1), size=(n_boot, len(t)))
        stats = {}
        if len(t) >= 3:
            share_a, share_b = (t["routed_a"] / t["n_a"]).to_numpy(), (t["routed_b"] / t["n_b"]).to_numpy()
            need_a, need_b = (t["need_a"] / t["n_a"]).to_numpy(), (t["need_b"] / t["n_b"]).to_numpy()
            rel_a, rel_b = (t["need_rel_a"] / t["n_a"]).to_numpy(), (t["need_rel_b"] / t["n_b"]).to_numpy()
            stats = {"r": _boot_corr(share_a, share_b, idx, False), "r_need": _boot_corr(need_a, need_b, idx, False),
                     "rho_need": _boot_corr(need_a, need_b, idx, True),
                     "r_need_rel": _boot_corr(rel_a, rel_b, idx, False)}  # fmt: skip
            n_b, s_b, q_b = t["n_b"].to_numpy(float), t["need_b"].to_numpy(), t["need_sq_b"].to_numpy()
            total = q_b.sum() - s_b.sum() ** 2 / n_b.sum()
            res_lookup = (q_b - 2 * need_a * s_b + n_b * need_a**2).sum()
            res_own = (q_b - s_b**2 / n_b).sum()
            row |= {"lookup_r2": 1 - res_lookup / total if total > 0 else np.nan,
                    "type_share": 1 - res_own / total if total > 0 else np.nan}  # fmt: skip
        for name in ("r", "r_need", "rho_need", "r_need_rel"):
            got = stats.get(name, {})
            for k in ("", "_lo", "_hi", "_lo90", "_hi90"):
                row[f"{name}{k}"] = float(got.get(k.lstrip("_"), np.nan))
        row.setdefault("lookup_r2", np.nan)
        row.setdefault("type_share", np.nan)
        out.append(row)
    return pd.DataFrame(out)


TYPE_COLUMNS = ["model", "block", "corpus_a", "corpus_b", "share", "n_types", "n_tokens_b", "r", "r_lo", "r_hi",
                "r_need", "r_need_lo", "r_need_hi", "r_need_lo90", "r_need_hi90", "rho_need", "rho_need_lo",
                "rho_need_hi", "r_need_rel", "r_need_rel_lo", "r_need_rel_hi", "lookup_r2", "type_share"]  # fmt: skip


def type_study(study, result, corpora, share: float = 0.5, min_count: int = 5, n_boot: int = N_BOOT, seed: int = 0):
    """Per-type need and gate share on text no fit or gate saw: every window of the next disjoint stretch of the
    study's corpus (`sample` + 1, the capture's other settings; its held-out windows where the corpus has no next
    stretch) against every window of each of `corpora`, for each routed block of `result`
    (`linrec.analyses.routing.RouteResult`; its gate at `share`). One row per block and corpus pair
    (`type_agreement`)."""

    cfg = study.capture.config
    blocks = {b: (study.heldout.fit(b), g, g.threshold(share)) for b, g in result.gates.items()}
    model, tok, batch = study.loaded.model, study.loaded.tokenizer, study.heldout.batch_size

    def windows(corpus: str, sample: int) -> torch.Tensor:
        return load_windows(corpus, tok, replace(WindowCut.of(cfg), sample=sample)).ids

    try:
        main = token_table(model, windows(cfg.corpus, cfg.sample + 1), blocks, batch)
    except LinrecError as err:  # a corpus too small for a second stretch: its held-out windows instead
        logging.getLogger(__name__).warning("token types on the held-out windows of %s (%s)", cfg.corpus, err)
        main = token_table(model, study.windows.split("test"), blocks, batch)
    out = []
    for corpus in corpora:
        agree = type_agreement(main, token_table(model, windows(corpus, 0), blocks, batch), min_count, n_boot, seed)
        out.append(agree.assign(model=study.capture.model_label, corpus_a=cfg.corpus, corpus_b=corpus, share=share))
    return pd.concat(out, ignore_index=True)[TYPE_COLUMNS] if out else pd.DataFrame(columns=TYPE_COLUMNS)


# ---- token against context ------------------------------------------------------------------------------------------
class TokenMeans:
    """Each token type's mean input over train rows (x [n, d], their token ids and windows), and the split of an input
    into that mean (the token part) and the rest (the context part). Types never seen on the train rows take the
    train rows' overall mean."""

    def __init__(self, x: np.ndarray, tok: np.ndarray, win: np.ndarray):
        x = np.asarray(x, np.float64)
        self.types, inv = np.unique(np.asarray(tok), return_inverse=True)
        self.sums = np.zeros((len(self.types), x.shape[1]))
        np.add.at(self.sums, inv, x)
        self.counts = np.bincount(inv, minlength=len(self.types)).astype(float)
        self.overall = x.mean(axis=0)
        self._train = (x, np.asarray(tok), np.asarray(win), inv)

    def means(self) -> np.ndarray:
        """[n_types + 1, d]: each seen type's mean, then the overall mean (for unseen types)."""
        return np.vstack([self.sums / self.counts[:, None], self.overall[None]])

    def slots(self, tok: np.ndarray) -> np.ndarray:
        """Row of `means()` for each token id (the last row for a type unseen on the train rows)."""
        tok = np.asarray(tok)
        at = np.clip(np.searchsorted(self.types, tok), 0, len(self.types) - 1)
        return np.where(self.types[at] == tok, at, len(self.types))

    def token_part(self, tok: np.ndarray) -> np.ndarray:
        """The token part of held-out rows of ids `tok`: the train mean of their type."""
        return self.means()[self.slots(tok)]

    def train_token_part(self) -> np.ndarray:
        """The token part of each train row: the mean of its type over the train rows of *other* windows (the
        overall train mean where the type occurs in this window only)."""
        x, tok, win, inv = self._train
        pair, pinv = np.unique(np.stack([inv, win]), axis=1, return_inverse=True)
        pinv = pinv.reshape(-1)
        own = np.zeros((pair.shape[1], x.shape[1]))
        np.add.at(own, pinv, x)
        n_own = np.bincount(pinv, minlength=pair.shape[1]).astype(float)
        rest_n = self.counts[inv] - n_own[pinv]
        rest = self.sums[inv] - own[pinv]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(rest_n[:, None] > 0, rest / np.maximum(rest_n, 1)[:, None], self.overall[None])


def split_inputs(x: np.ndarray, token: np.ndarray) -> dict[str, np.ndarray]:
    """{part: the rows a gate on that part sees}: x, its token part, and x minus its token part."""
    x = np.asarray(x, np.float64)
    return {"full": x, "token": token, "context": x - token}


@dataclass(frozen=True)
class GateRows:
    """One split's rows for the token/context gates (`split_gates`): the inputs `x` [n, d], each row's token id `tok`
    and window `win`, and its 0/1 target `labels`."""

    x: np.ndarray
    tok: np.ndarray
    win: np.ndarray
    labels: np.ndarray


def split_gates(train_rows: GateRows, test_rows: GateRows,
                target: str = "quantile") -> tuple[dict, TokenMeans, list[dict]]:  # fmt: skip
    """The three gates of the module docstring, trained on `train_rows` (their `labels`: the 0/1 target), and one
    row per part: the gate's held-out AUC for `test_rows.labels` with its leave-one-window-out jackknife 95 % interval
    over their windows, and the difference AUC(full) − AUC(part) with its interval (0 for the full gate)."""
    x_train, tok_train, win_train, labels_train = train_rows.x, train_rows.tok, train_rows.win, train_rows.labels
    x_test, tok_test, win_test, labels_test = test_rows.x, test_rows.tok, test_rows.win, test_rows.labels
    means = TokenMeans(x_train, tok_train, win_train)
    train = split_inputs(x_train, means.train_token_part())
    test = split_inputs(x_test, means.token_part(tok_test))
    gates = {p: fit_gate(train[p], labels_train, target) for p in PARTS}
    labels_test, win_test = np.asarray(labels_test, bool), np.asarray(win_test)
    scores = {p: gates[p].scores(test[p]) for p in PARTS}
    windows = np.unique(win_test)
    if len(windows) < 2:
        raise LinrecError(f"the held-out rows come from {len(windows)} window(s); an AUC interval needs 2 at least")

    def aucs(keep: np.ndarray) -> np.ndarray:
        return np.array([auc(scores[p][keep], labels_test[keep]) for p in PARTS])

    point = aucs(np.ones(len(win_test), bool))
    loo = np.stack([aucs(win_test != w) for w in windows])
    rows = []
    for i, p in enumerate(PARTS):
        lo, hi = from_replicates(point[i], loo[:, i]).interval()
        dlo, dhi = from_replicates(point[0] - point[i], loo[:, 0] - loo[:, i]).interval()
        lo90, hi90 = from_replicates(point[0] - point[i], loo[:, 0] - loo[:, i]).interval(0.90)
        rows.append({"part": p, "auc": point[i], "auc_lo": float(lo), "auc_hi": float(hi),
                     "full_minus": point[0] - point[i], "full_minus_lo": float(dlo), "full_minus_hi": float(dhi),
                     "full_minus_lo90": float(lo90), "full_minus_hi90": float(hi90),
                     "auc_train": auc(gates[p].scores(train[p]), labels_train)})  # fmt: skip
    return gates, means, rows


@contextlib.contextmanager
def feeding_ids(model: torch.nn.Module):
    """Within the block, `holder["ids"]` is the `input_ids` of the model's latest forward (a pre-hook on the model),
    so a module inside it can read the tokens of the batch it is running on."""
    holder = {}

    def hook(module, args, kwargs):
        holder["ids"] = kwargs.get("input_ids", args[0] if args else None)

    handle = model.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        yield holder
    finally:
        handle.remove()


class PartRoutedFFN(torch.nn.Module):
    """`linrec.analyses.routing.RoutedFFN` with a gate on one part of the input (`split_inputs`): "full" sees x,
    "token" its type's train mean (a lookup by token id), "context" x minus that mean. The token ids come from
    `feeding_ids`' holder. Evaluation only."""

    def __init__(self, ffn, affine, gate: Gate, threshold: float, means: TokenMeans, part: str, holder: dict):
        super().__init__()
        if part not in PARTS:
            raise LinrecError(f"a gate part must be one of {', '.join(PARTS)}, got {part!r}")
        self.ffn, self.affine, self.threshold, self.part, self.holder = ffn, affine, float(threshold), part, holder
        self.means, self.lookup = means, torch.as_tensor(means.means())
        self.w, self.b = torch.as_tensor(gate.w), float(gate.b)
        self.routed, self.seen = 0, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ffn(x)
        self.seen += x[..., 0].numel()
        if self.threshold == np.inf:
            return y
        xd = x.detach().double().cpu()
        if self.part != "full":
            ids = self.holder["ids"].reshape(-1).cpu().numpy()
            token = self.lookup[torch.as_tensor(self.means.slots(ids))].reshape(xd.shape)
            xd = token if self.part == "token" else xd - token
        linear = ((xd @ self.w + self.b) >= self.threshold).to(x.device)
        self.routed += int(linear.sum())
        return torch.where(linear.unsqueeze(-1), self.affine(x), y)

    @property
    def share(self) -> float:
        return self.routed / self.seen if self.seen else float("nan")


def block_rows(study, block: int, split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The stored rows of `block` in `split` (x, y) with each row's token id and window (the capture's row index)."""

    capture = study.capture
    x, y = capture.rows(block, split)
    index = capture.row_index()
    index = index[index[:, 2] == SPLITS.index(split)]
    ids = study.windows.ids.numpy()
    return np.asarray(x), np.asarray(y), ids[index[:, 0], index[:, 1]], index[:, 0]


SPLIT_PPL_COLUMNS = ["model", "block", "part", "share", "share_heldout", "ppl", "delta_ppl", "delta_lo", "delta_hi",
                     "vs_full", "vs_full_lo", "vs_full_hi"]  # fmt: skip


def split_study(study, result, shares=(0.5,)):
    """Token against context for each routed block of `result` (`linrec.analyses.routing.RouteResult`, whose chosen
    target labels the rows): (auc, ppl) tables. `auc`: per block and part, `split_gates`' rows. `ppl`: per block,
    part and share of `shares`, held-out ΔPPL with its paired interval, the share realised, and `vs_full` =
    PPL(part) − PPL(full gate) with its paired interval (no rows for `shares` empty: the AUCs alone)."""

    heldout, ev = study.heldout, study.heldout.evaluator
    label = study.capture.model_label
    auc_rows, ppl_rows = [], []
    for block in result.gates:
        fit = heldout.fit(block)
        x, y, tok, win = block_rows(study, block, "train")
        xt, yt, tokt, wint = block_rows(study, block, "test")
        err, norm = map_errors(fit, x, y)
        err_t, norm_t = map_errors(fit, xt, yt)
        labels = gate_target(err, norm, result.target)
        labels_t = gate_target(err_t, norm_t, result.target, err)
        gates, means, rows = split_gates(
            GateRows(x, tok, win, labels), GateRows(xt, tokt, wint, labels_t), result.target
        )
        auc_rows += [{"model": label, "block": block, "target": result.target, **r} for r in rows]
        with feeding_ids(study.loaded.model) as holder:
            for share in shares:
                nll, realised = {}, {}
                for part in PARTS:
                    g = result.gates[block] if part == "full" else gates[part]  # the routing study's own gate
                    if part == "full" and (block, share) in result.nlls:  # measured on its curve already
                        c = result.curve[(result.curve["block"] == block) & (result.curve["share"] == share)]
                        nll[part], realised[part] = result.nlls[(block, share)], float(c["share_heldout"].iloc[0])
                    else:
                        m = PartRoutedFFN(heldout.sites[block].module, heldout.module(block), g, g.threshold(share),
                                          means, part, holder)  # fmt: skip
                        nll[part] = heldout.timed(lambda m=m, b=block: ev.window_nll({b: m}), "test: routed by part")
                        realised[part] = m.share
                    d = ev.delta_of(nll[part])
                    lo, hi = delta_ppl_interval(nll["full"], nll[part], ev.tokens_per_window)
                    ppl_full = float(np.exp(nll["full"].sum() / ev.n_tokens))
                    ppl_rows.append({"model": label, "block": block, "part": part, "share": share,
                                     "share_heldout": realised[part], "ppl": d.ppl, "delta_ppl": d.delta,
                                     "delta_lo": d.lo, "delta_hi": d.hi, "vs_full": d.ppl - ppl_full,
                                     "vs_full_lo": lo, "vs_full_hi": hi})  # fmt: skip
    return pd.DataFrame(auc_rows), pd.DataFrame(ppl_rows, columns=SPLIT_PPL_COLUMNS)
