"""linrec.analyses.swap_run: notebook 06's study of one model."""

from linrec.analyses.screening import GREEDY_ORDERS


def test_run_model_is_notebook_06_for_one_model(tiny_model_dir, tiny_corpus, tmp_path, monkeypatch):
    """`run_model` (notebook 06's per-model step): a table row per block and variant, the rank curve on the block
    `curve_block` picks, one greedy row per order, a reload that reproduces the in-memory perplexity, and the
    temporary save directory gone afterwards."""
    import tempfile

    from linrec.analyses.swap import SwapSettings
    from linrec.analyses.swap_run import run_model

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    from linrec.collect.config import CaptureConfig

    kw = CaptureConfig(tiny_model_dir, tiny_corpus(), seq_len=32, tokens=2048, sample_rows=0)
    run = run_model(kw, swap=SwapSettings(ranks=[4], variant_min_first_share=0.0))
    n = run.ceiling.shape[0]
    assert (run.table["first"] == "map").sum() == n and {"ffn", "mean"} <= set(run.table["first"])
    assert run.curve["block"].nunique() == 1 and list(run.curve["rank"].iloc[:1]) == [4]
    assert [g["order"] for g in run.greedy] == list(GREEDY_ORDERS)
    assert run.reload["abs_diff"] <= 1e-6 * run.reload["ppl_in_memory"]
    assert list((tmp_path / "tmp").iterdir()) == []  # the 0.5–1 GB scratch copy is deleted
    kept = run_model(kw, swap=SwapSettings(ranks=[]), save_dir=tmp_path / "keep")
    assert (tmp_path / "keep").is_dir() and str(tmp_path / "keep") in kept.reload["directory"]
