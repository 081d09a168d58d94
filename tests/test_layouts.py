"""linrec.inputs.layouts: the paper's three layouts (GPT-2, Pythia, llama) built from transformers' own classes,
trained from scratch by linrec.inputs.training, and measured and swapped like any model."""

import torch


def test_figures_on_a_missing_gpu_is_refused_in_one_line_before_any_notebook(monkeypatch, capsys):
    """`linrec figures --params params/zoo.yaml --device cuda` where torch has no GPU: exit 2, one line naming the
    devices there are, and no notebook started; a device that exists is passed to every notebook as `device`."""
    import linrec.app.notebooks as nb
    from linrec.app.cli import main

    called = []
    monkeypatch.setattr(nb, "run_notebooks", lambda *a, **kw: called.append(kw))
    if not torch.cuda.is_available():
        code = main(["figures", "--params", "params/zoo.yaml", "--only", "08", "--device", "cuda"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and not called and len(err.splitlines()) == 1 and "cuda" in err and "available: cpu" in err
    assert main(["figures", "--params", "params/zoo.yaml", "--only", "08", "--device", "cpu"]) in (0, None)
    assert called[-1]["overrides"] == {"device": "cpu"}
