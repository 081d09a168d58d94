"""Plain helpers shared by the tests (no download): a tiny tokenizer and corpus, tiny windows, tiny models,
statistics of numpy rows, swap studies of tiny models, a learnable training text, and `planted`, the one way a test
writes a results table by hand. The fixtures built on them live in conftest.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import torch

TESTS = Path(__file__).resolve().parent  # tests/, whatever the depth of the test file that asks
ROOT = TESTS.parent  # the repository
DEFAULT = ROOT / "results" / "default"  # the default profile's committed results

WORDS = [f"w{i}" for i in range(90)]


def planted(name: str, fill=0.5, **values) -> pd.DataFrame:
    """A planted table: one row of the registered results table `name` (linrec.base.registry) holding `values`,
    every other column `fill`, so a verdict or a report reads numbers whose answer the test knows. A value for a
    column the table does not have is a mistake in the test, not a column to drop."""
    from linrec.base.registry import TABLES

    columns = TABLES[name].columns
    unknown = sorted(set(values) - set(columns))
    assert not unknown, f"{name} has no column(s) {unknown}"
    return pd.DataFrame([{c: values.get(c, fill) for c in columns}])


def tiny_tokenizer(bos: bool = False):
    """A word-level fast tokenizer over `WORDS` (+ <s>, </s>, <unk>); prepends <s> by default when `bos`."""
    from tokenizers import Tokenizer, processors
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="</s>"
    )


def tiny_text(n_words: int, seed: int = 0) -> str:
    """Random words with a little structure (bigram-ish), so the model input is not pure noise."""
    rng = np.random.default_rng(seed)
    ids = np.cumsum(rng.integers(-3, 4, size=n_words)) % len(WORDS)
    return " ".join(WORDS[i] for i in ids)


def tiny_windows(tok, tokens: int = 4096, seq_len: int = 32):
    """Windows of two seeded tiny documents (linrec.inputs.corpora.make_windows), split 80/20."""
    from linrec.inputs.corpora import WindowCut, make_windows

    return make_windows(
        [tiny_text(6000, 0), tiny_text(6000, 1)],
        tok,
        WindowCut(seq_len=seq_len, tokens=tokens, seed=0, test_frac=0.2),
        corpus="t",
        identity="t",
    )


def moments_of(x, y):
    """`linrec.stats.moments.Moments` of numpy rows x [n, d_in], y [n, d_out]."""
    from linrec.stats.moments import Moments

    return Moments.of(torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(np.ascontiguousarray(y)))


VOCAB = 100


_SPECS = {
    "gpt2": (
        "GPT2Config",
        "GPT2LMHeadModel",
        dict(n_embd=32, n_layer=2, n_head=2, n_positions=64, bos_token_id=1, eos_token_id=2),
    ),
    "gpt_neox": (
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            use_parallel_residual=True,
        ),
    ),
    "gpt_neox_seq": (
        "GPTNeoXConfig",
        "GPTNeoXForCausalLM",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            use_parallel_residual=False,
        ),
    ),
    **{
        kind: (
            config,
            model,
            dict(
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                max_position_embeddings=64,
                **extra,
            ),
        )
        for kind, config, model, extra in (  # the llama layout: one row of linrec.inputs.sites each
            ("llama", "LlamaConfig", "LlamaForCausalLM", {}),
            ("qwen2", "Qwen2Config", "Qwen2ForCausalLM", {}),
            ("mistral", "MistralConfig", "MistralForCausalLM", {}),
            ("qwen3", "Qwen3Config", "Qwen3ForCausalLM", {}),
            ("phi3", "Phi3Config", "Phi3ForCausalLM", {"pad_token_id": 0}),  # its default pad id is past VOCAB
        )
    },
    "gemma3_text": (
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=3,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            max_position_embeddings=64,
            sliding_window=4,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        ),
    ),
    "bert": (
        "BertConfig",
        "BertModel",
        dict(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64
        ),
    ),
    "opt": (
        "OPTConfig",
        "OPTForCausalLM",
        dict(
            hidden_size=32,
            num_hidden_layers=2,
            ffn_dim=64,
            num_attention_heads=2,
            word_embed_proj_dim=32,
            max_position_embeddings=64,
        ),
    ),
}


def _randomise(model: torch.nn.Module) -> None:
    """O(1)-scale random weights, so FFN outputs and norm gains are far from 0 / 1 and identities are not vacuous."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim >= 2:
                is_embedding = "emb" in name or name.endswith("wte.weight") or name.endswith("wpe.weight")
                p.copy_(torch.randn_like(p) * (1.0 if is_embedding else 1.0 / math.sqrt(p.shape[-1])))
            elif "norm" in name.lower() or ".ln" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p) if not name.endswith("bias") else 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.1 * torch.randn_like(p))


def make_tiny_model(kind: str, seed: int = 0) -> torch.nn.Module:
    """A tiny float32 model of `kind` (a key of `_SPECS`) with seeded random weights, in eval mode."""
    import transformers

    config_cls, model_cls, kw = _SPECS[kind]
    config = getattr(transformers, config_cls)(vocab_size=VOCAB, **kw)
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config)
    _randomise(model)
    return model.float().eval()


def save_tiny_model(directory, kind: str = "llama") -> str:
    """`make_tiny_model(kind)` and the tiny tokenizer saved to `directory`: a local model spec for linrec."""
    make_tiny_model(kind).save_pretrained(directory)
    tiny_tokenizer().save_pretrained(directory)
    return str(directory)


_COUNT_LOOKUPS = """
import atexit, socket, sys
hosts = []
lookup = socket.getaddrinfo
def counted(host, *args, **kwargs):  # every connection (linrec's own, the hub clients', a retry's) looks its host up
    hosts.append(str(host))
    return lookup(host, *args, **kwargs)
socket.getaddrinfo = counted
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write("\\n".join(hosts)))
import runpy
sys.argv = ["linrec", *sys.argv[2:]]
runpy.run_module("linrec", run_name="__main__")  # the entry point `python -m linrec` runs, SystemExit included
"""


def linrec_without_the_hub(tmp_path, *args: str):
    """`linrec ARGS` in a fresh interpreter with no Hugging Face hub to reach (a hub address that does not resolve,
    an empty HF_HOME, HF_HUB_OFFLINE unset: linrec must find out by itself) and nothing fetched (an empty
    $LINREC_CACHE, no package index: a model loaded before the error fails on its own): (the process, the host names
    it looked up, one per connection it tried). It runs the module `python -m linrec` runs, so these tests also start
    the real entry point. A retry is one more lookup; how long such a run takes is measured by benchmarks/clocks.py,
    not by the tests."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT="https://hub.invalid")
    env.update(LINREC_CACHE=str(tmp_path / "linrec-cache"), PIP_NO_INDEX="1")
    hosts = tmp_path / "lookups.txt"
    proc = subprocess.run(
        [sys.executable, "-c", _COUNT_LOOKUPS, str(hosts), *args], capture_output=True, text=True, env=env, timeout=300
    )
    return proc, hosts.read_text().split() if hosts.exists() else []


def run_main(args) -> int:
    """`linrec ARGS` in this process: its exit code (argparse's own exit included)."""
    from linrec.app.cli import main

    try:
        return main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code


def single_line(code, err, *needles, expect=2, internal=False):
    """The command ended with `expect` and one line of stderr: linrec's error naming every needle, never a
    traceback, and never "unexpected" or "a bug" unless `internal` (a bug planted in linrec itself)."""
    assert code == expect, err
    assert "Traceback" not in err
    shown = [ln.split("\r")[-1] for ln in err.strip().split("\n")]  # what a terminal shows: \r redraws the line
    lines = [ln for ln in shown if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("linrec: error:"), lines[0]
    # linrec's own catch-all reads "unexpected <Error>: … (a bug; …)"; a library's words quoted in a named error may
    # say "unexpected" (a codec's "unexpected end of data" on random bytes) without being one
    assert internal or not (lines[0].startswith("linrec: error: unexpected") or "a bug" in lines[0]), lines[0]
    for n in needles:
        assert n in lines[0], lines[0]


def swap_study(model, tokens=2048, seq_len=32, batch_size=8, screening_windows=4):
    """SwapStudy of a tiny model on the tiny corpus (statistics from the real capture path)."""
    from linrec.analyses.swap import SwapStudy
    from linrec.collect.capture import run_capture
    from linrec.collect.config import CaptureConfig
    from linrec.inputs.hf import LoadedModel

    tok = tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    w = tiny_windows(tok, tokens, seq_len)
    cap = run_capture(loaded, w, CaptureConfig("tiny", tokens=tokens, seq_len=seq_len, sample_rows=0), progress=False)
    return SwapStudy(cap, loaded, windows=w, batch_size=batch_size, progress=False, screening_windows=screening_windows)


def swap_study_with_rows(model, tmp_path, tokens=2048, seq_len=32):
    """A swap study of a tiny model whose capture keeps its rows (the gate trains on them)."""
    from linrec.analyses.swap import SwapStudy
    from linrec.collect.capture import run_capture
    from linrec.collect.config import CaptureConfig
    from linrec.inputs.hf import LoadedModel

    tok = tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    w = tiny_windows(tok, tokens, seq_len)
    cfg = CaptureConfig("tiny", tokens=tokens, seq_len=seq_len, sample_rows=tokens)
    (tmp_path / "entry").mkdir()
    cap = run_capture(loaded, w, cfg, tmp_path / "entry", progress=False)
    return SwapStudy(cap, loaded, windows=w, batch_size=8, progress=False, screening_windows=2)


def perturbed_test_windows(windows, seed: int = 7):
    """The same windows with every *test* window replaced by random tokens."""
    from linrec.inputs.corpora import Windows

    ids = windows.ids.clone()
    g = torch.Generator().manual_seed(seed)
    ids[windows.test] = torch.randint(1, int(ids.max()) + 1, (len(windows.test), ids.shape[1]), generator=g)
    return Windows(ids, windows.train, windows.test, windows.corpus, windows.identity, windows.bos)


COLOURS = "red green blue cyan magenta yellow black white".split()


def colour_cycle_text(n_docs: int = 40, words: int = 120) -> str:
    """A learnable sequence task: each document walks the colour cycle from its own starting point, so the next word
    is always determined by the one before."""
    from linrec.inputs.training_text import EOS

    docs = [" ".join(COLOURS[(k + i) % len(COLOURS)] for i in range(words + k)) for k in range(n_docs)]  # all distinct
    return f"\n{EOS}\n".join(docs)


def training_windows(cfg, text):
    """The tokenizer a training run of `cfg` trains on `text`'s training documents, and its training windows."""
    from linrec.inputs.corpora import load_documents
    from linrec.inputs.training_text import split_documents, train_tokenizer, train_windows

    docs, _ = load_documents(text)
    train, _ = split_documents(docs, cfg.measure_frac, cfg.split_seed)
    tok = train_tokenizer(train, cfg.vocab)
    return tok, train_windows(train, tok, cfg.seq_len)


def capture_with(model, corpus: str = "wiki", *, loaded=None, cache: bool = True, progress: bool = True, **options):
    """`linrec.collect.capture.get_capture` with the request written as keywords, as the tests write it: `options`
    are `CaptureConfig`'s fields (seq_len, tokens, seed, sample_rows, …) and `CaptureRun`'s (batch_size, device,
    device_map, blocks_per_pass); `model` a spec or a parsed `ModelSource`."""
    from dataclasses import fields

    from linrec.collect.capture import get_capture
    from linrec.collect.config import CaptureConfig, CaptureRun
    from linrec.inputs.source import ModelSource

    run = CaptureRun(**{f.name: options.pop(f.name) for f in fields(CaptureRun) if f.name in options})
    source = model if isinstance(model, ModelSource) else None
    config = CaptureConfig(model.spec if source is not None else model, corpus, **options)
    return get_capture(config, run, source=source, loaded=loaded, cache=cache, progress=progress)


def no_model_load(monkeypatch):
    """Loading a model fails the test: what is checked here must be checked before any weights are read."""
    import linrec.collect.capture
    import linrec.inputs.models

    def load(*a, **k):
        raise AssertionError("a model was loaded before the arguments were checked")

    monkeypatch.setattr(linrec.inputs.models, "load_model", load)
    monkeypatch.setattr(linrec.collect.capture, "load_model", load)


def linrec_left_in(scratch) -> list[str]:
    """What linrec left in TMPDIR (torch leaves its own folders there)."""
    return sorted(p.name for p in scratch.iterdir() if p.name.startswith("linrec-"))


def main_captured(*args):
    """`linrec ARGS` in this process: (exit code, stdout, stderr)."""
    import contextlib
    import io

    from linrec.app.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def cli_process(*args, tmp_path):
    """`linrec ARGS` in this process (`linrec.app.cli.main`, output captured), with its own cache under `tmp_path`:
    (returncode, stdout, stderr) as a process would give them. What only a real process shows (the entry point) is
    started by `linrec_without_the_hub`."""
    import contextlib
    import io
    import os
    from types import SimpleNamespace

    env = {"HF_HUB_OFFLINE": "1", "LINREC_CACHE": str(tmp_path / "cache")}
    old = {k: os.environ.get(k) for k in env}
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = run_main(args)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def token_ids(n=2, t=7, seed=1):
    return torch.randint(0, 100, (n, t), generator=torch.Generator().manual_seed(seed))


def save_affine_swap(directory, seed=0):
    """A tiny llama with block 0 swapped for a random affine map, saved by `save_swapped`."""
    from linrec.inputs.surgery import AffineFFN, save_swapped

    model = make_tiny_model("llama")
    d = model.config.hidden_size
    torch.manual_seed(seed)
    m = AffineFFN(d, d)
    m.weight.data.normal_(0, 0.2)
    return save_swapped(model, tiny_tokenizer(), {0: m}, directory)


def feed_curve(acc, X: np.ndarray, Y: np.ndarray, batch: int = 5, seed: int = 0) -> None:
    """Both passes of a `linrec.collect.curves.CurveAccumulator` over synthetic windows X [W, T, d_in],
    Y [W, T, d_out], shuffled like a model's batches."""
    order = np.random.default_rng(seed).permutation(len(X))
    train = order[np.isin(order, np.flatnonzero((acc.chunk >= 0).any(axis=0)))]
    for i in range(0, len(train), batch):
        w = np.sort(train[i : i + batch])
        for b in range(len(acc.dims)):
            acc.add_train(b, w, torch.from_numpy(X[w]).float(), torch.from_numpy(Y[b][w]).float())
    acc.finish_train()
    test = np.unique(np.concatenate(acc.tests))
    for i in range(0, len(test), batch):
        w = test[i : i + batch]
        for b in range(len(acc.dims)):
            acc.add_test(b, w, torch.from_numpy(X[w]).float(), torch.from_numpy(Y[b][w]).float())


def claims_1_3_results(
    tmp_path: Path, max_r2: float = 0.99, jump: float = 0.7, gain: float = 0.01, ci=(-0.30, 0.25), ci90=(-0.2, 0.2)
) -> Path:
    """A results directory with the tables of claims 1 and 3, written through the registry."""
    from linrec.base.registry import TABLES
    from linrec.base.tables import save_table

    d = tmp_path / "results"
    summary = {
        "model": "m", "n_blocks": 12, "r2_min": 0.2, "r2_max": max_r2, "max_adjacent_jump": 0.9,
        "direction_changes": 7, "max_jump_disjoint": jump, "direction_changes_disjoint": 5,
        "as_extreme_as_paper": False, "r2_ex_first_min": 0.2, "max_jump_disjoint_ex_first": jump,
        "direction_changes_disjoint_ex_first": 1, "cond_gram_median": 1e6, "r2_ex_first_max": 0.5,
        "moves_tested": 10, "moves_fdr": 9, "max_jump_fdr": jump, "direction_changes_fdr": 5,
        "moves_tested_ex_first": np.nan, "moves_fdr_ex_first": np.nan, "max_jump_fdr_ex_first": np.nan,
        "direction_changes_fdr_ex_first": np.nan, "first_token_blocks": "",
        "profile_tokens": 16384.0,
    }  # fmt: skip
    save_table(pd.DataFrame([summary]), "r2_lin_summary", d)
    probe = {
        "model": "m", "n_blocks": 12, "gain_median": gain, "gain_max": 0.05, "gain_min": 0.0, "gain_quad_median": gain,
        "quad_excess_median": 0.0, "pearson_r": 0.02, "p": 0.9, "ci_lo": ci[0], "ci_hi": ci[1], "ci_lo90": ci90[0],
        "ci_hi90": ci90[1], "ci_lo_iid": ci[0], "ci_hi_iid": ci[1], "n_eff": 10.0, "n_needed": 120, "correlation": "",
        "detectable_r": 0.7,
        "n_stop_validation": 12, "n_stop_flattened": 0, "n_stop_max_epochs": 0, "seconds_probe_total": 1.0,
        "sweep_rank_min": 16, "sweep_gain_median_rank_min": gain, "sweep_rank_max": 256,
        "sweep_gain_median_rank_max": 0.04,
    }  # fmt: skip
    save_table(pd.DataFrame([probe, {**probe, "model": "all"}]), "probe_summary", d)  # one model and its pool
    blocks = pd.DataFrame({c: [0.5, 0.6] for c in TABLES["r2_lin"].columns}).assign(model="m", block=[0, 1])
    save_table(blocks, "r2_lin", d)
    return d


def project_with_a_curve_run(tmp_path: Path, stale: bool) -> tuple[Path, str]:
    """A project folder (pyproject.toml beside notebooks/) whose results/curve/ holds a last run of params/curve.yaml
    (its Figure 2c, the learning curve it is drawn from and notebook 02's r2_lin table, with its registered columns
    or, `stale`, without two of them as an older linrec wrote it), and the default profile's report rendered into
    paper/."""
    from linrec.base.tables import load_table, save_table
    from linrec.outputs.report import render

    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    d = claims_1_3_results(root)
    curve = root / "results" / "curve"
    blocks = load_table("r2_lin", d)
    save_table(planted("r2_curve", model="m", block=0), "r2_curve", curve)
    if stale:
        curve.mkdir(parents=True, exist_ok=True)
        blocks.drop(columns=["r2_ex_first_lo", "r2_ex_first_hi"]).to_csv(curve / "r2_lin.csv", index=False)
    else:
        save_table(blocks, "r2_lin", curve)
    (curve / "figures").mkdir()
    (curve / "figures" / "fig2c_learning_curves.png").write_bytes(b"png")
    return curve, render(d, root / "figures", root / "paper" / "report.md")


def swap_table(model, n, variants=()):
    """A swap table of `n` blocks whose block 0 swaps for less than the base, with position variants on block 1."""
    rows = []
    for b in range(n):
        for first in ("map", *(variants if b == 1 else ())):
            d = float(b - 1) + (0.5 if first == "map" else 0.0)  # block 0 swaps for less than the base
            rows.append({"model": model, "block": b, "first": first, "r2_lin": 0.5 + 0.1 * b, "delta_ppl": d,
                         "delta_lo": d - 0.2, "delta_hi": d + 0.2, "ppl_base": 20.0})  # fmt: skip
    return pd.DataFrame(rows)


def predictor_row(rho=(-0.5, -0.8, -0.2, -0.75, -0.25), partial=(-0.5, -0.8, -0.2, -0.75, -0.25), model="m"):
    """An R²_lin row of swap_predictors: (point, 95 % lo, hi, 90 % lo, hi) for ρ and for the partial ρ."""
    return {"model": model, "column": "r2_lin", "middle_rho": 0.0, "n_blocks": 12, "n_eff": 9.0, "n_needed": 150,
            **dict(zip(("spearman_rho", "rho_lo", "rho_hi", "rho_lo90", "rho_hi90"), rho)),
            **dict(zip(("partial_rho_depth", "partial_lo", "partial_hi", "partial_lo90", "partial_hi90"),
                       partial))}  # fmt: skip


def predictors(model="m", **kw):
    """A swap_predictors table: `predictor_row` and a depth row."""
    return pd.DataFrame([predictor_row(model=model, **kw), {"model": model, "column": "depth_from_end",
                                                             "spearman_rho": -0.7}])  # fmt: skip


def claim1_row(span=0.6, jump=0.4, turns=3, model="m", r2_min=0.3):
    """An r2_lin_summary row for claim 1: its span, largest disjoint jump and direction changes."""
    return {"model": model, "n_blocks": 10, "r2_min": r2_min, "r2_max": r2_min + span, "max_adjacent_jump": 0.9,
            "direction_changes": 9, "max_jump_disjoint": jump, "direction_changes_disjoint": turns,
            "as_extreme_as_paper": False, "r2_ex_first_min": np.nan, "max_jump_disjoint_ex_first": np.nan,
            "direction_changes_disjoint_ex_first": np.nan, "cond_gram_median": 1.0, "r2_ex_first_max": 0.5,
            "moves_tested": np.nan, "moves_fdr": np.nan, "max_jump_fdr": np.nan, "direction_changes_fdr": np.nan,
            "moves_tested_ex_first": np.nan, "moves_fdr_ex_first": np.nan, "max_jump_fdr_ex_first": np.nan,
            "direction_changes_fdr_ex_first": np.nan,
            "first_token_blocks": "",
            "profile_tokens": 16384.0}  # fmt: skip


def moves_profile(noise: float, n_windows: int = 32, seed: int = 0):
    """A zig-zag profile 0.2, 0.8, 0.2, 0.8, 0.3 with narrow stated intervals (every step disjoint), and
    leave-one-window-out replicates whose spread makes each block's jackknife standard error about `noise`
    (independent between blocks)."""
    r = np.array([0.2, 0.8, 0.2, 0.8, 0.3])
    t = pd.DataFrame({"model": "m", "block": range(5), "r2_lin": r, "r2_lo": r - 0.01, "r2_hi": r + 0.01,
                      "r2_ex_first": r, "r2_ex_first_lo": r - 0.01, "r2_ex_first_hi": r + 0.01})  # fmt: skip
    loo = r + noise / np.sqrt(n_windows - 1) * np.random.default_rng(seed).standard_normal((n_windows, len(r)))
    return t, loo


def spectrum_rows(regimes, model="m"):
    """A spectrum table (notebook 04's, per block) of one model whose blocks have the regimes given."""
    n = len(regimes)
    return pd.DataFrame({
        "model": model, "block": range(n), "regime": regimes, "first_var_share": np.linspace(0, 0.9, n),
        "n_massive": [1] + [0] * (n - 1), "top1_var_share": [0.6] * n, "r2_lin": [0.9] * n,
        "r2_ex_top8": np.linspace(0.9, 0.5, n), "eff_rank_out": [10.0] * n, "d_out": [100] * n,
        "r2_feature_median": [0.5] * n, "eff_rank_explained": [1.5] * n,
        "cond_gram": np.arange(n) + 1.0, "cond_gram_test": np.arange(n) + 2.0, "eff_rank_in": np.arange(n)[::-1] + 1.0,
        "dynamic_range_in": np.arange(n) * 2.0,
    })  # fmt: skip


def probe_rows(shortfalls, adam_better=True, model="m", cond=None):
    """A probe table (notebook 03's, per block) whose better trained baseline (Adam, or SGD) sits at 0, so each
    block's shortfall is the one given, exactly."""
    n = len(shortfalls)
    ceiling = np.asarray(shortfalls, dtype=float)  # best baseline at 0: the shortfall is exact, no rounding
    best = np.zeros(n)
    worse = best - 0.2
    return pd.DataFrame({
        "model": model,
        "block": range(n),
        "r2_ceiling_rows": ceiling,
        "r2_trained_adam": best if adam_better else worse,
        "r2_trained_sgd": worse if adam_better else best,
        "cond_gram": np.arange(1.0, n + 1) if cond is None else cond,
        "cond_scaled": np.arange(n, 0, -1.0),
        "adam_reach": np.arange(n, 0, -1.0),
        "n_train_rows": 8192,
    })  # fmt: skip


def budget_rows(block, cond, reach, ceiling=0.905, lr_interior=True, scaled=None):
    """A budget curve block on checkpoints 100, 1000, 10000 whose tuned SGD reaches `ceiling` − 0.005 from step
    `reach` on (never: None), Adam and gradient descent never; κ(Gram) `cond`, Jacobi-scaled `scaled` (`cond`)."""
    rows = []
    for opt in ("adam", "sgd", "gd"):
        for step in (100, 1000, 10000):
            at = reach is not None and step >= reach and opt == "sgd"
            rows.append({"model": "m", "block": block, "optimizer": opt, "lr": 0.1, "step": step,
                         "r2_test": ceiling - 0.005 if at else 0.5, "chosen": True, "ceiling": ceiling,
                         "cond_gram": cond, "cond_scaled": cond if scaled is None else scaled,
                         "lr_interior": np.nan if opt == "gd" else lr_interior})  # fmt: skip
    return rows


def dose_rows(shortfalls: dict, steps=(10, 100, 1000), ceiling=0.9, val: dict | None = None):
    """A dose table: per κ, SGD's shortfall at each of `steps` (the list in `shortfalls[κ]`), Adam 0.2 further; the
    validation R² follows the held-out R² 0.05 lower, unless `val[κ]` lists SGD's own (Adam's again 0.2 lower)."""
    rows = []
    for kappa, short in shortfalls.items():
        vals = (val or {}).get(kappa, [ceiling - 0.05 - sh for sh in short])
        for step, sh, v in zip(steps, short, vals):
            for opt, extra in (("sgd", 0.0), ("adam", 0.2)):
                rows.append({"model": "m", "block": 3, "kappa": kappa, "optimizer": opt, "step": step,
                             "r2_test": ceiling - sh - extra, "r2_val": v - extra, "ceiling": ceiling,
                             "lr_interior": True})  # fmt: skip
    return pd.DataFrame(rows)


def budget_block(r2_at_100, ceiling=0.905, extra=(), block=0, cond=10.0):
    """One mechanism block of a budget curve: tuned (chosen) SGD at `r2_at_100` at step 100 and at the ceiling at
    1000; Adam and gradient descent at 0.5 throughout; `extra` rows appended (an untuned rate, gradient descent)."""
    rows = [{"model": "m", "block": block, "optimizer": "sgd", "lr": 0.1, "step": s, "r2_test": r, "chosen": True,
             "ceiling": ceiling, "cond_gram": cond, "cond_scaled": cond, "lr_interior": True}
            for s, r in ((100, r2_at_100), (1000, ceiling))]  # fmt: skip
    rows += [{**rows[0], "optimizer": o, "step": s, "r2_test": 0.5} for o in ("adam", "gd") for s in (100, 1000)]
    rows += [{**rows[0], **e} for e in extra]
    return rows


def one_block_budget(r2_at_100, ceiling=0.905, extra=()):
    """The same block twice, as the better-conditioned (κ 10) and the worse-conditioned (κ 10⁸) half."""
    return pd.DataFrame(budget_block(r2_at_100, ceiling, extra) + budget_block(r2_at_100, ceiling, extra, 1, 1e8))


def swap_rows(deltas, r2s, model="m", half_width=0.1):
    """A swap table of map swaps, one per block: the held-out ΔPPL given, its interval ± `half_width`, R²_lin."""
    n = len(deltas)
    d = np.asarray(deltas, dtype=float)
    return pd.DataFrame({"model": model, "block": range(n), "first": "map", "r2_lin": r2s, "delta_ppl": d,
                         "delta_lo": d - half_width, "delta_hi": d + half_width, "ppl_base": 20.0,
                         "params_ffn": 300, "params_linear": 30})  # fmt: skip


def screen_values(screening, model="m", **cols):
    """A swap_predictor_values table: the screening ΔPPL given per block, depth from the nearer end, and `cols`."""
    n = len(screening)
    return pd.DataFrame({"model": model, "block": range(n), "depth_from_end": [min(i, n - 1 - i) for i in range(n)],
                         "screening_delta_ppl": screening, **cols})  # fmt: skip


def null_rows(trained, init, shuffled=None, model="m"):
    """A `nulls` table: per block the trained R² and the null draws given."""
    rows = []
    for b, t in enumerate(trained):
        rows.append({"model": model, "block": b, "ffn": "trained", "draw": 0, "r2": t})
        for kind, draws in (("random init", init[b]), ("shuffled", (shuffled or init)[b])):
            rows += [{"model": model, "block": b, "ffn": kind, "draw": k, "r2": v} for k, v in enumerate(draws)]
    return pd.DataFrame(rows)


def planted_matrix(a, b, noise=0.0, band=2, seed=0, model="m"):
    """A cross matrix R(FFN i, inputs j) = 0.5 + a_i + b_j (+ noise) on |i − j| ≤ band."""
    rng = np.random.default_rng(seed)
    n = len(a)
    rows = [{"model": model, "ffn_block": i, "input_block": j, "r2": 0.5 + a[i] + b[j] + noise * rng.standard_normal()}
            for i in range(n) for j in range(n) if abs(i - j) <= band]  # fmt: skip
    return pd.DataFrame(rows)


def decomposition_rows(model="m", half=0.02):
    """A controls_decomposition row: the weights' minus the inputs' share 0.3, its windows' interval ± `half`."""
    return pd.DataFrame([{"model": model, "share_weights": 0.5, "share_inputs": 0.2, "share_weights_minus_inputs": 0.3,
                          "share_weights_minus_inputs_lo": 0.3 - half, "share_weights_minus_inputs_hi": 0.3 + half,
                          "n_blocks": 12, "n_standout": 3}])  # fmt: skip


def run_profiles(runs: dict) -> pd.DataFrame:
    """A profiles table: {run: {step: [R²_lin per block]}} as rows of run, step, block and r2_lin."""
    return pd.DataFrame([{"run": run, "step": step, "block": b, "r2_lin": v} for run, steps in runs.items()
                         for step, p in steps.items() for b, v in enumerate(p)])  # fmt: skip


def one_line_error(proc, *needles):
    """A `linrec` subprocess that failed with one line on stderr (no traceback) holding each of `needles`."""
    assert proc.returncode != 0
    err = proc.stderr.strip().splitlines()
    assert len(err) >= 1 and "Traceback" not in proc.stderr
    line = err[-1]
    assert line.startswith("linrec: error:") or "error:" in line
    for n in needles:
        assert n in line, line


CAPTURE_KW = dict(seq_len=32, tokens=2048, sample_rows=64, progress=False)  # a tiny capture's settings


def on_threads(n: int, compute):
    """`compute()` with torch set to `n` threads, the caller's count restored afterwards: the same call on 1 and on 2
    threads gives two results a test can compare (issue 64, item 8)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        return compute()
    finally:
        torch.set_num_threads(before)


def thread_rows(n: int = 3000, d: int = 96, seed: int = 0):
    """float32 (x, y) rows wide enough that an unguarded loop's whole-tensor reductions (over 32,768 elements, torch's
    grain) split by thread: features over 1.5 decades, y a saturating map of x plus noise; 80 % train (`Rows`)."""
    from linrec.analyses.probe import Rows

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g) * torch.logspace(0, 1.5, d) + 0.5
    y = torch.tanh(x / 10) @ torch.randn(d, d, generator=g) + 0.1 * torch.randn(n, d, generator=g)
    k = int(0.8 * n)
    return Rows(x[:k], y[:k], x[k:], y[k:])


def edges(threshold: float) -> dict[str, float]:
    """A threshold and its float neighbours: {"below": one ulp below, "at": the threshold, "above": one ulp above}
    (`np.nextafter`), the three values a boundary test plants (issue 92)."""
    t = float(threshold)
    return {"below": float(np.nextafter(t, -np.inf)), "at": t, "above": float(np.nextafter(t, np.inf))}


def edge_tables(make, threshold: float) -> dict:
    """`make(value)` (a table, a row, or whatever a rule reads) for the threshold exactly and one ulp either side:
    {"below": …, "at": …, "above": …}, each with its planted value checked to sit where it should."""
    e = edges(threshold)
    assert e["below"] < e["at"] < e["above"] and e["at"] == threshold
    return {k: make(v) for k, v in e.items()}


def hand_effective_n(a, b) -> float:
    """Bartlett's effective number of pairs of two ordered series, written out apart from the library's
    (`linrec.analyses.uncertainty.effective_n`): n / (1 + 2 Σ_{k ≤ n/5} r_a(k) r_b(k)), r(1) raised by Kendall's bias
    (1 + 3 r(1)) / n, kept within [min(5, n), n]."""

    def acf(v, lags):
        v = np.asarray(v, float) - np.mean(v)
        r = np.array([(v[:-k] * v[k:]).sum() / (v * v).sum() for k in range(1, lags + 1)])
        r[0] += (1 + 3 * min(max(r[0], 0.0), 1.0)) / len(v)
        return r

    n = len(a)
    lags = max(1, n // 5)
    return float(np.clip(n / (1 + 2 * (acf(a, lags) * acf(b, lags)).sum()), min(5, n), n))


def raw_rows_capture(n_windows=9, blocks=3, d_out=2, seed=4):
    """A stand-in capture whose held-out sums come from raw rows kept beside it: per block and window, 3–6 rows of y
    (d_out features) and of the fitted map's residual e, so a test can score any set of windows from the rows
    themselves. Returns (capture, rows) with rows[block][window] = (y, e)."""
    from linrec.analyses.calibration import _Planted
    from linrec.stats.heldout import HeldOut

    g = np.random.default_rng(seed)
    sizes = g.integers(3, 7, n_windows)
    held, rows = [], []
    for b in range(blocks):
        per = []
        for k in range(n_windows):
            y = g.standard_normal((sizes[k], d_out)) + 0.3 * g.standard_normal(d_out) + 1.0
            per.append((y, (0.3 + 0.2 * b) * g.standard_normal((sizes[k], d_out))))
        rows.append(per)
        held.append(HeldOut(np.arange(n_windows), sizes.astype(np.int64), np.stack([(e**2).sum(0) for _, e in per]),
                            np.stack([y.sum(0) for y, _ in per]), np.stack([(y**2).sum(0) for y, _ in per]),
                            np.zeros(d_out)))  # fmt: skip
    return _Planted(held), rows


def r2_of_rows(per, windows) -> float:
    """R² of one block on `windows`, from the rows: 1 − Σ e² / Σ (y − ȳ)², the mean over those windows' rows."""
    y = np.concatenate([per[k][0] for k in windows])
    e = np.concatenate([per[k][1] for k in windows])
    return 1.0 - (e**2).sum() / ((y - y.mean(0)) ** 2).sum()
