"""What decides a trained run's weights, as fields with their defaults and nothing else (`TrainSettings`): light to
import, so the command line (`linrec train`) takes its defaults from here, not written again.
`linrec.inputs.training.TrainConfig` is these fields with their checks, sizes and cache key."""

from __future__ import annotations

from dataclasses import dataclass

EVAL_WINDOWS = 128  # held-out windows per evaluation of the held-out loss (16,384 tokens at seq_len 128)


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides a trained run's weights (and so its cache key)."""

    layout: str = "gelu"  # a row of linrec.inputs.layouts.LAYOUTS: gelu, swiglu (= llama), gpt2, pythia
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 0  # 0: the same MLP parameter count for every layout (4·d, or ≈ 8·d/3 for the gated ones)
    vocab: int = 4096  # byte-level BPE trained on the training documents
    seq_len: int = 128
    batch_size: int = 32  # windows per step
    steps: int = 600
    lr: float = 3e-3
    warmup: int = 40
    weight_decay: float = 0.1
    init_seed: int = 0  # the weights' initial draw
    data_seed: int = 0  # the order the training windows are visited in
    text: str = "wiki"  # a corpus spec (linrec.inputs.corpora): offline name or path; several joined by "+"
    measure_frac: float = 0.15  # share of the documents held out for measuring, never trained on
    split_seed: int = 0  # which documents are held out (the same for every run that is compared)
    n_checkpoints: int = 8  # step 0 and log-spaced steps up to `steps`
    shared_texts: str = ""  # texts joined by ",": one tokenizer and one measuring text for all of them ("": `text`)
    n_evals: int = 0  # held-out loss at step 0 and this many evenly spaced steps (0: none; the plateau rule's)
    eval_windows: int = EVAL_WINDOWS  # held-out windows of the run's own text each evaluation averages over
    precision: str = "float32"  # float32, or bf16: the forward pass under bf16 autocast (a GPU's; weights float32)
    device: str = "cpu"
