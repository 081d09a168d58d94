"""End to end on the real offline default model (fetched by `make test` / `linrec fetch smollm2-135m`)."""

import numpy as np
import pytest
import torch

from helpers import capture_with
from linrec.analyses.perplexity import perplexity
from linrec.analyses.recoverability import ceiling_table
from linrec.inputs.corpora import fetch_offline_corpus
from linrec.inputs.models import load_model
from linrec.stats.ceiling import r2_rows

pytestmark = pytest.mark.models  # every test here reads SmolLM2 and the wiki corpus

PARAGRAPH = (
    "The city lies on the north bank of the river, about twenty miles from the coast. It grew up "
    "around a market and a small harbour, and by the end of the eighteenth century it had become an "
    "important centre for the wool trade. Today most people work in shops, offices and schools, and "
    "the old harbour is used by fishing boats and pleasure craft. The town has a museum, a library "
    "and a large park, and every summer it holds a festival of music and dance."
)


@pytest.fixture(scope="module")
def smollm2():
    return load_model("smollm2-135m")


def test_perplexity_on_ordinary_english_is_sane(smollm2):
    ids = smollm2.tokenizer(PARAGRAPH, return_tensors="pt").input_ids
    ppl = perplexity(smollm2.model, ids)
    with torch.no_grad():
        hf = float(torch.exp(smollm2.model(input_ids=ids, labels=ids).loss))
    assert abs(ppl - hf) / hf < 1e-4
    assert 5 < ppl < 25, ppl  # SmolLM2-135M gives ~9–19 on plain English; garbage weights give hundreds+


def test_real_model_capture_matches_lstsq_on_its_rows(smollm2, tmp_path, monkeypatch):
    wiki = fetch_offline_corpus("wiki")  # from the real cache, before pointing the cache at tmp
    monkeypatch.setenv("LINREC_CACHE", str(tmp_path))
    c = capture_with(
        "smollm2-135m", str(wiki), seq_len=64, tokens=1024, sample_rows=100_000, loaded=smollm2, progress=False
    )  # 16 windows of 64 tokens, about 80 % of them train: more rows than the 577 parameters per output
    assert c.meta["n_blocks"] == 30 and c.meta["dims"][0] == [576, 576]
    table = ceiling_table(c)  # barely more train rows than parameters: held out, R² may be < 0
    assert (np.isfinite(table["r2_lin"]) & (table["r2_lin"] <= 1)).all()
    for block in (0, 29):  # lstsq on all stored rows (float32 as hooked) is the independent reference
        xtr, ytr = c.rows(block, "train")
        xte, yte = c.rows(block, "test")
        coef = np.linalg.lstsq(np.c_[xtr, np.ones(len(xtr))].astype(np.float64), ytr.astype(np.float64), rcond=None)[0]
        ref = r2_rows(yte, np.c_[xte, np.ones(len(xte))] @ coef)
        print(block, table.loc[block, "r2_lin"], ref, table.loc[block, "cond_gram"])
        assert abs(table.loc[block, "r2_lin"] - ref) < 1e-9, (block, table.loc[block, "r2_lin"], ref)
