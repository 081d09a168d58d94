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
    """A planted table: one row of the registered results table `name` (linrec.claims.registry) holding `values`,
    every other column `fill`, so a verdict or a report reads numbers whose answer the test knows. A value for a
    column the table does not have is a mistake in the test, not a column to drop."""
    from linrec.claims.registry import TABLES

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
    "llama": (
        "LlamaConfig",
        "LlamaForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=64,
        ),
    ),
    "qwen2": (
        "Qwen2Config",
        "Qwen2ForCausalLM",
        dict(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=64,
        ),
    ),
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
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("linrec: error:"), lines[0]
    assert internal or ("unexpected" not in lines[0] and "a bug" not in lines[0]), lines[0]
    for n in needles:
        assert n in lines[0], lines[0]


def swap_study(model, tokens=2048, seq_len=32, batch_size=8, screening_windows=4):
    """SwapStudy of a tiny model on the tiny corpus (statistics from the real capture path)."""
    from linrec.analyses.swap import SwapStudy
    from linrec.inputs.hf import LoadedModel
    from linrec.measure.capture import run_capture
    from linrec.measure.config import CaptureConfig

    tok = tiny_tokenizer()
    loaded = LoadedModel(model=model, tokenizer=tok, name="tiny", identity="tiny", source="test")
    w = tiny_windows(tok, tokens, seq_len)
    cap = run_capture(loaded, w, CaptureConfig("tiny", tokens=tokens, seq_len=seq_len, sample_rows=0), progress=False)
    return SwapStudy(cap, loaded, windows=w, batch_size=batch_size, progress=False, screening_windows=screening_windows)


def swap_study_with_rows(model, tmp_path, tokens=2048, seq_len=32):
    """A swap study of a tiny model whose capture keeps its rows (the gate trains on them)."""
    from linrec.analyses.swap import SwapStudy
    from linrec.inputs.hf import LoadedModel
    from linrec.measure.capture import run_capture
    from linrec.measure.config import CaptureConfig

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
    from linrec.inputs.training import train_windows
    from linrec.inputs.training_text import split_documents, train_tokenizer

    docs, _ = load_documents(text)
    train, _ = split_documents(docs, cfg.measure_frac, cfg.split_seed)
    tok = train_tokenizer(train, cfg.vocab)
    return tok, train_windows(train, tok, cfg.seq_len)


def no_model_load(monkeypatch):
    """Loading a model fails the test: what is checked here must be checked before any weights are read."""
    import linrec.inputs.models
    import linrec.measure.capture

    def load(*a, **k):
        raise AssertionError("a model was loaded before the arguments were checked")

    monkeypatch.setattr(linrec.inputs.models, "load_model", load)
    monkeypatch.setattr(linrec.measure.capture, "load_model", load)
