"""Per-token routing: each token of a block goes either to the FFN or to the block's closed-form affine map.

A whole-block swap (`linrec.analyses.swap`) replaces the FFN on every token. Routing replaces it only on the tokens
where the map is likely to be good enough (the per-token idea of arXiv 2603.03459, "Half the Nonlinearity Is
Wasted"), and asks how much of a block's traffic can go linear before perplexity moves.

- **The map** is the capture's own (`Capture.fit`: the closed-form affine fit on the train split), the same map a
  whole-block swap uses.
- **The gate** is a logistic classifier on the FFN's input x, d_in + 1 parameters (`fit_gate`), trained on the
  capture's stored *train* rows to predict a 0/1 target: "the map's error on this token is small". Two targets
  (`TARGETS`): "quantile", the token's squared error ‖ŷ − y‖² is at most the median over the train rows (a balanced
  target whatever the block's scale), and "relative", that error is at most `RELATIVE_TOLERANCE` of the token's
  ‖y‖² (a target in the output's own units, so a block where the map is good everywhere has mostly positives).
- **The threshold** for a share p routed linear is the score above which a share p of the train rows lie: the
  (1 − p) quantile of the gate's sorted train scores (`Gate.threshold`). It falls as p grows, so the thresholds are
  *nested*: a larger share routes every token a smaller one routes, and more (`Gate.routes`). Share 0 routes
  nothing (+inf: the model is the base model bit for bit) and share 1 routes every token (−inf, not the lowest train
  score: a held-out token scoring below every train row still goes to the map, so share 1 is the whole-block swap
  bit for bit). On held-out windows the realised share differs a little from p; the module counts it
  (`RoutedFFN.share`).
- **The curve** (`route_block`): held-out ΔPPL at each share of a grid, by default every 0.05 (`SHARES`, 21 points),
  each with its paired jackknife interval, and the **routable share**: the largest share of a run from 0 whose every
  point stays within +1 % of base perplexity (`largest_within`), with an interval from one-sided tests share by
  share over windows (`routable_share`: its coverage measured on planted curves). The shares are measured in
  ascending order and the curve stops at the first share shown beyond the budget: no later share can change the
  routable share or its interval, so the stop is exact, not an approximation, and saves the passes a steep curve
  does not need. Its **monotonicity**
  (`monotonicity`): how many steps of the measured grid lower ΔPPL, and how many do so beyond noise (the paired
  interval of PPL(next share) − PPL(this share) below 0).
- **Compute** (`compute_saved`): every token routed linear skips the FFN (its multiply-adds) but pays the map's
  d_in·d_out and the gate's d_in; a token kept on the FFN also pays the gate. The simulation here runs the FFN on
  every token and selects; the accounting is what a routed kernel would save.

Every choice (the target, the threshold) reads train rows only; the held-out windows report (`route_curve`). Does a
token's identity decide its route, and does the context? `linrec.analyses.token_context`. Does a swapped model heal
with a little training? `linrec.analyses.healing`.

Per model, what the routed blocks show beside R²_lin and the swap's ρ (`routing_summary`, on the swap study's corpus:
`study_r2`); the anchor paper's rules are `linrec.claims.routing`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from scipy.stats import rankdata
from scipy.stats import t as student

from linrec.analyses.uncertainty import INCONCLUSIVE, correlation_test, delta_ppl_interval
from linrec.base.errors import LinrecError
from linrec.base.progress import bar as progress_bar
from linrec.base.tables import require
from linrec.base.threads import one_thread
from linrec.inputs.surgery import AffineFFN, count_params

TARGETS = ("quantile", "relative")
RELATIVE_TOLERANCE = 0.1  # "relative": the map's squared error is at most 10 % of the token's ‖y‖²
GATE_L2 = 1e-3  # ridge on the standardised gate weights (mean logistic loss + GATE_L2/2 ‖w‖²)


# ---- the target and the gate ------------------------------------------------------------------------------------
def map_errors(fit, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the map's squared error ‖ŷ − y‖² and ‖y‖² (float64), ŷ = b + x W of `fit` (an `AffineFit`)."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    err = ((fit.b + x @ fit.W - y) ** 2).sum(axis=1)
    return err, (y**2).sum(axis=1)


def gate_target(err: np.ndarray, norm: np.ndarray, target: str, reference: np.ndarray | None = None) -> np.ndarray:
    """The 0/1 label a gate learns (see the module docstring): 1 where the map is good enough on that token. The
    "quantile" cut is the median of `reference` (the train rows' errors; default `err` itself), so held-out rows are
    labelled by the train rows' cut."""
    if target == "quantile":
        return (err <= np.median(err if reference is None else reference)).astype(np.float64)
    if target == "relative":
        return (err <= RELATIVE_TOLERANCE * np.maximum(norm, np.finfo(float).tiny)).astype(np.float64)
    raise LinrecError(f"the gate's target must be one of {', '.join(TARGETS)}, got {target!r}")


@dataclass
class Gate:
    """A logistic gate on the FFN input: score(x) = w·x + b (a log-odds that the map is good enough), with the train
    rows' scores kept to set thresholds by share."""

    w: np.ndarray  # [d_in] float64
    b: float
    target: str
    train_scores: np.ndarray  # [n_train] float64, sorted

    @property
    def n_params(self) -> int:
        return len(self.w) + 1

    def scores(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x, np.float64) @ self.w + self.b

    def threshold(self, share: float) -> float:
        """The score at or above which a token routes linear so that `share` of the train rows do: −inf at 1 (every
        token), +inf at 0 (none)."""
        if not 0.0 <= share <= 1.0:
            raise LinrecError(f"a routed share must be in [0, 1], got {share}")
        if share == 0.0:
            return math.inf
        if share == 1.0:
            return -math.inf
        s = self.train_scores
        k = len(s) - int(round(share * len(s)))  # the k lowest scores stay on the FFN
        return float(s[min(k, len(s) - 1)])

    def routes(self, x: np.ndarray, share: float) -> np.ndarray:
        """Which rows of `x` go to the map at `share` (score at or above `threshold(share)`): nested in `share`."""
        return self.scores(x) >= self.threshold(share)


@one_thread()
def fit_gate(x: np.ndarray, target: np.ndarray, name: str = "quantile", l2: float = GATE_L2) -> Gate:
    """The logistic gate of `target` (0/1 per row) on rows `x` [n, d_in]: mean log-loss plus `l2`/2 ‖w‖² on
    standardised inputs, minimised by L-BFGS in float64 (convex, so the optimum does not depend on the start); the
    weights are then mapped back to raw inputs. A target with one class only gets a constant gate (w = 0)."""
    x = torch.as_tensor(np.asarray(x, np.float64))
    t = torch.as_tensor(np.asarray(target, np.float64))
    if x.ndim != 2 or len(x) != len(t) or len(x) < 2:
        raise LinrecError(f"the gate needs rows [n ≥ 2, d] and one label per row, got {tuple(x.shape)}, {len(t)}")
    mu, sd = x.mean(0), x.std(0).clamp_min(1e-12)
    z = (x - mu) / sd
    p = float(t.mean())
    if p in (0.0, 1.0):  # one class: every token scores alike
        w, b = np.zeros(x.shape[1]), (30.0 if p == 1.0 else -30.0)
    else:
        wz = torch.zeros(x.shape[1], dtype=torch.float64, requires_grad=True)
        bz = torch.tensor(math.log(p / (1 - p)), dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([wz, bz], lr=1.0, max_iter=200, tolerance_grad=1e-9, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z @ wz + bz, t) + 0.5 * l2 * (wz @ wz)
            loss.backward()
            return loss

        opt.step(closure)
        wz, bz = wz.detach(), bz.detach()
        w = (wz / sd).numpy()
        b = float(bz - (wz * mu / sd).sum())
    gate = Gate(np.asarray(w, np.float64), float(b), name, np.empty(0))
    gate.train_scores = np.sort(gate.scores(x.numpy()))
    return gate


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (the Mann–Whitney statistic, ties counted half): how well `scores` rank the
    positives of `labels` above the negatives; NaN with one class only."""

    labels = np.asarray(labels, bool)
    n1, n0 = int(labels.sum()), int((~labels).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[labels].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


# ---- the routed block -------------------------------------------------------------------------------------------
class RoutedFFN(torch.nn.Module):
    """An FFN whose tokens go to `affine` where the gate's score is at or above `threshold`, else to the FFN.

    The FFN runs on every token and the output is selected per token, so at threshold +inf (share 0) the output is
    the FFN's own, bit for bit, and at −inf (share 1) the map's. `routed` and `seen` count tokens, so `share` is the
    share routed linear on what the module has run on. Evaluation only: `linrec.inputs.surgery.save_swapped` refuses
    it (a saved model would need linrec's module to load, and would still hold the whole FFN)."""

    def __init__(self, ffn: torch.nn.Module, affine: AffineFFN, gate: Gate, threshold: float):
        super().__init__()
        self.ffn, self.affine, self.threshold = ffn, affine, float(threshold)
        p = affine.bias
        self.gate_w = torch.nn.Parameter(torch.as_tensor(gate.w).to(p.dtype).to(p.device), requires_grad=False)
        self.gate_b = float(gate.b)
        self.routed, self.seen = 0, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ffn(x)
        self.seen += x[..., 0].numel()
        if self.threshold == math.inf:
            return y
        linear = (x @ self.gate_w + self.gate_b) >= self.threshold
        self.routed += int(linear.sum())
        return torch.where(linear.unsqueeze(-1), self.affine(x), y)

    @property
    def share(self) -> float:
        return self.routed / self.seen if self.seen else float("nan")


def compute_saved(share: float, ffn_macs: int, d_in: int, d_out: int) -> float:
    """Multiply-adds saved per token, as a fraction of the FFN's: a routed token skips the FFN and pays the map
    (d_in·d_out), every token pays the gate (d_in). Negative where routing costs more than it saves."""
    return (share * (ffn_macs - d_in * d_out) - d_in) / ffn_macs


def ffn_macs(ffn: torch.nn.Module) -> int:
    """Multiply-adds of one token through `ffn`: one per weight of its matrices (a gated MLP's three, GELU's two)."""
    return sum(p.numel() for p in ffn.parameters() if p.ndim >= 2) or count_params(ffn)


# ---- the measurement: held-out ΔPPL against the share routed linear -----------------------------------------------
GRID_STEP = 0.05


def share_grid(step: float = GRID_STEP) -> tuple[float, ...]:
    """0, `step`, 2·`step`, …, 1 (1/`step` a whole number), rounded so that 0.15 is 0.15."""
    n = round(1.0 / step) if step > 0 else 0
    if n < 1 or abs(n * step - 1.0) > 1e-9:
        raise LinrecError(f"a share grid's step must divide 1 (0.05, 0.1, 0.25, …), got {step}")
    return tuple(round(i / n, 10) for i in range(n + 1))


SHARES = share_grid()
BUDGETS = {"pct1": ("relative", 0.01)}  # +1 % of base perplexity: the anchor's budget


def largest_within(shares: np.ndarray, ppl_base: np.ndarray, ppl: np.ndarray, kind: str, budget: float) -> np.ndarray:
    """The largest share of a run from share 0 whose every point stays within the budget (ΔPPL ≤ `budget`, or ≤
    `budget` × base perplexity for "relative"); `ppl_base` [...], `ppl` [..., n_shares] (share order ascending)."""
    return np.where(_alive(ppl_base, ppl, kind, budget), np.asarray(shares, float), 0.0).max(axis=-1)


def _alive(ppl_base: np.ndarray, ppl: np.ndarray, kind: str, budget: float) -> np.ndarray:
    """[..., n_shares]: within the budget at this share and at every smaller one (the run from share 0)."""
    limit = budget * ppl_base if kind == "relative" else np.full_like(ppl_base, budget)
    ok = (ppl - ppl_base[..., None]) <= limit[..., None]
    return np.cumprod(ok, axis=-1).astype(bool)


def _budget_nll(kind: str, budget: float, ppl_base: float) -> float:
    """The budget as a mean change in NLL per token: PPL(s) ≤ (1 + budget)·PPL_base ("relative") is a mean ΔNLL ≤
    log(1 + budget); ΔPPL ≤ budget ("absolute") is one ≤ log(1 + budget / PPL_base) at the measured base."""
    return float(np.log1p(budget if kind == "relative" else budget / ppl_base))


def share_bounds(base_nll: np.ndarray, nll: np.ndarray, tokens_per_window: int, level: float = 0.95) -> tuple:
    """(mean ΔNLL per token, its lower and upper one-sided bounds at (1 + `level`)/2) of one share against the base,
    over windows: the t interval of the windows' mean ΔNLL (the leave-one-window-out jackknife of a mean is exactly
    this). `base_nll`, `nll`: per-window NLL sums [n]."""

    d = (np.asarray(nll, float) - np.asarray(base_nll, float)) / tokens_per_window
    n = len(d)
    half = float(student.ppf(0.5 + level / 2, n - 1)) * float(d.std(ddof=1)) / np.sqrt(n) if n > 1 else np.inf
    m = float(d.mean())
    return m, m - half, m + half


def routable_share(shares, base_nll: np.ndarray, nlls: np.ndarray, tokens_per_window: int, level: float = 0.95,
                   budgets=None) -> dict:  # fmt: skip
    """Per budget of `budgets` (default `BUDGETS`): the largest share routed linear within it (`largest_within` on
    the held-out perplexities: the mean ΔNLL per token within the budget at this share and every smaller one), with
    an interval by inverting one-sided tests share by share (`share_bounds`, over windows): the lower end is the
    largest share whose run from 0 is *shown* within the budget (every upper bound inside it), the upper end the
    largest whose run is *not shown* beyond it (no lower bound above it). The true routable share lies below the
    lower end only if a share beyond the budget is shown within it, and above the upper end only if one within it is
    shown beyond: each (1 − `level`)/2 at the boundary share, so the interval covers at `level` or more; measured on
    planted curves (`linrec.analyses.calibration.routable_coverage`, 0.95–0.99 at 12 windows, where the percentile
    window bootstrap used before covered 0.87–0.93). `nlls` [n_shares, n]: per-window NLL at each share, ascending
    (a prefix of a grid is enough once a share is shown beyond every budget: `route_block`)."""
    base_nll, nlls = np.asarray(base_nll, float), np.asarray(nlls, float)
    shares = np.asarray(shares, float)
    n_tokens = len(base_nll) * tokens_per_window
    ppl_base, ppl = np.exp(base_nll.sum() / n_tokens), np.exp(nlls.sum(axis=-1) / n_tokens)
    bounds = np.array([share_bounds(base_nll, x, tokens_per_window, level) for x in nlls]).reshape(-1, 3)
    out = {}
    for name, (kind, budget) in (BUDGETS if budgets is None else budgets).items():
        c = _budget_nll(kind, budget, float(ppl_base))
        out[f"routable_{name}"] = float(largest_within(shares, np.array([ppl_base]), ppl[None, :], kind, budget)[0])
        for key, col in (("_lo", 2), ("_hi", 1)):  # every upper bound within: shown within; every lower: not beyond
            run = np.cumprod(bounds[:, col] <= c).astype(bool)
            out[f"routable_{name}{key}"] = float(np.where(run, shares, 0.0).max()) if len(shares) else 0.0
    return out


def monotonicity(shares, nlls: np.ndarray, tokens_per_window: int) -> dict:
    """How far a measured curve (per-window NLLs `nlls` [n_shares, n] at ascending `shares`) is from rising with the
    share: `n_steps` neighbouring pairs, `n_drops` of them where perplexity falls, `n_drops_beyond_noise` where it
    falls with the paired 95 % interval of PPL(next) − PPL(this) wholly below 0, and the largest fall
    (`max_drop`, perplexity points, ≥ 0). `monotone`: no fall beyond noise."""

    nlls = np.asarray(nlls, float)
    n_tokens = nlls.shape[1] * tokens_per_window
    ppl = np.exp(nlls.sum(axis=1) / n_tokens)
    steps = np.diff(ppl)
    beyond = sum(delta_ppl_interval(nlls[i], nlls[i + 1], tokens_per_window)[1] < 0
                 for i in range(len(steps)) if steps[i] < 0)  # fmt: skip
    return {"n_steps": len(steps), "n_drops": int((steps < 0).sum()), "n_drops_beyond_noise": int(beyond),
            "max_drop": float(max(0.0, -steps.min())) if len(steps) else 0.0,
            "monotone": bool(beyond == 0)}  # fmt: skip


def train_gates(heldout, block: int, targets=TARGETS, share: float = 0.5) -> tuple[dict, list[dict]]:
    """A gate per target for `block`, from the capture's stored train rows alone, and one row per target comparing
    them there: the gate's AUC on its own labels, the share of positives, and the map's mean squared error on the
    train tokens the gate would route at `share`, relative to the tokens' mean ‖y‖² (`err_routed_train`: lower is
    a better router). `gate_auc_heldout` is the same AUC on the stored held-out rows (labelled by the train rows'
    cut): reported beside it, read by no choice."""
    capture = heldout.capture
    x, y = capture.rows(block, "train")
    if len(x) < 2:
        raise LinrecError(
            f"block {block}: the row sample holds {len(x)} train row(s), and a routing gate needs 2 at least; raise "
            "--sample-rows (a profile's capture sample_rows)"
        )
    err, norm = map_errors(heldout.fit(block), x, y)
    xt, yt = capture.rows(block, "test")
    err_t, norm_t = map_errors(heldout.fit(block), xt, yt)
    gates, rows = {}, []
    for target in targets:
        labels = gate_target(err, norm, target)
        gate = gates[target] = fit_gate(x, labels, target)
        scores = gate.scores(x)
        picked = scores >= gate.threshold(share)
        rows.append({
            "model": capture.model_label, "block": block, "target": target, "gate_auc_train": auc(scores, labels),
            "gate_auc_heldout": auc(gate.scores(xt), gate_target(err_t, norm_t, target, err)) if len(xt) else np.nan,
            "positives_train": float(labels.mean()), "share": share,
            "err_routed_train": float(err[picked].mean() / norm.mean()) if picked.any() else 0.0,
            "err_all_train": float(err.mean() / norm.mean()),
        })  # fmt: skip
    return gates, rows


def choose_target(comparison) -> str:
    """The target whose gates route the lower error on the train rows (`train_gates`' `err_routed_train`, mean over
    the blocks compared): a choice made on train rows only."""
    means = comparison.groupby("target")["err_routed_train"].mean()
    return str(means.idxmin())


def routed_nll(heldout, block: int, gate: Gate, share: float) -> tuple[np.ndarray, float]:
    """Per-window held-out NLL with `block` routed by `gate` at `share`, and the share realised there. Share 0 is the
    base run and share 1 the whole-block swap's own evaluation (`HeldOutSwaps.test_nll`), so both equal what the swap
    table reports."""
    ev = heldout.evaluator
    if share == 0.0:
        return ev.base_window_nll, 0.0
    if share == 1.0:
        return heldout.test_nll([(block, None, "map")], "test: blocks alone (map)"), 1.0
    module = RoutedFFN(heldout.sites[block].module, heldout.module(block), gate, gate.threshold(share))
    return heldout.timed(lambda: ev.window_nll({block: module}), "test: routed"), module.share


def route_block(heldout, block: int, gate: Gate, shares=SHARES, stop: bool = True,
                keep: dict | None = None) -> tuple:  # fmt: skip
    """`block` routed by `gate` at each of `shares` on the held-out windows of a swap study
    (`linrec.analyses.swap.HeldOutSwaps`: its map and evaluator), in ascending order. Returns (rows, routable): one
    row per share measured (the share asked for and the held-out share realised, held-out PPL and ΔPPL with its
    paired interval, compute saved), and the routable share of `routable_share` with the curve's `monotonicity`.
    With `stop`, the curve ends at the first share shown beyond every budget (its ΔNLL's lower bound above it,
    `share_bounds`): the shares after it cannot change the routable share or its interval (`measured_to`: the last
    share measured). `keep`: a dict that receives {share: per-window NLL}."""
    shares = sorted(float(s) for s in shares)
    capture, ev = heldout.capture, heldout.evaluator
    macs, (d_in, d_out) = ffn_macs(heldout.sites[block].module), heldout.fit(block).W.shape
    limits = [_budget_nll(kind, budget, ev.base_ppl) for kind, budget in BUDGETS.values()]
    rows, nlls = [], []
    for share in shares:
        nll, realised = routed_nll(heldout, block, gate, share)
        d = ev.delta_of(nll)
        nlls.append(nll)
        if keep is not None:
            keep[share] = nll
        rows.append({
            "model": capture.model_label, "block": block, "target": gate.target, "share": share,
            "share_heldout": realised, "ppl_base": d.ppl_base, "ppl": d.ppl, "delta_ppl": d.delta, "delta_lo": d.lo,
            "delta_hi": d.hi, "compute_saved": compute_saved(realised, macs, d_in, d_out), "gate_params": gate.n_params,
        })  # fmt: skip
        _, lower, _ = share_bounds(ev.base_window_nll, nll, ev.tokens_per_window)
        if stop and all(lower > c for c in limits):  # shown beyond every budget: no larger share can count
            break
    measured = [r["share"] for r in rows]
    nlls = np.stack(nlls)
    routable = routable_share(measured, ev.base_window_nll, nlls, ev.tokens_per_window)
    shape = monotonicity(measured, nlls, ev.tokens_per_window)
    return rows, {"model": capture.model_label, "block": block, "target": gate.target, **routable,
                  "measured_to": measured[-1], **shape}  # fmt: skip


def pick_blocks(predictors, k: int | None) -> list[int]:
    """`k` blocks spread over the range of the screening R²_lin (`Screening.predictors`' `r2_lin`: the blocks at k
    evenly spaced ranks of it, lowest and highest included), or every block for None: chosen on screening windows,
    so the held-out curves measure blocks that no held-out number picked."""
    order = predictors.sort_values(["r2_lin", "block"])["block"].astype(int).tolist()
    if k is None or k >= len(order):
        return sorted(order)
    if k < 1:
        raise LinrecError(f"route at least one block, got route_blocks={k}")
    at = np.unique(np.round(np.linspace(0, len(order) - 1, k)).astype(int))
    return sorted(order[i] for i in at)


@dataclass
class RouteResult:
    """One model's routing study (`route_study`)."""

    target: str  # the gate target chosen on train rows
    gates: dict  # {block: Gate} of that target
    comparison: object  # pandas.DataFrame: per block and target, the gates compared on train rows
    curve: object  # pandas.DataFrame: per block and share, held-out ΔPPL with its interval
    routable: object  # pandas.DataFrame: per block, the largest share within +1 %, with its interval; monotonicity
    nlls: dict = field(default_factory=dict)  # {(block, share): per-window held-out NLL} of every share measured


def route_study(study, blocks: int | None = None, shares=SHARES, predictors=None, progress: bool = True,
                chosen: list[int] | None = None) -> RouteResult:  # fmt: skip
    """Per-token routing on a swap study (`linrec.analyses.swap.SwapStudy`): `blocks` blocks picked on the screening
    windows (`pick_blocks`; None: every block), both gate targets trained and compared on train rows, the better
    one (`choose_target`) measured on the held-out windows at each of `shares` (`route_block`). `chosen`: these
    blocks instead of a pick."""

    if chosen is None:
        p = study.screening.predictors(alone=False) if predictors is None else predictors
        chosen = pick_blocks(p, blocks)
    gates, comparison = {}, []
    for b in chosen:
        gates[b], rows = train_gates(study.heldout, b)
        comparison += rows
    comparison = pd.DataFrame(comparison)
    target = choose_target(comparison)
    curve, routable, nlls = [], [], {}
    for b in progress_bar(chosen, desc=f"routing {study.loaded.name}", unit="block", disable=not progress):
        keep = {}
        rows, r = route_block(study.heldout, b, gates[b][target], shares, keep=keep)
        curve += rows
        routable.append(r)
        nlls |= {(b, s): v for s, v in keep.items()}
    chosen_gates = {b: gates[b][target] for b in chosen}
    return RouteResult(target, chosen_gates, comparison, pd.DataFrame(curve), pd.DataFrame(routable), nlls)


def routing_summary(
    routable: pd.DataFrame,
    r2: pd.DataFrame,
    predictors: pd.DataFrame | None = None,
    identity: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per model, what per-token routing shows (notebook 06): the routed block with the largest share within +1 %
    of base perplexity (its share and interval; ties: the lower block), how many routed blocks reach 25 %,
    how many curves are monotone within noise, Spearman ρ(R²_lin, routable share) over the routed blocks with its
    Fisher interval at the effective number of blocks and the equivalence outcome
    (`linrec.analyses.uncertainty.correlation_test`; `n_needed`: blocks for a decision), beside 6b's ρ(R²_lin,
    whole-block ΔPPL) from `predictors` (`swap_predictors`' r2_lin row, whose sign is the other way: a high R²_lin
    should mean a small ΔPPL but a large routable share), and from `identity` (`routing_identity`) the median over
    blocks and corpus pairs of the gate-share r (`identity_r_median`: not the anchor's quantity) and of the need r
    (`need_r_median`: the anchor's)."""
    require(routable, ["model", "block", "routable_pct1", "routable_pct1_lo", "routable_pct1_hi"], "routing_summary")
    rows = []
    for model, t in routable.groupby("model", sort=False):
        t = t.merge(r2[["model", "block", "r2_lin"]], on=["model", "block"]).sort_values("block")
        best = t.sort_values(["routable_pct1", "block"], ascending=[False, True]).iloc[0]
        n = len(t)
        # too few blocks, or every block routes the same share: no correlation to speak of
        c = correlation_test(t["r2_lin"], t["routable_pct1"]) if n >= 3 and t["routable_pct1"].nunique() > 1 else {}
        corr = {f"rho_{k}" if k != "rho" else "rho_r2_routable": c.get(k, np.nan) for k in ("rho", "lo", "hi", "lo90",
                                                                                         "hi90")}  # fmt: skip
        monotone = t["monotone"].astype(bool).sum() if "monotone" in t else np.nan
        row = {"model": model, "n_blocks_routed": n, "best_block": int(best["block"]),
               "best_routable_pct1": best["routable_pct1"], "best_lo": best["routable_pct1_lo"],
               "best_hi": best["routable_pct1_hi"], "n_quarter": int((t["routable_pct1"] >= 0.25).sum()),
               "n_monotone": monotone, **corr, "outcome": c.get("outcome", INCONCLUSIVE),
               "n_eff": c.get("n_eff", np.nan), "n_needed": c.get("n_needed", np.nan)}  # fmt: skip
        row |= {"rho_r2_swap": np.nan, "rho_r2_swap_lo": np.nan, "rho_r2_swap_hi": np.nan, "identity_r_median": np.nan,
                "need_r_median": np.nan}  # fmt: skip
        if predictors is not None:
            p = predictors[(predictors["model"] == model) & (predictors["column"] == "r2_lin")]
            if len(p):
                row |= {"rho_r2_swap": p["spearman_rho"].iloc[0], "rho_r2_swap_lo": p["rho_lo"].iloc[0],
                        "rho_r2_swap_hi": p["rho_hi"].iloc[0]}  # fmt: skip
        mine = identity[identity["model"] == model] if identity is not None else None
        if mine is not None and len(mine):
            row["identity_r_median"] = float(mine["r"].median())
            if "r_need" in mine:
                row["need_r_median"] = float(mine["r_need"].median())
        rows.append(row)
    return pd.DataFrame(rows)


def study_r2(r2: pd.DataFrame | None, swap: pd.DataFrame | None) -> pd.DataFrame | None:
    """`r2_lin`'s rows of the corpus the swap study ran on (notebook 06's ceilings): the swap table's corpus, else the
    first in `r2`; None without `r2`."""
    if r2 is None or "corpus" not in r2.columns or not len(r2):
        return r2
    corpus = swap["corpus"].iloc[0] if swap is not None and "corpus" in swap.columns and len(swap) else None
    return r2[r2["corpus"] == (corpus if corpus is not None else r2["corpus"].iloc[0])]
