"""linrec: per-block linear recoverability (R²_lin) of transformer feed-forward blocks.

The package's folders are its layers, lowest first; a module imports only from its own folder or a lower one
(`tests/test_layers.py` checks it, and that this picture names every folder and module):

    base/      errors · files (manifests, atomic writes) · cache (get-or-compute, list, prune) · threads · progress
               · stages (each loop's seconds and model work, where a runner records them)
               · params (a declared parameter: its type, one default, what it does, its rule)
               · constraints (an argument's rule, checked before any work, in Python and on the command line)
               · voice (errors and notices in Python's words; notices as warnings)
               · registry (every results table) · tables (written and read through it)
    stats/     moments (streaming float64 statistics) · distributed · ceiling (the closed-form affine fit) · heldout
               · jackknife (intervals over held-out windows)
               · equivalence (a correlation's three outcomes: effect, none within a margin, neither)
    inputs/    sites (where each FFN is) · offline (what can be fetched and named; no torch) · corpora · fetching · hf
               · source (how a model is given, parsed once)
               · models (load any model) · surgery · training · training_text (its texts, split; the tokenizer)
               · train_settings (no torch)
               · memory (a model and texts handed over in Python: strings, a Dataset, token ids; checked)
               · layouts (GPT-2, Pythia, llama rows) · plateau (the plateau rule)
               · quant_noise (one more GGUF-sized rounding error, drawn)
    collect/   config (capture settings, written once) · capture (one pass → statistics per block) · plan (memory)
               · rows (the row sample on disk, the first positions) · overlap (a GPU's work beside the forward pass)
               · reuse (a larger capture serves, a new one says its cost) · curves (R²_lin against train tokens)
    analyses/  recoverability · profile (claim 1's numbers: the profile's shape, its moves tested, its replication)
               · large_n (learning-curve tables) · probe · pitfall · spectrum (and notebook 04's summaries: the regimes)
               · pitfall_train (claim 7b's trained baselines: batched Adam/SGD, tuned) · parallel (a table's fits on
                 the caller's threads)
               · probe_summary (notebook 03's summaries: the probe's gain, the trained baselines' shortfall, the dose)
               · uncertainty · perplexity
               · calibration (the intervals' coverage, simulated)
               · coverage (a results folder's intervals' coverage, measured: the `calibration` table)
               · screening (the swap study's choices, train windows only) · swap (its held-out ΔPPL)
               · swap_summary (notebook 06's summaries: parameters, safety, predictors, the first position)
               · swap_run (notebook 06's study of one model)
               · routing (per-token: FFN or map) · token_context (token or context?) · healing (swap, fine-tune)
               · controls (2a, and its summaries) · memo (evaluations kept in the cache, so a killed run resumes)
               · decomposition (2b: weights or inputs, and its summaries) · seeds
               · factors (what sets a profile: layout, text, seed)
               · fitted (`linrec.capture`'s fitted pass: maps, table, swaps, the swapped model, plot)
               · zoo (the pipeline on every trained model)
               · quant (R²_lin and perplexity under a second quantisation error)
    claims/    rules (each read from its summary in analyses/) · profile (claim 1) · probe (3, 7) · regimes (4)
               · corpora (5) · swap (6) · learned (2)
               · bands (2b at every cross band)
               · routing (the anchor paper's claims) · zoo (the zoo's rule)
               · synthesis (the answer from the widest evidence)
    studies/   stages (every stage: its notebook, parameters, module; the profile) · base (`Result`: its tables)
               · capture (01) · ceiling (02) · probe (03: the probe and the pitfall) · regimes (04) · corpora (05)
               · swap (06: claims 6a, 6b) · routing (06: its routing and healing tables) · controls (07) · training (08)
    outputs/   results (a results folder, read; number words; labels) · claim_text (each claim's sentence; `Claim`)
               · catalog (one row per claim: its rule, the paper's words, sentence, figures, caveat) · report
               · report_figures (which figure where) · claim_table (every profile's verdicts) · rule_log (rule hashes)
               · methods (the coverage in words) · routing_text (the routing section) · ceiling_text (02's findings)
               · zoo_text (the zoo in words) · quant_text (the quantisation sensitivity in words)
               · doc_blocks (the docs' measured numbers, written from their tables)
               · findings (each notebook's conclusion: its claims in the catalog's words, the rest beside them)
               · refresh (summaries rebuilt from per-block tables) · labels
               · plots (what every figure shares) · plots_ceiling (figures 1, 2, 5) · plots_probe (3)
               · plots_regimes (4) · plots_swap (2's swap row, 6, 9) · plots_controls (7) · plots_training (8)
    app/       cli (the `linrec` command) · commands (its subcommands) · profile (one `Profile`, checked once) · bench
               · requests (each subcommand's request, built once from its arguments, and its checks)
               · notebooks (runs every stage's notebook) · records (what a run leaves beside them)
    api.py     measure · swap · capture (a model already loaded in Python; above every folder)

`linrec.measure`, `linrec.swap` and `linrec.capture` are `linrec.api`'s functions (a model already loaded in Python),
imported when first asked for, so `import linrec` stays light (no torch). Their errors are `LinrecError`s (a bad
argument's also a ValueError or TypeError: `LinrecValueError`, `LinrecTypeError`), their notices `LinrecWarning`s.
"""

from linrec.base.errors import LinrecError, LinrecTypeError, LinrecValueError, LinrecWarning

__version__ = "0.1.0"
__all__ = ["LinrecError", "LinrecTypeError", "LinrecValueError", "LinrecWarning", "__version__", "capture", "measure",
           "swap"]  # fmt: skip

_API = ("capture", "measure", "swap")


def __getattr__(name: str):
    """`linrec.measure`, `linrec.swap`, `linrec.capture`: `linrec.api`'s functions, imported when first asked for."""
    if name in _API:
        from linrec import api

        return getattr(api, name)
    raise AttributeError(f"module 'linrec' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])
