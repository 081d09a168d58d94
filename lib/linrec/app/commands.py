"""What each `linrec` subcommand does (`cmd_measure`, `cmd_swap`, …), after `linrec.app.cli` has parsed its arguments:
each builds its request once from them (`linrec.app.requests`: the checks made before any expensive work live there,
on the request they concern) and reads the arguments no further; how a table is printed and written (`_emit`,
`SHOWN`)."""

from __future__ import annotations

import math
import sys
from dataclasses import asdict
from pathlib import Path

from linrec.app.bench import performance_script
from linrec.app.requests import (
    Capturing,
    Curving,
    Fetching,
    Figures,
    Probing,
    Pruning,
    Reporting,
    Studies,
    Swapping,
    Training,
    block_list,
)
from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file, check_writable_dir, project_root
from linrec.base.registry import TABLES
from linrec.studies.stages import STUDIES, study

# Each subcommand imports what it runs (analyses, collect.capture, inputs, outputs, base.cache, app.notebooks and
# app.profile) inside itself: they pull torch, numpy or yaml, and `linrec --help` or a mistyped argument answers
# without them (linrec.app.cli imports this module at its start).

SHOWN = {  # the columns each subcommand prints (its --out CSV holds every column of the table)
    "measure": "model block r2_lin r2_lo r2_hi r2_feature_median r2_ex_first cond_gram n_train n_test".split(),
    "curve": "model block train_tokens n_train r2 r2_lo r2_hi seed_sd r2_train slope fit_rmse".split(),
    "probe": "model block r2_lin r2_poly gain r2_trained_adam r2_trained_sgd adam_reach cond_gram".split(),
    "spectrum": (
        "model block r2_lin r2_feature_median top1_var_share r2_ex_top1 r2_ex_top8 eff_rank_out eff_rank_in "
        "cond_gram r2_ex_first regime"
    ).split(),
    "swap": "model block first r2_lin ppl_base ppl_swapped delta_ppl delta_lo delta_hi params_swap param_ratio".split(),
    "route": "model block target share share_heldout ppl_base ppl delta_ppl delta_lo delta_hi compute_saved".split(),
}


def _emit(table, cols: list[str], out: str | None) -> None:
    """Print `cols` of the per-block table; write all of it as CSV to `out` (under torchrun: rank 0 alone)."""
    import pandas as pd

    from linrec.stats.distributed import world

    if world()[0] > 0:
        return
    with pd.option_context("display.width", 160, "display.max_rows", 500):
        print(table[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if out:
        with atomic_file(out) as tmp:
            table.to_csv(tmp, index=False)
        print(f"wrote {out}", file=sys.stderr)


def cmd_measure(args) -> None:
    request = Capturing.of(args)
    request.check_names()  # before torch: a mistyped name answers at once
    from linrec.analyses.recoverability import ceiling_table
    from linrec.stats.distributed import world

    request = request.checked()
    _emit(ceiling_table(request.capture(), progress=world()[0] == 0), SHOWN["measure"], request.out)


def cmd_curve(args) -> None:
    request = Curving.of(args)
    request.check_names()  # before torch: a mistyped name answers at once
    from linrec.analyses.large_n import CURVE_N_BOOT, curve_summary
    from linrec.collect.curves import CURVE_TOKENS, CurveConfig, get_curve

    r = request.checked()
    train, test = r.train_tokens or CURVE_TOKENS, r.test_tokens or CurveConfig.test_tokens
    config = CurveConfig(r.model, r.corpus, r.seq_len, train, test, tuple(range(r.seeds)))
    curve = get_curve(config, r.run, source=r.source, cache=r.cache)
    _emit(curve_summary(curve, n_boot=CURVE_N_BOOT), SHOWN["curve"], r.out)


def cmd_probe(args) -> None:
    request = Probing.of(args)
    request.capture.check_names()  # before torch: a mistyped name answers at once
    from linrec.analyses.probe import probe_table
    from linrec.stats.distributed import world

    r = request.checked()
    table = probe_table(r.capture.capture(), rank=r.rank, seed=r.capture.config.seed)
    _emit(table, SHOWN["probe"], r.capture.out)
    if world()[0] == 0 and "r2_trained_adam" in table:
        print("r2_trained_adam, r2_trained_sgd: a linear map trained the way a practitioner would (5 epochs, "
              "linrec.analyses.probe.TRAIN_DEFAULTS), on the map r2_lin solves exactly: far below it where training "
              "under-converges (claim 7), e.g. adam_reach > 1, the closed form's largest weights beyond what Adam's "
              "steps can move")  # fmt: skip


def cmd_spectrum(args) -> None:
    request = Capturing.of(args)
    request.check_names()  # before torch: a mistyped name answers at once
    from linrec.analyses.spectrum import spectrum_table
    from linrec.stats.distributed import world

    request = request.checked()
    _emit(spectrum_table(request.capture(), progress=world()[0] == 0), SHOWN["spectrum"], request.out)


def cmd_swap(args) -> None:
    request = Swapping.of(args)
    request.capture.check_names()  # before torch: a mistyped name answers at once
    request.check()
    from linrec.analyses.swap import SwapStudy
    from linrec.inputs.hf import model_dtype
    from linrec.inputs.models import load_model

    r = request.checked()  # --model parsed, once: the load and the capture's key read it
    c = r.capture
    loaded = load_model(c.source, device=c.run.device, dtype=model_dtype(c.config.dtype))
    if not loaded.is_causal:
        raise LinrecError(
            f"{c.config.model} is an encoder ({loaded.model_type}): no LM head, so no perplexity for a swap to change; "
            "measure it with linrec measure, probe or spectrum"
        )
    blocks = block_list(r.blocks, len(loaded.sites))  # before the capture: a config unread above
    capture = c.capture(loaded)
    study = SwapStudy(
        capture, loaded, batch_size=c.run.batch_size, screening_windows=r.screening_windows, test_windows=r.test_windows
    )
    if r.route is not None:
        from linrec.analyses.routing import route_study

        routed = route_study(study, chosen=blocks or list(range(study.n_blocks)), shares=sorted({0.0, r.route}))
        table = routed.curve[routed.curve["share"] == r.route]
        _emit(table, SHOWN["route"], c.out)
        print(f"gate target chosen on the capture's train rows: {routed.target}", file=sys.stderr)
        return
    table = study.heldout.table(blocks, first=r.first)
    _emit(table, SHOWN["swap"], c.out)
    chosen = None
    if r.budget_ppl is not None:
        result = study.greedy(r.budget_ppl, order=r.order, blocks=blocks)
        print(result.summary())
        chosen = result.swapped
    elif blocks is not None:
        j = study.heldout.joint(blocks) if r.first == "map" else None
        if j is not None:
            print(
                f"blocks {j['blocks']} swapped together: ppl {j['ppl_base']:.4f} → {j['ppl']:.4f} "
                f"(Δ {j['delta_ppl']:+.4f}, {j['delta_level']:.0%} CI [{j['delta_lo']:+.4f}, {j['delta_hi']:+.4f}]); "
                f"FFN parameters removed {j['params_removed']:,}, affine parameters added {j['params_added']:,}"
            )
        chosen = blocks
    if r.save:
        if not chosen:
            raise LinrecError(
                f"no block fits within --budget-ppl {r.budget_ppl:g}, so there is nothing to save; raise --budget-ppl"
            )
        from linrec.inputs.surgery import saved_blocks

        out = study.heldout.save(r.save, chosen)
        held = saved_blocks(out)
        earlier = f"; with the maps it already held, blocks {held} are affine" if held != sorted(chosen) else ""
        print(f"wrote {out} (blocks {sorted(chosen)} swapped{earlier})", file=sys.stderr)


def cmd_fetch(args) -> None:
    """Every name checked, and what it will download and write said, before anything is fetched."""
    request = Fetching.of(args)
    from linrec.inputs.offline import OFFLINE_MODELS, fetch_plan

    plan = fetch_plan(request.names)  # an unknown name: one line, with "did you mean", before any download
    print(plan.line(), file=sys.stderr, flush=True)
    from linrec.inputs.corpora import fetch_offline_corpus
    from linrec.inputs.models import prepare_offline

    for name in request.names:
        if name in OFFLINE_MODELS:
            prepare_offline(name)  # fetches, verifies, dequantises and caches as safetensors
        else:
            fetch_offline_corpus(name)
        print(f"ready: {name}", file=sys.stderr)


def cmd_cache(args) -> None:
    request = Pruning.of(args)
    from linrec.base import cache

    if request.action == "prune":
        # a size beyond any disk keeps everything (and 1e300 GB in bytes is no longer a finite float)
        max_bytes = None if request.max_size is None else int(min(request.max_size * 2**30, 2**62))
        done = cache.prune(request.older_than, max_bytes, dry_run=request.dry_run)
        verb = "would remove" if request.dry_run else "removed"
        for e in done.removed:
            print(f"{verb} {e.path.name} ({e.size / 2**20:,.0f} MiB, {e.age_days:.1f} days): {e.made_by}")
        for e in done.in_use:
            print(f"kept {e.path.name}: in use by a running process (prune again once it has finished)")
        for e in done.links:
            print(f"kept {e.path.name}: a symbolic link, which linrec does not remove (delete the link yourself)")
        kept = [f"{len(done.in_use)} in use by a running process"] if done.in_use else []
        kept += [f"{len(done.links)} symbolic link(s)"] if done.links else []
        summary = f"{verb} {len(done.removed)} entries, {sum(e.size for e in done.removed) / 2**30:.2f} GiB"
        print(summary + (f"; kept {', '.join(kept)}" if kept else ""), file=sys.stderr)
        if done.failed:
            reasons = ", ".join(sorted({why for _, why in done.failed}))
            raise LinrecError(
                f"could not remove {len(done.failed)} entries, {sum(e.size for e, _ in done.failed) / 2**30:.2f} GiB "
                f"({reasons}), and they are kept whole; make {cache.folder('capture').parent} writable, or prune "
                "as a user who can write it"
            )
        return
    entries = cache.entries()
    for e in entries:
        if e.kind != "evaluation":
            print(f"{e.kind:8} {e.size / 2**20:9,.0f} MiB {e.age_days:6.1f} d  {e.path.name}  {e.made_by}")
    kept: dict[str, list] = {}  # a long study keeps thousands of evaluations: one line per model
    for e in entries:
        if e.kind == "evaluation":
            kept.setdefault(e.slug, []).append(e)
    for model, es in sorted(kept.items()):
        size, newest = sum(e.size for e in es) / 2**20, min(e.age_days for e in es)
        print(f"{'kept':8} {size:9,.0f} MiB {newest:6.1f} d  {len(es)} evaluations of {model} (linrec.analyses.memo)")
    total = sum(e.size for e in entries) + cache.digests_size()
    by_kind = ", ".join(
        f"{kind} {sum(e.size for e in entries if e.kind == kind) / 2**30:.2f} GiB"
        for kind in cache.KINDS
        if any(e.kind == kind for e in entries)
    )
    print(f"{cache.folder('capture').parent}: {len(entries)} entries ({by_kind}); total {total / 2**30:.2f} GiB")


def cmd_train(args) -> None:
    request = Training.of(args)
    from linrec.inputs.training import TrainConfig, get_run

    cfg = TrainConfig(**asdict(request.settings))
    run = get_run(cfg, cache=request.cache)
    m = run.meta
    print(
        f"{cfg.name}: {m['n_params']:,} parameters ({m['n_params_blocks']:,} in the blocks), {m['tokens_seen']:,} "
        f"tokens seen ({m['tokens_seen'] / m['n_params']:.1f} per parameter), final training loss "
        f"{m['final_train_loss']:.3f}, trained on {m['made_on']}{' (from the cache)' if run.cached else ''}"
    )
    rule = run.plateau()
    if rule is not None:
        print(
            f"held-out loss {rule.init_loss:.3f} at step 0 → {rule.final_loss:.3f} at step {rule.final_step} "
            f"(perplexity {math.exp(rule.final_loss):.1f}; best {rule.best_loss:.3f} at step {rule.best_step}); "
            f"{rule.gain:+.2%} over the last steps from step {rule.start_step}: "
            f"{'converged' if rule.converged else 'NOT converged'} (plateaued {rule.plateaued}, learned {rule.learned})"
        )
    for step in run.steps:
        print(f"step {step:>6}: {run.checkpoint(step)}")
    print(f"measure on: {run.measure_corpus}  (documents never trained on)")


def cmd_figures(args) -> None:
    r = Figures.of(args)
    from linrec.app.notebooks import run_notebooks
    from linrec.app.profile import parse_overrides

    overrides = parse_overrides(r.parameter)
    if r.device:
        from linrec.inputs.hf import check_device

        overrides["device"] = check_device(r.device)  # one line before any notebook starts, where it is absent
    run_notebooks(r.params, only=r.only, jobs=r.jobs, overrides=overrides, out=r.out)


def cmd_studies(args) -> None:
    """The stages (`linrec.studies.stages.STUDIES`): one line each; with a name, that study whole: its
    parameters (with `--params`, that profile's values beside the defaults), tables, claims and figures."""
    r = Studies.of(args)
    s = None if r.name is None else study(r.name)  # a mistyped name: one line before the imports below
    from linrec.app.profile import load_profile
    from linrec.outputs.catalog import of_study  # the claims' rows pull the claims' modules (numpy, scipy)
    from linrec.outputs.report_figures import FIGURES

    if r.name is None:
        for s in STUDIES:
            claims = ", ".join(str(c.id) for c in of_study(s.notebook)) or "none"
            print(f"{s.notebook}  {s.name:<9} {s.title} ({s.paper})")
            print(f"    {len(s.parameters)} parameter(s), {len(s.tables)} table(s), claims: {claims}")
        print("linrec studies NAME shows one whole; linrec figures --only NAME runs its notebook")
        return
    values = load_profile(r.params).values() if r.params else {}
    print(f"{s.notebook} {s.name}: {s.title} (arXiv 2606.19379, {s.paper})")
    print(f"notebook: notebooks/{s.file}.py; code: {s.module}.run(p)")
    if s.parameters:
        print(f"parameters (its section of the profile, declared in {s.parameters[0].where}):")
    else:
        print("parameters: none of its own (it reads the run's, linrec.studies.stages.Run, and other studies')")
    for d in s.parameters:
        given = f"  [{r.params}: {values[d.name]!r}]" if d.name in values and values[d.name] != d.default else ""
        print(f"  {d.declaration()}  # {d.about}{given}")
    print("tables:")
    for name in s.tables:
        print(f"  {name}: {TABLES[name].about}")
    print("claims: " + ("; ".join(f"{c.id} ({c.title})" for c in of_study(s.notebook)) or "none"))
    print("figures: " + (", ".join(stem for stem, nb, _ in FIGURES if nb == s.notebook) or "none"))


def cmd_report(args) -> None:
    from linrec.app.profile import load_profile
    from linrec.outputs.report import publish, report_setup

    r = Reporting.of(args)
    root = project_root()
    if r.bench:
        perf = performance_script(root)  # benchmarks/performance.py, which renders docs/performance.md's block
        run = root / "results" / "default" / "notebooks" / "run.csv"  # the default profile's last figures run
        if not perf.update_readme_performance(root / perf.PERFORMANCE_PAGE, root / r.bench, run):
            raise LinrecError(
                f"{perf.PERFORMANCE_PAGE} has no <!-- performance:start/end --> markers; restore them from git"
            )
        print(f"wrote the performance block of {root / perf.PERFORMANCE_PAGE} from {r.bench}")
        return

    profile = load_profile(r.params, root=root)
    values = profile.values()
    report = Path(root / values["report_path"])
    if report.is_dir():
        raise LinrecError(f"report_path {report} is a directory; give a file name, e.g. {report / 'report.md'}")

    check_writable_dir(
        report.parent, "the folder of report_path", f"set report_path in {r.params} to a writable folder"
    )
    # the report and, where the profile names one, its README's results block, from one judging of the claims
    written = publish(values, root, report_setup(profile))
    print(written)
