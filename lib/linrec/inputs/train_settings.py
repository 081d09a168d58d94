"""What decides a trained run's weights, as fields with their defaults and nothing else (`TrainSettings`): light to
import, so the command line (`linrec train`) builds its options from here (each field's default, what it does and its
rule, declared once: `linrec.base.params.param`), not written again.
`linrec.inputs.training.TrainConfig` is these fields with their checks, sizes and cache key."""

from __future__ import annotations

from dataclasses import dataclass

from linrec.base.constraints import Integer, Options, Real
from linrec.base.params import param
from linrec.inputs.layouts import LAYOUTS

EVAL_WINDOWS = 128  # held-out windows per evaluation of the held-out loss (16,384 tokens at seq_len 128)
PRECISION_NAMES = ("float32", "bf16")  # linrec.inputs.training.PRECISIONS (tests/app/test_cli.py: they agree)
SEED = Integer(low=0, high=2**63 - 1)
SIZE = Integer(low=1)


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides a trained run's weights (and so its cache key)."""

    layout: str = param("gelu", "decoder layout (linrec.inputs.layouts): gelu, swiglu (llama), gpt2, pythia, llama",
                        Options(tuple(LAYOUTS)), flags=("--layout", "--mlp"))  # fmt: skip
    d_model: int = param(128, "width", SIZE)
    n_layers: int = param(4, "blocks", SIZE, flags=("--layers",))
    n_heads: int = param(4, "attention heads", SIZE, flags=("--heads",))
    d_ff: int = param(0, "MLP width (0: the same MLP parameter count for every layout, 4·d or ≈ 8·d/3 gated)",
                      Integer(low=0))  # fmt: skip
    vocab: int = param(4096, "BPE vocabulary trained on the text", Integer(low=260, example=4096))  # 256 bytes + EOS
    seq_len: int = param(128, "window", SIZE)
    batch_size: int = param(32, "windows per step", SIZE)
    steps: int = param(600, "optimizer steps", SIZE)
    lr: float = param(3e-3, "peak learning rate, a finite number > 0", Real(0, None, example=3e-3))
    warmup: int = param(40, "warm-up steps", Integer(low=0))
    weight_decay: float = param(0.1, "AdamW's weight decay on the matrices", Real(0, None, "left", example=0.1))
    init_seed: int = param(0, "seed of the initial weights", SEED)
    data_seed: int = param(0, "seed of the data order", SEED)
    text: str = param("wiki", "training text: an offline corpus or a path (several joined by +)")
    measure_frac: float = param(0.15, "share of the documents held out for measuring, never trained on", Real(0, 1))
    split_seed: int = param(0, "which documents are held out (the same for every run that is compared)", SEED)
    n_checkpoints: int = param(8, "checkpoints: step 0 and log-spaced steps up to `steps`", Integer(low=2))
    shared_texts: str = param("", "texts joined by ',': one tokenizer and one measuring text for all of them ('': "
                              "text)")  # fmt: skip
    n_evals: int = param(0, "held-out loss evaluated this many times while training (0: none), and the plateau rule "
                         "on it", Integer(low=0), flags=("--evals",))  # fmt: skip
    eval_windows: int = param(EVAL_WINDOWS, "held-out windows of the run's own text each evaluation averages over",
                              SIZE)  # fmt: skip
    precision: str = param("float32", "bf16: the forward pass under bf16 autocast, on a GPU only (weights float32)",
                           Options(PRECISION_NAMES))  # fmt: skip
    device: str = param("cpu", "cpu, cuda, cuda:N or auto; the cache key says which")
