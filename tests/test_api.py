"""linrec.api, the top-level module: `linrec.measure` and `linrec.swap` on a transformers model object already in
memory. A planted truth (a GPT-2 whose block 0 MLP is an `nn.Linear`: R²_lin = 1 there, a swap of it costs nothing),
the command line's own numbers on the same model and text, and one-line errors for what a caller gets wrong."""

import contextlib
import inspect

import numpy as np
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
    _one_line(lambda: linrec.measure(planted, tok, ["w1", 3], **SMALL), "texts[1] is 3 (int)")
    _one_line(lambda: linrec.measure(planted, tok, 42, **SMALL), "list of strings")
    _one_line(lambda: linrec.measure(planted, tok, "w1 w2 w3 w4", **SMALL), "neither a corpus name", "texts=[text]")
    _one_line(lambda: linrec.measure(planted, tok, ["w1 " * 40], **SMALL), "too small", "seq_len")
    _one_line(lambda: linrec.measure(planted, tok, texts), "seq_len=128 is longer", "use seq_len=64 or less")
    _one_line(lambda: linrec.measure(planted, tok, texts, seq_len=32, tokens=16, progress=False), "raise tokens")
    _one_line(lambda: linrec.measure(planted.double(), tok, texts, **SMALL), "float64", "model.float()")
    planted.float()
    _one_line(lambda: linrec.swap(planted, tok, texts, blocks=[5], **SMALL), "this model's last block is 1 (no 5)")
    _one_line(lambda: linrec.swap(planted, tok, texts, blocks=["x"], **SMALL), "block numbers")
    _one_line(lambda: linrec.swap(planted.transformer, tok, texts, **SMALL), "causal LM with its head")
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'seq'"):  # Python's own: a full signature
        linrec.measure(planted, tok, texts, seq=32)


def test_a_notice_said_during_a_call_is_a_warning_in_pythons_words_and_silent_without_progress(planted, texts, capsys):
    """Rows too few for the width (seq_len 32, 320 tokens: 10 windows, 256 train rows for 33 parameters an output,
    under the 10 a parameter that `rows_problem` asks for) are a notice, not an error: with progress it is a
    `LinrecWarning` (filterable) naming `tokens`, not `--tokens`; with progress=False nothing is written at all, and the
    words are reset after the call. Planted: today's raw stderr line (`notices` routing left out) writes to stderr
    under progress=False and raises no warning; the notice left out of `_python_words` names --tokens."""
    import warnings

    from linrec.base.errors import LinrecWarning
    from linrec.base.progress import WORDS

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        linrec.measure(planted, tiny_tokenizer(), texts, seq_len=32, tokens=320, progress=False)
    assert capsys.readouterr().err == "" and not caught  # silent
    with pytest.warns(LinrecWarning, match="too few train rows") as said:
        linrec.measure(planted, tiny_tokenizer(), texts, seq_len=32, tokens=320, progress=True)
    text = " ".join(str(w.message) for w in said)
    assert "raise tokens to about" in text and "--tokens" not in text, text
    assert "too few train rows" not in capsys.readouterr().err  # a warning, not a raw line
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=LinrecWarning)  # filterable as any warning: here made an error
        with pytest.raises(LinrecWarning):
            linrec.measure(planted, tiny_tokenizer(), texts, seq_len=32, tokens=320, progress=True)
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
    """`linrec.api.capture(loaded, …).capture` keeps the loaded model's identity, so `SwapStudy(capture, loaded)`
    takes it (it refused it as another model's before)."""
    from linrec.analyses.swap import SwapStudy
    from linrec.api import capture

    loaded = LoadedModel(planted, tiny_tokenizer(), "tiny", "tiny-identity", "offline")
    made = capture(loaded, None, texts, **SMALL).capture  # the pass itself, beside the fitted maps
    assert made.meta["identity"] == "tiny-identity"
    windows = windows_of(texts, tiny_tokenizer(), WindowCut(seq_len=32, tokens=2048, seed=0, test_frac=0.2))
    assert SwapStudy(made, loaded, windows=windows, progress=False).n_blocks == 2


# ---- issue 89: the API a researcher reaches for -----------------------------------------------------------------
@contextlib.contextmanager
def forwards(model):
    """The ids of every forward call of `model` (its input embedding runs once per forward, whatever stops the pass
    after it): a list of [batch, seq] tensors, in order."""
    seen = []
    if model is None:  # a call that fails before it has a model to run
        yield seen
        return

    def keep(module, args, out) -> None:
        seen.append(args[0].clone())

    hook = model.get_input_embeddings().register_forward_hook(keep)
    try:
        yield seen
    finally:
        hook.remove()


def _signature_problems(function) -> list[str]:
    """What a caller's editor would miss in `function`'s signature: every option named, with its default."""
    params = inspect.signature(function).parameters
    problems = [f"**{p.name}" for p in params.values() if p.kind is p.VAR_KEYWORD]
    defaults = dict(seq_len=128, tokens=20_480, seed=0, test_frac=0.2, batch_size=8, product="float64", progress=True,
                    blocks=None, text_column=None)  # fmt: skip
    for name, default in defaults.items():
        if name not in params or params[name].default != default:
            problems.append(name)
    return problems


def test_help_and_the_signature_show_every_option(monkeypatch):
    """Issue 89 item 1: `inspect.signature(linrec.measure)` was `(*args, **kwargs)` and `help` the package's docstring.
    Now each option is a parameter with its default (`help` shows them and the numpydoc Parameters), `swap` adds
    `blocks`, `first`, `test_windows`, and `linrec.capture` exists. Planted: the signature written from `Settings`
    taken away (`__signature__` deleted, leaving `(model, tokenizer, texts, **options)`) is caught."""
    import pydoc

    from linrec import api

    assert linrec.capture is api.capture and linrec.measure is api.measure and linrec.swap is api.swap
    for function in (linrec.measure, linrec.swap, linrec.capture):
        assert _signature_problems(function) == [], function.__name__
    swap_params = list(inspect.signature(linrec.swap).parameters)
    assert swap_params[:4] == ["model", "tokenizer", "texts", "blocks"] and {"first", "test_windows"} <= set(
        swap_params
    )
    assert "first" not in inspect.signature(linrec.measure).parameters
    shown = pydoc.render_doc(linrec.measure, renderer=pydoc.plaintext)
    assert "seq_len: int = 128" in shown and "batch_size: int = 8" in shown
    assert "Parameters" in shown and "tokens : int" in shown
    monkeypatch.delattr(api.measure, "__signature__")
    assert "**options" in _signature_problems(api.measure)


def _bad(call, kind, *needles, model=None):
    """`call()` raises a LinrecError that is also `kind` (ValueError or TypeError), one line in Python's words naming
    `needles`, before any forward of `model`."""
    with forwards(model) as seen, pytest.raises(LinrecError) as caught:
        call()
    message = str(caught.value)
    assert isinstance(caught.value, kind), (type(caught.value), message)
    assert "\n" not in message and "--" not in message, message
    for n in needles:
        assert n in message, message
    assert seen == [], f"{len(seen)} forward calls before the error: {message}"
    return message


BAD_ARGUMENTS = [  # (function, keyword arguments, error type, words the error says); issue 89 items 2–4
    ("measure", dict(tokens=2048.5), ValueError, ["tokens=2048.5 is not a whole number"]),
    ("measure", dict(seq_len=True), TypeError, ["seq_len=True is a bool"]),
    ("measure", dict(tokens="2048"), TypeError, ["tokens='2048' is a str"]),
    ("measure", dict(batch_size=0), ValueError, ["batch_size=0 is out of range"]),
    ("measure", dict(batch_size=-2), ValueError, ["batch_size=-2 is out of range"]),
    ("measure", dict(texts=[None]), TypeError, ["texts[0] is None"]),
    ("measure", dict(texts=["w1 w2", None]), TypeError, ["texts[1] is None"]),
    ("measure", dict(blocks=[]), ValueError, ["blocks=[] names no block"]),
    ("measure", dict(blocks=[7]), ValueError, ["blocks=[7]: this model's last block is 1 (no 7)", "blocks=[0, 1]"]),
    ("measure", dict(seed=-1), ValueError, ["seed=-1"]),
    ("measure", dict(test_frac=1.0), ValueError, ["test_frac=1.0 is out of range"]),
    ("measure", dict(product="float16"), ValueError, ["product='float16'"]),
    ("measure", dict(split="docs"), ValueError, ["split='docs'"]),
    ("measure", dict(bos=True), TypeError, ["bos=True"]),
    ("measure", dict(progress="no"), TypeError, ["progress='no'"]),
    ("measure", dict(name=3), TypeError, ["name=3"]),
    ("measure", dict(device="tpu9"), ValueError, ["unknown device 'tpu9'"]),
    ("measure", dict(device=3), TypeError, ["device=3"]),
    ("measure", dict(seq_len=128), ValueError, ["seq_len=128 is longer", "seq_len=64 or less"]),
    ("swap", dict(blocks=[]), ValueError, ["blocks=[] names no block"]),
    ("swap", dict(blocks=[1.7]), TypeError, ["1.7 (float)"]),
    ("swap", dict(blocks=["1"]), TypeError, ["'1' (str)"]),
    ("swap", dict(blocks="12"), TypeError, ["blocks='12' is a str"]),  # issue 92: iterated into blocks 1 and 2
    ("swap", dict(blocks=[0, 0]), ValueError, ["[0] twice"]),
    ("swap", dict(blocks=[5]), ValueError, ["this model's last block is 1 (no 5)"]),
    ("swap", dict(first="nope"), ValueError, ["first='nope' is not one of"]),
    ("swap", dict(first=["map", "map"]), ValueError, ["twice"]),
    ("swap", dict(test_windows=1), ValueError, ["test_windows=1 is out of range"]),
    ("swap", dict(test_windows=2.5), ValueError, ["test_windows=2.5 is not a whole number"]),
]


@pytest.mark.parametrize("function, given, kind, needles", BAD_ARGUMENTS, ids=lambda v: str(v)[:30])
def test_each_bad_argument_is_refused_by_name_before_any_forward(planted, texts, function, given, kind, needles):
    """Issue 89: a float budget was a bare `slice indices must be integers`, `batch_size=0` a `range() arg 3`,
    `[None]` an AttributeError, `blocks=[1.7]` silently block 1, `blocks=[0, 0]` block 0 twice, `blocks=[]` a whole
    pass for a 0×0 frame, a bad `first=` or `test_windows=` came after the capture's pass. Now each is one line naming
    the argument, a LinrecError that is also a ValueError or TypeError, before the model runs at all (its forward
    calls counted). Planted: the old `swap`, which captured before checking `first`, makes forward calls here."""
    args = {**SMALL, "texts": texts, **given}
    call = getattr(linrec, function)
    _bad(lambda: call(planted, tiny_tokenizer(), args.pop("texts"), **args), kind, *needles, model=planted)


def test_ids_outside_the_vocabulary_a_meta_model_and_a_shared_mlp_are_refused_before_any_forward(texts):
    """Issue 89 item 3: a tokenizer whose ids pass the model's vocabulary gave an IndexError after the cost notice
    (on CUDA a device assert), a model on `meta` a RuntimeError, one MLP object shared by two blocks an error about
    the input's shape (on this tiny GPT-2, at ae281fc: a table, as if the blocks were two). Each is one line before
    the pass now; a model without its head is refused by `swap` before the pass too."""
    import transformers

    small = make_tiny_model("gpt2", seed=2)
    small.resize_token_embeddings(50)  # the tiny tokenizer's words reach id 92
    _bad(lambda: linrec.measure(small, tiny_tokenizer(), texts, **SMALL), ValueError, "token id 9",
         "vocabulary of 50", model=small)  # fmt: skip
    model = make_tiny_model("gpt2", seed=2)
    _bad(lambda: linrec.measure(model, tiny_tokenizer(), [[3, 4, 150] * 400], **SMALL), ValueError, "token id 150",
         model=model)  # fmt: skip
    _bad(lambda: linrec.measure(model, tiny_tokenizer(), torch.tensor([5, -1] * 600), **SMALL), ValueError,
         "token id -1", model=model)  # fmt: skip
    _bad(lambda: linrec.measure(model, tiny_tokenizer(), torch.rand(1200), **SMALL), TypeError, "not of token ids",
         model=model)  # fmt: skip
    head_less = _bad(lambda: linrec.swap(model.transformer, tiny_tokenizer(), texts, **SMALL), ValueError,
                     "causal LM with its head", model=model)  # fmt: skip
    assert "linrec.measure" in head_less  # checked before the pass, though `blocks` is left to its default
    with torch.device("meta"):
        ghost = transformers.GPT2LMHeadModel(make_tiny_model("gpt2").config)
    _bad(lambda: linrec.measure(ghost, tiny_tokenizer(), texts, **SMALL), ValueError, "meta device")
    shared = make_tiny_model("gpt2", seed=2)
    shared.transformer.h[1].mlp = shared.transformer.h[0].mlp
    _bad(lambda: linrec.measure(shared, tiny_tokenizer(), texts, **SMALL), ValueError,
         "blocks 0 and 1 share one FFN module object", "copy.deepcopy", model=shared)  # fmt: skip


def test_integral_float_budgets_are_the_numbers_they_name(planted, texts):
    """Issue 89 item 2: `tokens=2e4`, `4096.0`, `1e12` and `seq_len=64.0` crashed with a bare TypeError. An integral
    float is now the int it names: the same table bit for bit; `1e12` (more than the text holds) is the whole text,
    as `10**12` is."""
    tok = tiny_tokenizer()
    want = linrec.measure(planted, tok, texts, **SMALL)
    floats = linrec.measure(planted, tok, texts, seq_len=32.0, tokens=2.048e3, progress=False)
    pd.testing.assert_frame_equal(floats, want, check_exact=True)
    huge = linrec.measure(planted, tok, texts, seq_len=32, tokens=1e12, progress=False)
    pd.testing.assert_frame_equal(huge, linrec.measure(planted, tok, texts, seq_len=32, tokens=10**12, progress=False),
                                  check_exact=True)  # fmt: skip
    assert (huge["n_train"] + huge["n_test"] > 2048).all()  # the whole text: 2,400 tokens of two documents


def test_no_cache_folder_is_needed_for_text_in_memory(planted, texts, monkeypatch):
    """Issue 89 item 5: an uncreatable LINREC_CACHE (or, with it unset, a HOME where none can be made) refused a plain
    list of texts, advising a `no_cache` that `measure` rejects: the capture's cost line read the cache's timings.
    Now neither is needed, and the numbers are the same."""
    tok = tiny_tokenizer()
    want, want_swap = linrec.measure(planted, tok, texts, **SMALL), linrec.swap(planted, tok, texts, blocks=1, **SMALL)
    monkeypatch.setenv("LINREC_CACHE", "/proc/linrec-cannot-be-made/cache")
    pd.testing.assert_frame_equal(linrec.measure(planted, tok, texts, **SMALL), want, check_exact=True)
    monkeypatch.delenv("LINREC_CACHE")
    monkeypatch.setenv("HOME", "/proc/linrec-no-home")
    got = linrec.swap(planted, tok, texts, blocks=1, **SMALL)
    pd.testing.assert_frame_equal(got.drop(columns="seconds"), want_swap.drop(columns="seconds"), check_exact=True)


def test_documents_joined_without_an_eos_token_are_said(planted, texts):
    """Issue 89 item 6 (silently wrong): a tokenizer without an EOS token joins the documents with nothing between
    them, although the docs say EOS, and R²_lin moves. Now a LinrecWarning says so (one document: nothing to say;
    progress=False: silent)."""
    import warnings

    from linrec.base.errors import LinrecWarning

    bare = tiny_tokenizer()
    bare.eos_token = None
    with pytest.warns(LinrecWarning, match="no EOS token, so the 2 documents of texts are joined with nothing"):
        joined = linrec.measure(planted, bare, texts, **{**SMALL, "progress": True})
    with_eos = linrec.measure(planted, tiny_tokenizer(), texts, **SMALL)
    assert not np.array_equal(joined["r2_lin"], with_eos["r2_lin"])  # what the warning is about
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "the tokenizer has no EOS", LinrecWarning)
        linrec.measure(planted, bare, [" ".join(texts)], **{**SMALL, "progress": True, "tokens": 2048})
        linrec.measure(planted, bare, texts, **SMALL)  # progress=False: nothing said


def test_measure_takes_blocks(planted, texts):
    """Issue 89 item 7: `measure` had no `blocks=`. Its rows are the whole table's rows of those blocks, bit for
    bit."""
    whole = linrec.measure(planted, tiny_tokenizer(), texts, **SMALL)
    one = linrec.measure(planted, tiny_tokenizer(), texts, blocks=1, **SMALL)
    pd.testing.assert_frame_equal(one, whole[whole["block"] == 1].reset_index(drop=True), check_exact=True)


def _ppl(model, ids: torch.Tensor) -> float:
    """Perplexity of `model` on windows `ids` over every next-token prediction (an independent reference)."""
    with torch.no_grad():
        logits = model(ids).logits[:, :-1].double()
    nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    return float(torch.exp(nll))


def test_capture_once_read_the_table_swap_two_blocks_save_and_reload(planted, texts, tmp_path):
    """The notebook a researcher writes (issue 89's 'Done when'): capture once, read the table, swap two blocks from
    the same object with no second pass over the corpus (the model's forward calls counted: the held-out windows
    only, once unswapped, once per swap), take the swapped model, save it as `linrec swap --save` does, reload it
    with `linrec.inputs.surgery.load_swapped` and get the same perplexity. Before, `measure` then `swap` captured
    twice and no swapped model came back. Planted: a swap that captures again forwards the train windows and fails
    here."""
    import json

    from linrec.inputs.surgery import SWAPS_FILE, load_swapped, save_swapped

    tok = tiny_tokenizer()
    with forwards(planted) as pass_calls:
        fit = linrec.capture(planted, tok, texts, **SMALL)
    captured = {tuple(r) for ids in pass_calls for r in ids.tolist()}
    assert captured >= {tuple(r) for r in fit.windows.ids.tolist()}  # the pass: every window
    pd.testing.assert_frame_equal(fit.table(), linrec.measure(planted, tok, texts, **SMALL), check_exact=True)

    with forwards(planted) as swap_calls:
        swaps = fit.swap(blocks=[0, 1])
    seen = [tuple(r) for ids in swap_calls for r in ids.tolist()]
    test_rows = {tuple(r) for r in fit.windows.split("test").tolist()}
    assert set(seen) <= test_rows  # not one train window: no second pass over the corpus
    assert len(seen) == len(test_rows) * (1 + 2 + 1)  # unswapped, each block alone, both together
    again = linrec.swap(planted, tok, texts, blocks=[0, 1], **SMALL)
    pd.testing.assert_frame_equal(swaps.drop(columns="seconds"), again.drop(columns="seconds"), check_exact=True)
    with forwards(planted) as joint_calls:
        joint = fit.joint([0, 1])
    assert joint == swaps.attrs["joint"] == again.attrs["joint"] and joint_calls == []  # kept, not run again

    swapped = fit.swapped_model([0, 1])
    test_ids = fit.windows.split("test")
    assert _ppl(swapped, test_ids) == pytest.approx(joint["ppl"], rel=1e-6)
    assert _ppl(planted, test_ids) == pytest.approx(joint["ppl_base"], rel=1e-6)  # the model itself is left whole
    assert type(planted.transformer.h[1].mlp).__name__ == "GPT2MLP"
    saved = fit.save(tmp_path / "swapped", blocks=[0, 1])
    reloaded = load_swapped(saved)
    assert reloaded.name == str(saved)
    assert _ppl(reloaded.model, test_ids) == pytest.approx(_ppl(swapped, test_ids), rel=1e-9)
    as_it_stands = load_swapped(save_swapped(swapped, tok, {}, tmp_path / "as_it_stands"))  # the copy itself, saved
    assert _ppl(as_it_stands.model, test_ids) == pytest.approx(_ppl(swapped, test_ids), rel=1e-9)
    records = [json.loads((d / SWAPS_FILE).read_text())["swaps"] for d in (saved, tmp_path / "as_it_stands")]
    linear, mlp = 32 * 32 + 32, 2 * 32 * 128 + 128 + 32  # the planted Linear; GPT-2's MLP, d = 32, hidden 4d
    assert [[(r["block"], r["params_ffn"]) for r in rec] for rec in records] == [[(0, linear), (1, mlp)]] * 2


def test_a_blocks_map_is_the_planted_linear_and_an_independent_least_squares_fit(planted, texts):
    """Issue 89 item 7: the maps were reachable only as `linrec.api.capture(...).fit(i).W`, undocumented. `fit[i]`
    holds `W`, `b` and scikit-learn's `coef_` [d_out, d_in], `intercept_`, with R²_lin's interval, κ and rank: block
    0's is the planted Linear's weight and bias; block 1's is numpy's `lstsq` on the FFN's hooked train rows."""
    fit = linrec.capture(planted, tiny_tokenizer(), texts, **SMALL)

    def rows(block, split):
        got = {"x": [], "y": []}

        def keep(module, args, out) -> None:
            got["x"].append(args[0])
            got["y"].append(out)

        hook = planted.transformer.h[block].mlp.register_forward_hook(keep)
        try:
            with torch.no_grad():
                planted(fit.windows.split(split))
        finally:
            hook.remove()
        return [torch.cat(got[k]).reshape(-1, 32).double().numpy() for k in "xy"]

    # LayerNorm's output (with its bias) lies in a hyperplane: the Gram has one direction less than d_in, so a map is
    # unique only on the inputs' span; the maps are compared where they act, on held-out rows
    linear = planted.transformer.h[0].mlp
    x0, y0 = rows(0, "test")
    np.testing.assert_allclose(fit[0].predict(x0), y0, atol=1e-5)
    np.testing.assert_allclose(x0 @ fit[0].coef_.T + fit[0].intercept_, y0, atol=1e-5)  # scikit-learn's layout
    assert fit[0].coef_.shape == tuple(linear.weight.shape) and fit[0].intercept_.shape == tuple(linear.bias.shape)
    x, y = rows(1, "train")
    # numpy's least squares, the float32 rounding across the hyperplane (singular value ~3e-6, against ~4 for the
    # next) cut off as linrec's solver cuts it
    coef, *_ = np.linalg.lstsq(np.hstack([x, np.ones((len(x), 1))]), y, rcond=1e-4)
    x1, _ = rows(1, "test")
    block = fit[1]
    np.testing.assert_allclose(block.predict(x1), x1 @ coef[:-1] + coef[-1], atol=1e-6)
    row = fit.table().set_index("block").loc[1]
    assert (block.r2_lin, block.r2_lin_lo, block.r2_lin_hi) == (row["r2_lin"], row["r2_lin_lo"], row["r2_lin_hi"])
    assert block.kappa == row["cond_gram"] and block.n_train == len(x)
    assert block.rank == np.linalg.matrix_rank(x - x.mean(0), tol=1e-3) == 31  # the hyperplane's direction dropped
    assert sorted(fit.maps) == [0, 1]
    for wrong in (None, [0], 1.0, True):
        _bad(lambda wrong=wrong: fit[wrong], TypeError, "e.g. fit[0]")


def test_token_ids_and_a_dataset_are_measured_as_their_text(planted, texts):
    """Issue 89 item 4: only strings were taken (a `datasets.Dataset` got a hint that would measure dict reprs).
    Token ids (lists of ints, a tensor) and a Dataset's text column give the windows and the numbers the same text
    gives; a Dataset of ids is ids; one with no column to guess, or a DatasetDict, is one line naming the fix."""
    import datasets

    from linrec.inputs.corpora import WindowCut

    tok = tiny_tokenizer()
    cut = WindowCut(seq_len=32, tokens=2048, seed=0, test_frac=0.2)
    ids = [tok(t, add_special_tokens=False).input_ids for t in texts]
    want = windows_of(texts, tok, cut)
    table_of = datasets.Dataset.from_dict
    given_as = [ids, [torch.tensor(i) for i in ids], table_of({"text": texts, "n": [1, 2]}),
                table_of({"input_ids": ids}), table_of({"body": texts})]  # fmt: skip
    for given in given_as:
        got = windows_of(given, tok, cut)
        assert torch.equal(got.ids, want.ids) and (got.test == want.test).all(), type(given)
    assert torch.equal(windows_of(torch.tensor(ids[0]), tok, cut).ids, windows_of(texts[:1], tok, cut).ids)
    numbers = ["block", "r2_lin", "r2_lin_lo", "r2_lin_hi", "n_train", "n_test"]
    from_text = linrec.measure(planted, tok, texts, **SMALL)[numbers]
    pd.testing.assert_frame_equal(linrec.measure(planted, tok, ids, **SMALL)[numbers], from_text, check_exact=True)
    dataset = datasets.Dataset.from_dict({"text": texts})
    table = linrec.measure(planted, tok, dataset, **SMALL)
    pd.testing.assert_frame_equal(table[numbers], from_text, check_exact=True)
    two = datasets.Dataset.from_dict({"a": texts, "b": texts})
    _bad(lambda: linrec.measure(planted, tok, two, **SMALL), ValueError, "columns: a, b", "text_column='a'")
    assert linrec.measure(planted, tok, two, text_column="b", **SMALL)["r2_lin"].equals(from_text["r2_lin"])
    _bad(lambda: linrec.measure(planted, tok, datasets.DatasetDict({"train": dataset}), **SMALL), TypeError,
         "texts=dataset['train']")  # fmt: skip


def test_the_joint_swap_has_a_home_that_concat_keeps(planted, texts):
    """Issue 89 item 7: the joint swap sat only in `df.attrs`, which concat and merge drop. `Fit.joint` returns it
    again at no cost, after any frame operation; `attrs["joint"]` stays for code that reads it."""
    fit = linrec.capture(planted, tiny_tokenizer(), texts, **SMALL)
    table = fit.swap([0, 1])
    table.merge(fit.table()[["block", "cond_gram"]], on="block")  # whatever a merge keeps of attrs, the fit has it:
    assert fit.joint([0, 1]) == table.attrs["joint"] and fit.joint([1, 0])["blocks"] == [0, 1]
    assert set(fit.joint([0, 1])) >= {"ppl", "delta_ppl", "delta_lo", "delta_hi", "params_removed", "params_added"}
    assert "joint" not in fit.swap().attrs  # blocks left to their default: each alone, as `linrec swap` without
    # --blocks


def test_plot_draws_the_profile_with_its_intervals(planted, texts):
    """Issue 89 item 7: no plotting helper. `fit.plot()` draws R²_lin per block with its 95 % interval as error bars:
    the points and the bars' ends are the table's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fit = linrec.capture(planted, tiny_tokenizer(), texts, **SMALL)
    ax = fit.plot()
    table = fit.table()
    line = ax.lines[0]
    np.testing.assert_array_equal(line.get_xdata(), table["block"])
    np.testing.assert_allclose(line.get_ydata(), table["r2_lin"])
    bars = next(c for c in ax.collections if len(c.get_segments()) == len(table))
    ends = np.array([[seg[0][1], seg[1][1]] for seg in bars.get_segments()])
    np.testing.assert_allclose(np.sort(ends, axis=1), table[["r2_lin_lo", "r2_lin_hi"]].to_numpy())
    plt.close(ax.figure)


def test_the_pages_examples_run_as_they_stand(tmp_path, monkeypatch):
    """docs/api.md shows each feature in a `python` block, and every block not marked `# needs:` (a real model, the
    hub) runs here in order, in one namespace, on the page's own tiny model: its asserts are checked, its names are
    today's. Planted: a page that calls `linrec.api.capture(...).fit(1).W` (the old, undocumented way) or drops the
    swapped model's example fails (the first as an AttributeError, the second by the features listed)."""
    import re

    from helpers import ROOT

    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), flags=re.S)
    runnable = [b for b in blocks if not b.startswith("# needs:")]
    assert len(blocks) - len(runnable) == 2 and len(runnable) >= 8
    features = ("linrec.measure(", "linrec.capture(", "blocks=[1]", ".coef_", ".kappa", "fit.swap(", "fit.joint(",
                "fit.swapped_model(", "fit.save(", "load_swapped(", "fit.plot(", "datasets.Dataset", "input_ids",
                "except TypeError", "except ValueError", "LinrecWarning", "progress=False", "2.048e3")  # fmt: skip
    missing = [f for f in features if not any(f in b for b in runnable)]
    assert not missing, f"docs/api.md shows no runnable example of {missing}"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for i, block in enumerate(runnable):
        exec(compile(block, f"docs/api.md python block {i + 1}", "exec"), namespace)  # noqa: S102 - the page's own code
