"""linrec.inputs.training: small decoders trained from scratch, reproducible, cached, and measured like any other
model."""

import torch


def test_the_train_command_reports_the_run_and_refuses_a_missing_gpu(colour_text, capsys):
    """`linrec train` trains (or reads) one run and prints its size, tokens per parameter and checkpoints; asking for
    a GPU where there is none is one line naming the fix, before any work."""
    from linrec.app.cli import main

    args = ["train", "--text", colour_text, "--d-model", "16", "--layers", "2", "--heads", "2", "--vocab", "300",
            "--seq-len", "16", "--batch-size", "8", "--steps", "6"]  # fmt: skip
    assert main(args) in (0, None)
    out = capsys.readouterr().out
    assert "gelu-i0-d0-colours:" in out and "tokens seen" in out and out.count("step ") >= 4 and "measure.txt" in out
    if not torch.cuda.is_available():
        code = main([*args, "--device", "cuda"])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and "cuda" in err.lower()
