"""What each `linrec` subcommand does (`cmd_measure`, `cmd_swap`, …), after `linrec.app.cli` has parsed its arguments:
the checks made before any expensive work (`_preflight`, `_check_out`), the capture they share (`_capture`) and how
a table is printed and written (`_emit`, `SHOWN`)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from linrec.app.bench import performance_script
from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file, check_writable_dir, project_root
from linrec.claims.registry import TABLES
from linrec.measure.config import CaptureConfig, CaptureRun
from linrec.studies.stages import STUDIES, study

# Each subcommand imports what it runs (analyses, measure.capture, inputs, outputs, base.cache, app.notebooks and
# app.profile) inside itself: they pull torch, numpy or yaml, and `linrec --help` or a mistyped argument answers
# without them (linrec.app.cli imports this module at its start).

SHOWN = {  # the columns each subcommand prints (its --out CSV holds every column of the table)
    "measure": "model block r2_lin r2_lo r2_hi r2_feature_median r2_ex_first cond_gram n_train n_test".split(),
    "curve": "model block train_tokens n_train r2 r2_lo r2_hi seed_sd r2_train slope fit_rmse".split(),
    "probe": "model block r2_lin r2_poly gain r2_trained_adam r2_trained_sgd cond_gram".split(),
    "spectrum": (
        "model block r2_lin r2_feature_median top1_var_share r2_ex_top1 r2_ex_top8 eff_rank_out eff_rank_in "
        "cond_gram r2_ex_first regime"
    ).split(),
    "swap": "model block first r2_lin ppl_base ppl_swapped delta_ppl delta_lo delta_hi params_swap param_ratio".split(),
    "route": "model block target share share_heldout ppl_base ppl delta_ppl delta_lo delta_hi compute_saved".split(),
}


def _capture(args, source, loaded=None, rows: bool = False):
    """The capture the measuring subcommands share (from the cache when it is there) of `source` (`--model`, parsed
    by `_preflight`); `loaded` reuses a loaded model. `rows`: the command reads the row sample (probe, swap --route);
    with --no-cache a command that does not is captured without one (nothing outlives the command, so the rows would
    be written for nothing)."""

    from linrec.measure.capture import get_capture

    run = CaptureRun(args.batch_size, args.device, args.device_map, args.blocks_per_pass)
    capture = get_capture(_config(args, rows), run, source=source, loaded=loaded, cache=not args.no_cache)
    _check_fit(capture)
    return capture


def _check_fit(capture) -> None:
    """After the capture, before any fit: train rows no affine map can be fitted on are one line naming the fix (a
    larger corpus where the corpus ran out, else a larger --tokens; `linrec.measure.reuse.rows_problem`)."""
    from linrec.measure.reuse import rows_problem

    m = capture.meta
    d = max(int(dx) for dx, _ in m["dims"])
    problem = rows_problem(capture.config, sum(m["n_windows"].values()), int(m["n_rows"]["train"]), d)
    if problem is not None and problem[1]:
        raise LinrecError(problem[0])


def _check_out(out: str | None) -> None:
    """Before any work: `--out` must name a file whose directory is writable."""
    if not out:
        return

    path = Path(out)
    if path.is_dir() or out.endswith(("/", "\\")):
        raise LinrecError(f"--out {out} is a directory; give a file name, e.g. --out {path / 'table.csv'}")
    check_writable_dir(path.resolve().parent, "the directory of --out", "choose another --out")


def _preflight(args):
    """What the capturing subcommands check before loading a model or reading the cache: the device, the output
    paths, the capture's settings, the corpus, `--model` (parsed here, once: the `linrec.inputs.source.ModelSource`
    returned, which the command hands on) and — from the model's config alone, where it can be read without the
    weights (`ModelSource.shape`) — the window length against its context, `--blocks` against its block count and
    `--rank` against its width. The names come first (`_check_names`)."""
    _check_names(args)
    if getattr(args, "sample_rows", 0) is None:  # rows only for a command that reads them (`_needs_rows`)
        args.sample_rows = CaptureConfig.sample_rows if _needs_rows(args) else 0
    from linrec.inputs.corpora import check_corpus
    from linrec.inputs.hf import check_device, context_error
    from linrec.inputs.source import ModelSource
    from linrec.stats.distributed import init_from_env

    args.device = check_device(init_from_env(args.device))  # under torchrun: this rank's device
    if getattr(args, "device_map", None):
        from linrec.stats.distributed import world

        if world()[1] > 1:
            raise LinrecError("--device-map places one model over all devices; under torchrun use --device instead")
        if args.device != "cpu":
            raise LinrecError(f"--device {args.device} and --device-map both place the model; give one of them")
    _check_out(getattr(args, "out", None))
    if getattr(args, "save", None):
        from linrec.inputs.surgery import check_save_target

        check_save_target(args.save)
    if hasattr(args, "tokens"):
        CaptureConfig(args.model, args.corpus, args.seq_len, args.tokens, args.seed).validate()
        _check_windows(args)
    check_corpus(args.corpus)
    source = ModelSource.parse(args.model)
    if hasattr(args, "tokens"):
        _check_cache(args, source)
    shape = source.shape()
    _check_rows(args, None if shape is None else shape.d_model)
    if shape is None:
        return source  # checked after the load, by the same rules
    err = context_error(args.model, args.seq_len, shape.context)
    if err is not None:
        raise err
    if getattr(args, "blocks", None) is not None:
        args.blocks = _block_list(args.blocks, shape.n_blocks)
    if hasattr(args, "rank"):
        from linrec.analyses.probe import check_rank

        check_rank(args.rank, shape.d_model, shape.d_model, args.sample_rows)  # as probe_table: rows of both splits
    return source


def _check_names(args) -> None:
    """`--model` and `--corpus` as names (`linrec.inputs.offline`: no torch), so a mistyped one is one line with "did
    you mean" within a second; each capturing subcommand calls this before it imports what it runs (torch)."""
    from linrec.inputs.offline import check_corpus_name, check_model_name

    check_model_name(args.model)
    check_corpus_name(args.corpus)


def _needs_rows(args) -> str | None:
    """What reads the capture's row sample in this command (probe; swap --route), else None."""
    if args.command == "probe":
        return "the probe"
    if args.command == "swap" and getattr(args, "route", None) is not None:
        return "--route's gate"
    return None


def _check_rows(args, d_model: int | None) -> None:
    """Before the load: a command that reads the row sample (`_needs_rows`) asks for one that can hold enough train
    rows (about 80 % of --sample-rows; the exact counts are checked again after the capture). The probe fits an
    affine map on them, so it needs more train rows than the input is wide, plus one (the width read from the
    model's config; before the load without one: 10 rows). A gate needs two train rows, one of each class:
    10 rows hold them but for a chance of 4e-6 (3 rows: 1 in 10)."""
    what = _needs_rows(args)
    if what is None:
        return

    train_share = 1 - CaptureConfig.test_frac
    probe = args.command == "probe" and d_model is not None
    least = math.ceil((d_model + 2) / train_share) if probe else 10
    if args.sample_rows < least:
        why = f"more train rows (about {train_share:.0%} of them) than the {d_model}-wide input" if probe else "10 rows"
        raise LinrecError(
            f"{what} reads the capture's row sample and needs {why}, and --sample-rows {args.sample_rows} keeps "
            f"fewer; use --sample-rows {max(least, CaptureConfig.sample_rows)} (the default) or at least {least}"
        )


def _check_windows(args) -> None:
    """Before the load: `swap --screening-windows` must leave train windows outside the screening set (it is
    removed from the train statistics), counted from --tokens and --seq-len as the capture splits them (a corpus
    shorter than --tokens is checked again, after the capture, by the same rule)."""
    if args.command != "swap":
        return

    n = args.tokens // args.seq_len
    n_train = n - min(n - 1, max(1, round(CaptureConfig.test_frac * n)))
    if args.screening_windows >= n_train:
        fix = f"use --screening-windows {n_train - 1} or fewer, or raise" if n_train > 1 else "raise"
        raise LinrecError(
            f"--screening-windows {args.screening_windows}: --tokens {args.tokens} in windows of --seq-len "
            f"{args.seq_len} make {n_train} train windows, and the screening windows must be fewer; {fix} --tokens"
        )


def _check_cache(args, source) -> None:
    """Before the load: a cache that cannot take the capture's entry is refused, unless the entry is already there
    (a read-only cache still serves what it holds) or --no-cache reads and writes nothing. `source`: --model, parsed."""
    if args.no_cache:
        return
    from linrec.base.cache import entry_path, writable

    try:
        writable("capture")
    except LinrecError:
        config = _config(args, rows=_needs_rows(args) is not None)
        if not entry_path("capture", args.model, config.key(source)).is_dir():
            raise


def _config(args, rows: bool):
    """The `CaptureConfig` that `_capture` asks for."""

    return CaptureConfig(
        args.model, args.corpus, args.seq_len, args.tokens, args.seed,
        sample_rows=args.sample_rows if rows or not args.no_cache else 0,
        product="float32" if args.fast else "float64", dtype=args.dtype, sample=args.sample, bos=args.bos,
    )  # fmt: skip


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
    _check_names(args)  # before torch: a mistyped name answers at once
    from linrec.analyses.recoverability import ceiling_table

    table = ceiling_table(_capture(args, _preflight(args)))
    _emit(table, SHOWN["measure"], args.out)


def cmd_curve(args) -> None:
    _check_names(args)  # before torch: a mistyped name answers at once
    from linrec.analyses.large_n import CURVE_N_BOOT, curve_summary
    from linrec.measure.curves import CURVE_TOKENS, CurveConfig, get_curve

    curve = get_curve(
        _preflight(args),
        corpus=args.corpus,
        seq_len=args.seq_len,
        train_tokens=args.train_tokens or CURVE_TOKENS,
        test_tokens=args.test_tokens or CurveConfig.test_tokens,
        seeds=tuple(range(args.seeds)),
        batch_size=args.batch_size,
        device=args.device,
        cache=not args.no_cache,
    )
    _emit(curve_summary(curve, n_boot=CURVE_N_BOOT), SHOWN["curve"], args.out)


def cmd_probe(args) -> None:
    _check_names(args)  # before torch: a mistyped name answers at once
    from linrec.analyses.probe import probe_table

    table = probe_table(_capture(args, _preflight(args), rows=True), rank=args.rank, seed=args.seed)
    _emit(table, SHOWN["probe"], args.out)


def cmd_spectrum(args) -> None:
    _check_names(args)  # before torch: a mistyped name answers at once
    from linrec.analyses.spectrum import spectrum_table

    table = spectrum_table(_capture(args, _preflight(args)))
    _emit(table, SHOWN["spectrum"], args.out)


def _block_list(blocks: list[int] | None, n_blocks: int) -> list[int] | None:
    """`blocks` (from `_block_syntax`) checked against a model's `n_blocks`."""
    if blocks is None:
        return None
    bad = [b for b in blocks if b >= n_blocks]
    if bad:
        shown = ",".join(map(str, blocks))
        raise LinrecError(
            f"--blocks {shown}: this model has blocks 0..{n_blocks - 1} (no {', '.join(map(str, bad))}); "
            f"e.g. --blocks 0,{n_blocks - 1}"
        )
    return blocks


def cmd_swap(args) -> None:
    _check_names(args)  # before torch: a mistyped name answers at once
    from linrec.analyses.swap import SwapStudy
    from linrec.inputs.models import load_model

    if args.device_map:
        raise LinrecError(
            "--device-map is for the capturing commands (measure, probe, spectrum); swap runs on --device"
        )
    if args.save and args.route is not None:
        raise LinrecError(
            "--save with --route: a routed block keeps its whole FFN and adds a gate, so it saves no parameters, and "
            "transformers could not load it without linrec; save a whole-block swap instead (drop --route)"
        )
    if args.save and args.blocks is None and args.budget_ppl is None:
        raise LinrecError("--save needs the blocks to swap: give --blocks 0,3 or --budget-ppl 1.0")
    if args.route is not None and (args.budget_ppl is not None or args.first != "map"):
        raise LinrecError("--route routes tokens of each block on its own; drop --budget-ppl and --first")
    if args.save and args.first != "map":
        raise LinrecError(
            f"--first {args.first} swaps are for evaluation only (under KV-cached generation a module cannot tell "
            "position 0 apart); save with --first map"
        )
    source = _preflight(args)  # --model parsed, once: the load and the capture's key read it
    from linrec.inputs.hf import model_dtype

    loaded = load_model(source, device=args.device, dtype=model_dtype(args.dtype))
    if not loaded.is_causal:
        raise LinrecError(
            f"{args.model} is an encoder ({loaded.model_type}): no LM head, so no perplexity for a swap to change; "
            "measure it with linrec measure, probe or spectrum"
        )
    blocks = _block_list(args.blocks, len(loaded.sites))  # before the capture: a config unread above
    capture = _capture(args, source, loaded, rows=args.route is not None)
    study = SwapStudy(
        capture,
        loaded,
        batch_size=args.batch_size,
        screening_windows=args.screening_windows,
        test_windows=args.test_windows,
    )
    if args.route is not None:
        from linrec.analyses.routing import route_study

        routed = route_study(study, chosen=blocks or list(range(study.n_blocks)), shares=sorted({0.0, args.route}))
        table = routed.curve[routed.curve["share"] == args.route]
        _emit(table, SHOWN["route"], args.out)
        print(f"gate target chosen on the capture's train rows: {routed.target}", file=sys.stderr)
        return
    table = study.heldout.table(blocks, first=args.first)
    _emit(table, SHOWN["swap"], args.out)
    chosen = None
    if args.budget_ppl is not None:
        result = study.greedy(args.budget_ppl, order=args.order, blocks=blocks)
        print(result.summary())
        chosen = result.swapped
    elif blocks is not None:
        j = study.heldout.joint(blocks) if args.first == "map" else None
        if j is not None:
            print(
                f"blocks {j['blocks']} swapped together: ppl {j['ppl_base']:.4f} → {j['ppl']:.4f} "
                f"(Δ {j['delta_ppl']:+.4f}, 95% CI [{j['delta_lo']:+.4f}, {j['delta_hi']:+.4f}]); "
                f"FFN parameters removed {j['params_removed']:,}, affine parameters added {j['params_added']:,}"
            )
        chosen = blocks
    if args.save:
        if not chosen:
            raise LinrecError(
                f"no block fits within --budget-ppl {args.budget_ppl:g}, so there is nothing to save; "
                "raise --budget-ppl"
            )
        from linrec.inputs.surgery import saved_blocks

        out = study.heldout.save(args.save, chosen)
        held = saved_blocks(out)
        earlier = f"; with the maps it already held, blocks {held} are affine" if held != sorted(chosen) else ""
        print(f"wrote {out} (blocks {sorted(chosen)} swapped{earlier})", file=sys.stderr)


def cmd_fetch(args) -> None:
    """Every name checked, and what it will download and write said, before anything is fetched."""
    from linrec.inputs.offline import OFFLINE_MODELS, fetch_plan

    plan = fetch_plan(args.names)  # an unknown name: one line, with "did you mean", before any download
    print(plan.line(), file=sys.stderr, flush=True)
    from linrec.inputs.corpora import fetch_offline_corpus
    from linrec.inputs.models import load_model

    for name in args.names:
        if name in OFFLINE_MODELS:
            load_model(name)  # fetches, verifies, dequantises and caches as safetensors
        else:
            fetch_offline_corpus(name)
        print(f"ready: {name}", file=sys.stderr)


def cmd_cache(args) -> None:
    from linrec.base import cache

    if args.action == "prune":
        # a size beyond any disk keeps everything (and 1e300 GB in bytes is no longer a finite float)
        max_bytes = None if args.max_size is None else int(min(args.max_size * 2**30, 2**62))
        done = cache.prune(args.older_than, max_bytes, dry_run=args.dry_run)
        verb = "would remove" if args.dry_run else "removed"
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
        print(f"{e.kind:8} {e.size / 2**20:9,.0f} MiB {e.age_days:6.1f} d  {e.path.name}  {e.made_by}")
    total = sum(e.size for e in entries) + cache.digests_size()
    by_kind = ", ".join(
        f"{kind} {sum(e.size for e in entries if e.kind == kind) / 2**30:.2f} GiB"
        for kind in cache.KINDS
        if any(e.kind == kind for e in entries)
    )
    print(f"{cache.folder('capture').parent}: {len(entries)} entries ({by_kind}); total {total / 2**30:.2f} GiB")


def cmd_train(args) -> None:
    from linrec.inputs.training import TrainConfig, get_run

    cfg = TrainConfig(
        layout=args.layout, d_model=args.d_model, n_layers=args.layers, n_heads=args.heads, vocab=args.vocab,
        seq_len=args.seq_len, batch_size=args.batch_size, steps=args.steps, lr=args.lr, init_seed=args.init_seed,
        data_seed=args.data_seed, text=args.text, device=args.device, warmup=args.warmup, n_evals=args.evals,
        precision=args.precision,
    )  # fmt: skip
    run = get_run(cfg, cache=not args.no_cache)
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
    from linrec.app.notebooks import run_notebooks
    from linrec.app.profile import parse_overrides

    overrides = parse_overrides(args.parameter)
    if getattr(args, "device", None):
        from linrec.inputs.hf import check_device

        overrides["device"] = check_device(args.device)  # one line before any notebook starts, where it is absent
    run_notebooks(args.params, only=args.only, jobs=args.jobs, overrides=overrides, out=args.out)


def cmd_studies(args) -> None:
    """The stages (`linrec.studies.stages.STUDIES`): one line each; with a name, that study whole: its
    parameters (with `--params`, that profile's values beside the defaults), tables, claims and figures."""
    s = None if args.name is None else study(args.name)  # a mistyped name: one line before the imports below
    from linrec.app.profile import load_profile
    from linrec.outputs.catalog import of_study  # the claims' rows pull the claims' modules (numpy, scipy)
    from linrec.outputs.report_figures import FIGURES

    if args.name is None:
        for s in STUDIES:
            claims = ", ".join(str(c.id) for c in of_study(s.notebook)) or "none"
            print(f"{s.notebook}  {s.name:<9} {s.title} ({s.paper})")
            print(f"    {len(s.parameters)} parameter(s), {len(s.tables)} table(s), claims: {claims}")
        print("linrec studies NAME shows one whole; linrec figures --only NAME runs its notebook")
        return
    values = load_profile(args.params).values() if args.params else {}
    print(f"{s.notebook} {s.name}: {s.title} (arXiv 2606.19379, {s.paper})")
    print(f"notebook: notebooks/{s.file}.py; code: {s.module}.run(p)")
    if s.parameters:
        print(f"parameters (its section of the profile, declared in {s.parameters[0].where}):")
    else:
        print("parameters: none of its own (it reads the run's, linrec.studies.stages.Run, and other studies')")
    for d in s.parameters:
        given = f"  [{args.params}: {values[d.name]!r}]" if d.name in values and values[d.name] != d.default else ""
        print(f"  {d.declaration()}  # {d.about}{given}")
    print("tables:")
    for name in s.tables:
        print(f"  {name}: {TABLES[name].about}")
    print("claims: " + ("; ".join(f"{c.id} ({c.title})" for c in of_study(s.notebook)) or "none"))
    print("figures: " + (", ".join(stem for stem, nb, _ in FIGURES if nb == s.notebook) or "none"))


def cmd_report(args) -> None:
    from linrec.app.profile import load_profile
    from linrec.outputs.report import build_report, report_params

    root = project_root()
    if args.bench:
        perf = performance_script(root)  # benchmarks/performance.py, which renders docs/performance.md's block
        run = root / "results" / "default" / "notebooks" / "run.csv"  # the default profile's last figures run
        if not perf.update_readme_performance(root / perf.PERFORMANCE_PAGE, root / args.bench, run):
            raise LinrecError(
                f"{perf.PERFORMANCE_PAGE} has no <!-- performance:start/end --> markers; restore them from git"
            )
        print(f"wrote the performance block of {root / perf.PERFORMANCE_PAGE} from {args.bench}")
        return

    # a profile that runs notebook 09: the values it reports from (its setup states them, as notebook 09's does); one
    # for a single stage (curve, zoo, training): the values its file sets, so its setup states no budget it did not
    # choose
    profile = load_profile(args.params, root=root)
    values = profile.values()
    whole = profile.notebooks is None or "09" in profile.notebooks
    results = root / values["results_dir"]
    report = Path(root / values["report_path"])
    if report.is_dir():
        raise LinrecError(f"report_path {report} is a directory; give a file name, e.g. {report / 'report.md'}")

    check_writable_dir(
        report.parent, "the folder of report_path", f"set report_path in {args.params} to a writable folder"
    )
    out = build_report(
        results,
        root / values["figures_dir"],
        report,
        report_params({k: v for k, v in values.items() if whole or k in profile.given}),
    )
    print(f"wrote {out}")
