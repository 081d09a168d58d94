"""linrec.api, the top-level module: `linrec.measure` and `linrec.swap` on a transformers model object already in
memory. A planted truth (a GPT-2 whose block 0 MLP is an `nn.Linear`: R²_lin = 1 there, a swap of it costs nothing),
the command line's own numbers on the same model and text, and one-line errors for what a caller gets wrong."""

import pandas as pd
import pytest
import torch
from transformers import AutoModelForCausalLM

import linrec
from helpers import cli_process, make_tiny_model, tiny_text, tiny_tokenizer
from linrec.api import python_words, windows_of
from linrec.base.errors import LinrecError
from linrec.inputs.corpora import WindowCut, load_windows
from linrec.inputs.hf import LoadedModel

SMALL = dict(seq_len=32, tokens=2048, progress=False)  # 64 windows: 51 train, 13 held out


@pytest.fixture(scope="module")
def planted():
    """A tiny random GPT-2 (2 blocks, d = 32) whose block 0 MLP is an affine map (a Linear of the same shapes)."""
    model = make_tiny_model("gpt2", seed=1)
    torch.manual_seed(5)
    linear = torch.nn.Linear(32, 32)
    torch.nn.init.normal_(linear.weight, std=0.3)
    model.transformer.h[0].mlp = linear
    return model


@pytest.fixture(scope="module")
def texts():
    """Two documents, both within the 2,048 tokens measured (the windows cross the end of the first)."""
    return [tiny_text(1200, 0), tiny_text(1200, 1)]


def test_a_planted_affine_block_measures_r2_one_and_the_others_less(planted, texts):
    table = linrec.measure(planted, tiny_tokenizer(), texts, **SMALL)
    assert list(table["block"]) == [0, 1]
    assert list(table.columns[table.columns.get_indexer(["r2_lin", "r2_lin_lo", "r2_lin_hi"])]) == [
        "r2_lin", "r2_lin_lo", "r2_lin_hi"]  # fmt: skip
    assert "r2_lo" not in table.columns and {"r2_ex_first", "cond_gram", "n_train", "n_test"} <= set(table.columns)
    r2 = table.set_index("block")["r2_lin"]
    assert abs(r2[0] - 1) < 1e-9, r2[0]
    assert r2[1] < 0.99, r2[1]  # a random GELU MLP: far from affine
    assert (table["r2_lin_lo"] <= table["r2_lin"]).all() and (table["r2_lin"] <= table["r2_lin_hi"]).all()
    assert (table["n_train"] + table["n_test"] == 2048).all()
    assert set(table["corpus"]) == {"texts"}


def test_a_swap_of_the_planted_block_costs_nothing_and_of_the_other_something(planted, texts):
    table = linrec.swap(planted, tiny_tokenizer(), texts, blocks=[0, 1], **SMALL)
    row = table.set_index("block")
    assert abs(row.loc[0, "delta_ppl"]) < 1e-4 * row.loc[0, "ppl_base"], row.loc[0, "delta_ppl"]
    assert abs(row.loc[1, "delta_ppl"]) > 100 * abs(row.loc[0, "delta_ppl"])
    assert (row["delta_lo"] <= row["delta_ppl"]).all() and (row["delta_ppl"] <= row["delta_hi"]).all()
    joint = table.attrs["joint"]
    assert joint["blocks"] == [0, 1] and joint["params_removed"] == row["params_ffn"].sum()


def test_what_load_model_returns_is_taken_whole_with_its_name_and_tokenizer(planted, texts):
    """A `LoadedModel` (what `linrec.inputs.models.load_model` returns for an offline name) is measured as its model
    and tokenizer are, bit for bit, its name in the `model` column; tokenizer None takes its own, and `name=` still
    wins."""
    loaded = LoadedModel(planted, tiny_tokenizer(), "first:2:tiny", "test", "offline")
    plain = linrec.measure(planted, tiny_tokenizer(), texts, **SMALL)
    for tok in (None, tiny_tokenizer()):
        whole = linrec.measure(loaded, tok, texts, **SMALL)
        assert set(whole["model"]) == {"first:2:tiny"}
        pd.testing.assert_frame_equal(whole.drop(columns="model"), plain.drop(columns="model"), check_exact=True)
    assert set(linrec.measure(loaded, None, texts, name="mine", **SMALL)["model"]) == {"mine"}
    swaps = linrec.swap(loaded, None, texts, blocks=[0, 1], **SMALL)
    assert set(swaps["model"]) == {"first:2:tiny"} and swaps.attrs["joint"]["delta_level"] == 0.99


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny GPT-2 and the tiny tokenizer saved to a directory, and a text file: what the command line reads."""
    root = tmp_path_factory.mktemp("cli")
    make_tiny_model("gpt2", seed=3).save_pretrained(root / "model")
    tiny_tokenizer().save_pretrained(root / "model")
    (root / "text.txt").write_text(f"{tiny_text(1200, 0)}\n<|endoftext|>\n{tiny_text(1200, 1)}")
    return root


def _cli(root, command, *extra) -> pd.DataFrame:
    out = root / f"{command}.csv"
    args = ["--model", root / "model", "--corpus", root / "text.txt", "--seq-len", "32", "--tokens", "2048"]
    proc = cli_process(command, *args, "--no-cache", *extra, "--out", out, tmp_path=root)
    assert proc.returncode == 0, proc.stderr
    return pd.read_csv(out)


def _loaded_here(root):
    from linrec.inputs.hf import load_tokenizer

    return AutoModelForCausalLM.from_pretrained(root / "model"), load_tokenizer(root / "model")


def test_measure_gives_the_command_lines_numbers_on_the_same_model_and_text(saved, texts):
    """`linrec measure` on the saved model and a text file of the same documents, and `linrec.measure` on the model
    loaded here with the texts as a list and as that file's path: the same numbers."""
    cli = _cli(saved, "measure")
    model, tok = _loaded_here(saved)
    for given in (texts, str(saved / "text.txt")):
        api = linrec.measure(model, tok, given, **SMALL).rename(columns={"r2_lin_lo": "r2_lo", "r2_lin_hi": "r2_hi"})
        numbers = [c for c in cli.columns if c not in ("model", "corpus")]
        assert list(api.columns) == list(cli.columns)
        pd.testing.assert_frame_equal(api[numbers], cli[numbers], rtol=1e-12, atol=1e-12, check_dtype=False)
    assert api["model"][0] == str(saved / "model")  # the model's own name_or_path


def test_a_document_split_reaches_the_capture_from_the_command_line_and_from_python(saved):
    """--split documents and `split="documents"`: the same numbers, and not the window split's (the file's two
    documents: one of them is held out whole, so the held-out rows are other than the 13 windows' 416)."""
    cli = _cli(saved, "measure", "--split", "documents")
    model, tok = _loaded_here(saved)
    api = linrec.measure(model, tok, str(saved / "text.txt"), split="documents", **SMALL)
    api = api.rename(columns={"r2_lin_lo": "r2_lo", "r2_lin_hi": "r2_hi"})
    numbers = [c for c in cli.columns if c not in ("model", "corpus")]
    pd.testing.assert_frame_equal(api[numbers], cli[numbers], rtol=1e-12, atol=1e-12, check_dtype=False)
    assert (cli["n_test"] != 13 * 32).all() and (cli["n_test"] % 32 == 0).all()


def test_swap_gives_the_command_lines_numbers(saved, texts):
    cli = _cli(saved, "swap", "--blocks", "1")
    model, tok = _loaded_here(saved)
    api = linrec.swap(model, tok, texts, blocks=[1], **SMALL)
    numbers = [c for c in cli.columns if c not in ("model", "corpus", "first", "seconds")]
    pd.testing.assert_frame_equal(api[numbers], cli[numbers], rtol=1e-12, atol=1e-12, check_dtype=False)
    assert "joint" not in api.attrs  # one block: nothing swapped together


def test_a_list_of_texts_is_cut_and_split_as_the_same_text_in_a_file(saved, texts):
    cut = WindowCut(seq_len=32, tokens=2048, seed=0, test_frac=0.2)
    tok = tiny_tokenizer()
    mine, file = windows_of(texts, tok, cut), load_windows(str(saved / "text.txt"), tok, cut)
    assert torch.equal(mine.ids, file.ids)
    assert (mine.train == file.train).all() and (mine.test == file.test).all() and len(mine.test) == 13
    assert windows_of(["  ", *texts, ""], tok, cut).ids.equal(mine.ids)  # empty texts dropped, as empty files are


def test_the_model_is_left_as_it_was(planted, texts):
    planted.train()
    before = {k: v.clone() for k, v in planted.state_dict().items()}
    linrec.measure(planted, tiny_tokenizer(), texts, device="cpu", **SMALL)
    assert planted.training
    assert all(torch.equal(v, planted.state_dict()[k]) for k, v in before.items())
    planted.eval()


def _one_line(call, *needles):
    with pytest.raises(LinrecError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and "--" not in message, message
    for n in needles:
        assert n in message, message
    return message


def test_bad_inputs_are_one_line_in_pythons_words(planted, texts):
    tok = tiny_tokenizer()
    said = _one_line(lambda: linrec.measure("gpt2", tok, texts), "load it first", "from_pretrained('gpt2')")
    assert "load_model('gpt2')" in said and "measure model" not in said  # no flag reworded into a false command
    _one_line(lambda: linrec.measure(object(), tok, texts), "transformers model object")
    _one_line(lambda: linrec.measure(make_tiny_model("opt"), tok, texts), "'opt' is not supported", "FFN_SITES")
    _one_line(lambda: linrec.measure(planted, None, texts), "tokenizer must be")
    _one_line(lambda: linrec.measure(planted, tok, [], **SMALL), "holds no text")
    _one_line(lambda: linrec.measure(planted, tok, ["w1", 3], **SMALL), "one is a int")
    _one_line(lambda: linrec.measure(planted, tok, 42, **SMALL), "list of strings")
    _one_line(lambda: linrec.measure(planted, tok, "w1 w2 w3 w4", **SMALL), "neither a corpus name", "texts=[text]")
    _one_line(lambda: linrec.measure(planted, tok, ["w1 " * 40], **SMALL), "too small", "seq_len")
    _one_line(lambda: linrec.measure(planted, tok, texts), "seq_len=128 is longer", "use seq_len=64 or less")
    _one_line(lambda: linrec.measure(planted, tok, texts, seq_len=32, tokens=16, progress=False), "raise tokens")
    _one_line(lambda: linrec.measure(planted.double(), tok, texts, **SMALL), "float64", "model.float()")
    planted.float()
    _one_line(lambda: linrec.swap(planted, tok, texts, blocks=[5], **SMALL), "blocks [5] do not exist")
    _one_line(lambda: linrec.swap(planted, tok, texts, blocks=["x"], **SMALL), "block numbers")
    _one_line(lambda: linrec.swap(planted.transformer, tok, texts, **SMALL), "causal LM with its head")
    with pytest.raises(TypeError, match=r"unexpected keyword arguments \['seq'\]"):
        linrec.measure(planted, tok, texts, seq=32)


def test_a_notice_said_during_a_call_is_in_pythons_words_too(planted, texts, capsys):
    """Rows too few for the width (seq_len 32, 320 tokens: 10 windows, 256 train rows for 33 parameters an output,
    under the 10 a parameter that `rows_problem` asks for) are a notice, not an error: said during `linrec.measure`,
    it names `tokens`, not `--tokens`, and the words are reset after the call. Planted: the notice left out of
    `_python_words` fails."""
    from linrec.base.progress import WORDS

    linrec.measure(planted, tiny_tokenizer(), texts, seq_len=32, tokens=320, progress=False)
    err = capsys.readouterr().err
    assert "too few train rows" in err and "raise tokens to about" in err and "--tokens" not in err, err
    assert WORDS.get() is None  # reset after the call


def test_command_line_flags_are_said_as_python_arguments():
    said = "--seq-len 2048 is longer than m's context of 1,024 tokens; use --seq-len 1024 or less, or raise --tokens"
    assert python_words(said) == (
        "seq_len=2048 is longer than m's context of 1,024 tokens; use seq_len=1024 or less, or raise tokens"
    )


def test_linrec_measure_is_a_plain_function_with_its_signature():
    """`linrec.measure`, `linrec.swap` and `linrec.capture` are `linrec.api`'s functions (their own signatures, no
    callable package); `import linrec` imports neither torch nor linrec.api (checked in a fresh interpreter)."""
    import inspect
    import subprocess
    import sys

    from linrec import api

    assert linrec.measure is api.measure and linrec.swap is api.swap and linrec.capture is api.capture
    assert "seq_len" in inspect.signature(linrec.measure).parameters
    code = "import sys, linrec; print('torch' in sys.modules, 'linrec.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_capture_made_here_of_a_loaded_model_serves_its_swap_study(planted, texts):
    """`linrec.api.capture(loaded, …)` keeps the loaded model's identity, so `SwapStudy(capture, loaded)` takes it
    (it refused it as another model's before)."""
    from linrec.analyses.swap import SwapStudy
    from linrec.api import capture

    loaded = LoadedModel(planted, tiny_tokenizer(), "tiny", "tiny-identity", "offline")
    made = capture(loaded, None, texts, **SMALL)
    assert made.meta["identity"] == "tiny-identity"
    windows = windows_of(texts, tiny_tokenizer(), WindowCut(seq_len=32, tokens=2048, seed=0, test_frac=0.2))
    assert SwapStudy(made, loaded, windows=windows, progress=False).n_blocks == 2
