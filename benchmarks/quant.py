"""Quantisation sensitivity of an offline GGUF model (issue 64, item 9; Gemma-3's K-quants: issue 87, item 8): R²_lin
per block and the held-out perplexity with one more quantisation error of the release's own size in every quantised
weight.

    PYTHONPATH=lib .venv/bin/python benchmarks/quant.py [--profile default] [--model smollm2-135m] [--seeds 0 1]
                                                        [--out results/quant]

The model and its windows are the profile's notebook 01/02 capture (`Profile.capture_config`: corpus, tokens,
seq_len, seed), the base capture read from the cache (computed and cached there if absent); each seed's perturbed
model (`linrec.inputs.quant_noise.perturb`: a uniform dither of ±step/2 on every weight, the step per block read from
the weights by the GGUF type the file gives that tensor: the legacy block-32 types and the K-quants Q4_K, Q5_K, Q6_K)
is captured uncached on the same windows (`linrec.analyses.quant.sensitivity`). Writes `quant_sensitivity.csv` (one
row per seed and block) and `quant_parameters.csv` (per model, seed and perturbed tensor: its type, median step and
the RMS error added) under `--out`; the rows of the other models a file already holds are kept as they are, line for
line, so one model is measured at a time (`--profile default` for smollm2-135m, `--profile full --model gemma3-270m`).
Prints how far the base R²_lin lies from the profile's own `r2_lin.csv` (the notebooks' capture: within the CSV's
rounding) and writes `quant_summary.csv` (`linrec.analyses.quant.summary` of the whole stored file, every model's:
`linrec.outputs.bench_summaries.quant_table`), which the docs quote. About 3 captures' time.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import pandas as pd

from linrec.analyses import quant
from linrec.app.profile import load_profile
from linrec.base.errors import LinrecError
from linrec.base.files import atomic_file
from linrec.collect.capture import get_capture
from linrec.inputs.corpora import WindowCut, load_windows
from linrec.inputs.models import fetch_gguf, load_model
from linrec.inputs.offline import OFFLINE_MODELS
from linrec.inputs.quant_noise import gguf_architecture, gguf_types, parameter_types, perturb
from linrec.outputs.bench_summaries import quant_table, save


def merged(path: Path, df: pd.DataFrame, model: str) -> str:
    """The CSV text of `path` with `model`'s rows replaced by `df`'s: every other model's line kept byte for byte (a
    file with other columns, or none, is `df` alone)."""
    new = df.to_csv(index=False, float_format="%.6g", lineterminator="\n")
    if not path.is_file():
        return new
    old = path.read_text().splitlines(keepends=True)
    header = new.splitlines(keepends=True)[0]
    if not old or old[0] != header:
        return new
    kept = [line for line, m in zip(old[1:], pd.read_csv(io.StringIO("".join(old)))["model"]) if m != model]
    return header + "".join(kept) + "".join(new.splitlines(keepends=True)[1:])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("--model", default=None, help="an offline GGUF model (default: the profile's first)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--out", type=Path, default=quant.RESULTS.parent)
    args = ap.parse_args(argv)
    p = load_profile(args.profile)
    name = args.model or p.models[0]
    if name not in OFFLINE_MODELS or OFFLINE_MODELS[name].kind != "gguf":
        raise LinrecError(f"--model must be an offline GGUF model ({', '.join(OFFLINE_MODELS)}), got {name!r}")
    config, run = p.capture_config(name), p.capture_run()
    t0 = time.perf_counter()
    loaded = load_model(name, device=run.device)
    gguf = fetch_gguf(name)
    types = parameter_types(loaded.model, gguf_types(gguf), gguf_architecture(gguf))
    base = get_capture(config, run, loaded=loaded)  # the notebooks' own capture, from the cache where it is
    windows = load_windows(config.corpus, loaded.tokenizer, WindowCut.of(config))
    table = quant.sensitivity(loaded, windows, config, types, args.seeds, base=base, batch_size=run.batch_size)
    params = []
    for seed in args.seeds:  # what each draw added, tensor by tensor (cheap: no forward pass)
        saved = {n: w.detach().clone() for n, w in loaded.model.named_parameters() if n in types}
        params += [{"model": name, "seed": seed, **row} for row in perturb(loaded.model, types, seed)]
        for n, w in loaded.model.named_parameters():
            if n in saved:
                w.data.copy_(saved[n])
    notebooks = Path(p.results_dir) / "r2_lin.csv"  # this capture's R²_lin as the profile's notebooks wrote it
    if notebooks.is_file():
        theirs = pd.read_csv(notebooks).query("model == @name and corpus == @config.corpus").set_index("block")
        ours = table.drop_duplicates("block").set_index("block")["r2_lin_base"]
        print(f"base R²_lin against {notebooks}: max |difference| {(ours - theirs['r2_lin']).abs().max():.2g}")
    args.out.mkdir(parents=True, exist_ok=True)
    for stem, df in (("quant_sensitivity", table), ("quant_parameters", pd.DataFrame(params))):
        text = merged(args.out / f"{stem}.csv", df, name)
        with atomic_file(args.out / f"{stem}.csv") as tmp:
            Path(tmp).write_text(text)
    summary = quant_table(pd.read_csv(args.out / "quant_sensitivity.csv"))  # from the stored file, every model's
    save(summary, args.out / "quant_summary.csv")
    print(summary[summary["model"] == name].to_string(index=False))
    print(f"{time.perf_counter() - t0:.0f} s; config {config}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
