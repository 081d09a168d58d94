"""Quantisation sensitivity of the default profile's model (issue 64, item 9): R²_lin per block and the held-out
perplexity with one more quantisation error of the release's own size in every quantised weight.

    PYTHONPATH=lib .venv/bin/python benchmarks/quant.py [--profile default] [--model smollm2-135m] [--seeds 0 1]
                                                        [--out results/quant]

The model and its windows are the profile's notebook 01/02 capture (`Profile.capture_config`: corpus, tokens,
seq_len, seed), the base capture read from the cache (computed and cached there if absent); each seed's perturbed
model (`linrec.inputs.quant_noise.perturb`: a uniform dither of ±step/2 on every weight, the step per block of 32
read from the weights by the GGUF type the file gives that tensor) is captured uncached on the same windows
(`linrec.analyses.quant.sensitivity`). Writes `quant_sensitivity.csv` (one row per seed and block) and
`quant_parameters.csv` (per seed and perturbed tensor: its type, median step and the RMS error added) under `--out`,
and prints `linrec.analyses.quant.summary`. About 3 captures' time (2-5 min each on 2 shared cores). Offline GGUF
models with block-32 types only (smollm2-135m; gemma3-270m's K-quants are refused).
"""

from __future__ import annotations

import argparse
import json
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
from linrec.inputs.quant_noise import gguf_types, parameter_types, perturb


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
    types = parameter_types(loaded.model, gguf_types(fetch_gguf(name)), loaded.model.config.model_type)
    base = get_capture(config, run, loaded=loaded)  # the notebooks' own capture, from the cache where it is
    windows = load_windows(config.corpus, loaded.tokenizer, WindowCut.of(config))
    table = quant.sensitivity(loaded, windows, config, types, args.seeds, base=base, batch_size=run.batch_size)
    params = []
    for seed in args.seeds:  # what each draw added, tensor by tensor (cheap: no forward pass)
        saved = {n: w.detach().clone() for n, w in loaded.model.named_parameters() if n in types}
        params += [{"seed": seed, **row} for row in perturb(loaded.model, types, seed)]
        for n, w in loaded.model.named_parameters():
            if n in saved:
                w.data.copy_(saved[n])
    args.out.mkdir(parents=True, exist_ok=True)
    for stem, df in (("quant_sensitivity", table), ("quant_parameters", pd.DataFrame(params))):
        with atomic_file(args.out / f"{stem}.csv") as tmp:
            df.to_csv(tmp, index=False, float_format="%.6g")
    print(json.dumps(quant.summary(table), indent=1))
    print(f"{time.perf_counter() - t0:.0f} s; config {config}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
