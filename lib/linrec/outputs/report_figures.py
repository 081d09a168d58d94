"""The report's figures: each figure's caption and the notebook that draws it (`FIGURES`; which figures each claim
shows is its row in `linrec.outputs.catalog`), and the Markdown that shows one (`figure_lines`): from this profile's
figures folder, else from the last run of the profile that draws it (`DRAWN_FROM`: the table it is drawn from, quoted
by `linrec.outputs.results.Results.get`), or a line saying why it is not shown; a run that an older linrec wrote is
named, not shown (`linrec.base.tables.Source.why_stale`). `linrec.outputs.report` places them in the document.
"""

from __future__ import annotations

import os
from pathlib import Path

from linrec.outputs.results import Results

# (stem, notebook, caption): every figure the report shows, in order
FIGURES = [
    (
        "fig1_method",
        "01",
        "Figure 1. The measurement: one frozen pass, float64 statistics per FFN block, closed-form affine map, "
        "held-out R²_lin.",
    ),
    (
        "fig2_r2_lin",
        "02",
        "Figure 2 (R²_lin panel). Per-block R²_lin with its 95 % interval for the held-out R² of the fitted map "
        "(leave-one-window-out jackknife over held-out windows; solid), the per-feature median R² (dotted) and R²_lin "
        "without each window's first position (dashed).",
    ),
    (
        "fig2_swap",
        "06",
        "Figure 2, second row. Held-out ΔPPL when one block alone is swapped for its affine map, with its "
        "paired interval over held-out windows (99 % skew-corrected jackknife where the run stored its per-window "
        "losses; a 95 % interval in runs before issue 64); outlined: the block claim 6a picked on the "
        "screening windows; dashed: +1 perplexity. The same blocks' R²_lin is the figure of claim 1.",
    ),
    (
        "fig2c_learning_curves",
        "02",
        "Figure 2c. Held-out R²_lin against train tokens (5k–200k, mean of 3 split seeds) per block, and per block "
        "R²_lin at the default train size, at 10× and the large-n estimate, with intervals over seeds and windows "
        "(`params/curve.yaml` runs it).",
    ),
    (
        "fig8_training",
        "08",
        "Figure 8. The same architecture trained from scratch (`params/training.yaml`): top, R²_lin of every block "
        "against the training step for each run (step 0 is the random initialisation); bottom left, every run's "
        "profile at its last checkpoint (95 % bars: the fitted map's held-out R²) over its step-0 profile (dotted); "
        "bottom right, the distance between two init seeds' profiles while training, with its 95 % interval, against "
        "the noise floor.",
    ),
    (
        "fig8b_zoo",
        "08",
        "Figure 8b. The paper's three layouts in miniature (`params/zoo.yaml`): every trained run's final profile "
        "(colour: layout; dashed: the second text), the mean shape and level distance of each kind of pair, and the "
        "share of the profile's level and shape that the layout, the text, the seed and the measurement hold.",
    ),
    (
        "fig8c_contrast",
        "09",
        "Figure 8c. The paper's contrast (claim 2a): GPT-2 against Pythia, the other layout pairs and two init seeds, "
        "in the miniature zoo and at the paper's width; the shape and level distance per pair of final profiles with "
        "95 % intervals, and 2a's minimum effect (dashed), drawn by the report from the zoos' tables.",
    ),
    (
        "fig9_routing",
        "06",
        "Figure 9. Per-token routing (beyond the paper): top, per model, held-out ΔPPL against the share of a "
        "block's tokens routed to its closed-form map by a logistic gate, every 0.05 (one line per routed block, "
        "coloured by R²_lin; the dashed line is +1 % of base perplexity); right, each block's largest share within "
        "+1 % against its R²_lin. Bottom: per block and corpus pair, the per-type need r (the anchor's quantity) "
        "against the per-type gate-share r; the held-out AUC of gates on the whole input, its context part and its "
        "token part; healed ΔPPL against the fine-tuned control for k swapped blocks (dotted: before the fine-tune).",
    ),
    (
        "fig3_bilinear_gain",
        "03",
        "Figure 3. Residual nonlinearity 1 − R²_lin against the gain of a rank-16 bilinear probe fitted to the "
        "residual.",
    ),
    (
        "fig3b_trained_pitfall",
        "03",
        "Pitfall. Shortfall of trained affine baselines (Adam, SGD) below the closed-form ceiling per block, by "
        "condition number of the input Gram matrix; open triangles at the top edge: SGD runs that diverged "
        "(shortfall > 10).",
    ),
    (
        "fig3c_pitfall_mechanism",
        "03",
        "Pitfall, mechanism. (a) Shortfall of tuned Adam and SGD, and of gradient descent from the Gram spectrum, "
        "against the step budget on the best- and worst-conditioned blocks; (b) the tuned baselines' shortfall on "
        "one block re-expressed to a chosen κ, the ceiling unchanged.",
    ),
    (
        "fig4_rank_outliers",
        "04",
        "Figure 4. Global R²_lin against per-feature median R² (size ∝ the explained part's effective rank, the "
        "rule's 'rank ≈ 1'; ringed: the outlier-concentrated blocks), and R²_lin without the top-1/top-8 output "
        "features.",
    ),
    (
        "fig4b_block_anatomy",
        "04",
        "Figure 4b. The blocks claim 4 rests on beside two toy blocks built to be the two regimes and each model's "
        "most linear broadly linear block: each output feature's held-out R² against its share of the variance "
        "(top), the eigenvalue shares of C_yy and of the explained part WᵀC_xxW (bottom).",
    ),
    (
        "fig5_corpora",
        "05",
        "Figure 5. R²_lin per block on three corpus domains (colour, line style and marker per corpus), with 95 % "
        "jackknife bands over held-out windows.",
    ),
    (
        "fig6_swap",
        "06",
        "Swap study. (a) Held-out ΔPPL against R²_lin for every block; (b) ΔPPL against parameters for "
        "reduced-rank maps of one block per model, the block with the lowest screening ΔPPL among those whose "
        "screening R²_lin is at least the median (so it need not be claim 6a's block, chosen by screening ΔPPL "
        "alone); (c) for the blocks whose first position holds at least half the output variance, ΔPPL of the map "
        "everywhere beside the map with the FFN's output, or its train mean, at position 0.",
    ),
    (
        "fig7_controls",
        "07",
        "Controls. (top) Trained R²_lin per block against the reference claim 2a reads: the random-init twins, or, "
        "where the twin is degenerate, the random-init FFNs on the trained inputs (mean and 95 % prediction band) "
        "beside the trained FFN on the same rows, with the verdict's effect and noise in each title; (bottom) each "
        "trained FFN scored on its own inputs (refit on the controls' row sample, so not equal to the top row), on "
        "Gaussian inputs with the same mean and covariance, and on the next block's inputs.",
    ),
    (
        "fig7b_inputs_or_weights",
        "07",
        "Claim 2b, every FFN with its block's norm gain folded in. Per block, the trained FFN against random-init and "
        "shuffled null ensembles on the block's own inputs, with z-scores; the cross matrix FFN i × inputs of block "
        "j and its decomposition into the weights' and the inputs' shares.",
    ),
    (
        "fig7c_bands",
        "07",
        "Claim 2b over every cross band the profile measures: per model, the weights-minus-inputs share of the cross "
        "matrix restricted to |i - j| <= band, with its 95 % interval over the blocks measured and the held-out "
        "windows; a model is decided only where the sign holds at every band from 2 on.",
    ),
]


# a figure another profile draws: the table it is drawn from, whose stand-in (`linrec.base.tables.STAND_INS`) is the
# profile whose last run shows it here, named
DRAWN_FROM = {"fig2c_learning_curves": "r2_curve", "fig8_training": "training_profiles", "fig8b_zoo": "zoo_runs"}


def figure_lines(stem: str, figures_dir, out: Path, r: Results | None = None) -> list[str]:
    """The Markdown lines that show figure `stem` in a report written to `out` (see the module docstring); `r`: the
    results whose stand-ins show a figure another profile draws (`DRAWN_FROM`)."""
    nb, caption = next((nb, cap) for s, nb, cap in FIGURES if s == stem)
    png = Path(figures_dir) / f"{stem}.png"
    if png.exists():
        return [f"![{stem}]({relative(png, out.parent)})", "", f"*{caption}* (notebook {nb})", ""]
    if stem in DRAWN_FROM and r is not None:
        source = r.get(DRAWN_FROM[stem], own=False).source
        params, folder = f"params/{source.other}.yaml", f"results/{source.other}"
        if (stale := source.why_stale) is not None:
            return [f"*{caption}* Drawn by `{params}`, not by this profile: {stale}.", ""]
        there = source.folder / "figures" / f"{stem}.png" if source.folder is not None else None
        if there is not None and there.exists():
            return [f"![{stem}]({relative(there, out.parent)})", "",
                    f"*{caption}* (notebook {nb}, from the last run of `{params}`: `{folder}/`)", ""]  # fmt: skip
        return [f"*{caption}* Drawn by `{params}`, not by this profile; see `{folder}/`.", ""]
    return [f"*{caption}* — not drawn: notebook {nb} has not run in this profile.", ""]


def relative(path: str | Path, start: str | Path) -> str:
    """`path` relative to `start`, both resolved: how the report links a file."""
    return os.path.relpath(Path(path).resolve(), Path(start).resolve())
