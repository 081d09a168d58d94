"""linrec.app.requests: each subcommand's request built once from its parsed arguments, its defaults the dataclasses'
(nothing written again in the parser), and the checks that need no model."""

import pytest

from linrec.app.cli import build_parser
from linrec.app.requests import Capturing, Probing, Swapping, Training
from linrec.base.errors import LinrecError
from linrec.collect.config import CaptureConfig, CaptureRun
from linrec.inputs.train_settings import TrainSettings


def _args(*argv):
    return build_parser().parse_args(list(argv))


def test_a_capture_request_takes_the_dataclasses_defaults_and_rows_only_where_read():
    measure = Capturing.of(_args("measure", "--model", "m"))
    assert measure.config == CaptureConfig("m", sample_rows=0) and measure.run == CaptureRun()
    assert measure.cache and measure.out is None and measure.reads_rows is None
    probe = Probing.of(_args("probe", "--model", "m")).capture
    assert probe.config.sample_rows == CaptureConfig.sample_rows  # the probe reads rows: the default count
    kept = Capturing.of(_args("measure", "--model", "m", "--sample-rows", "100"))
    assert kept.config.sample_rows == 100
    dropped = Capturing.of(_args("measure", "--model", "m", "--sample-rows", "100", "--no-cache"))
    assert dropped.config.sample_rows == 0 and not dropped.cache  # nothing outlives the command: no rows written
    read = Probing.of(_args("probe", "--model", "m", "--sample-rows", "100", "--no-cache")).capture
    assert read.config.sample_rows == 100
    fast = Capturing.of(_args("spectrum", "--model", "m", "--fast", "--batch-size", "3", "--blocks-per-pass", "2"))
    assert fast.config.product == "float32" and fast.run == CaptureRun(3, "cpu", None, 2)


def test_swap_rows_only_for_the_gate_and_its_options_excluding_each_other():
    plain = Swapping.of(_args("swap", "--model", "m", "--blocks", "0,2"))
    assert plain.blocks == [0, 2] and plain.capture.config.sample_rows == 0 and plain.capture.reads_rows is None
    routed = Swapping.of(_args("swap", "--model", "m", "--route", "0.5"))
    assert routed.capture.config.sample_rows == CaptureConfig.sample_rows and routed.capture.reads_rows is not None
    for argv, needle in [
        (["--device-map", "auto"], "--device-map is for the capturing commands"),
        (["--save", "out", "--route", "0.5"], "--save with --route"),
        (["--save", "out"], "--save needs the blocks"),
        (["--route", "0.5", "--first", "ffn"], "--route routes tokens"),
        (["--save", "out", "--blocks", "0", "--first", "mean"], "--first mean swaps are for evaluation only"),
    ]:
        with pytest.raises(LinrecError, match=needle):
            Swapping.of(_args("swap", "--model", "m", *argv)).check()
    Swapping.of(_args("swap", "--model", "m", "--save", "out", "--budget-ppl", "1")).check()  # a choice to save


def test_the_screening_windows_are_counted_as_the_capture_splits_them():
    request = Swapping.of(_args("swap", "--model", "m", "--screening-windows", "51", "--tokens", "8192"))
    with pytest.raises(LinrecError, match="make 51 train windows.*use --screening-windows 50 or fewer"):
        request.check_windows(request.capture.config)  # 64 windows of 128 tokens: 13 held out, 51 train
    request.check_windows(CaptureConfig("m", tokens=128 * 100))  # 80 train windows


def test_train_takes_every_default_from_its_settings():
    assert Training.of(_args("train")).settings == TrainSettings() and Training.of(_args("train")).cache
    given = Training.of(_args("train", "--layers", "2", "--heads", "2", "--evals", "5", "--lr", "1e-3", "--no-cache"))
    assert given.settings == TrainSettings(n_layers=2, n_heads=2, n_evals=5, lr=1e-3) and not given.cache


def test_a_token_budget_no_block_can_be_fitted_on_is_refused_before_the_model_loads(tiny_model_dir, tmp_path,
                                                                                    monkeypatch):  # fmt: skip
    """From the model's config alone (the tiny llama is 32 wide): 4 windows of 8 tokens make 24 train rows, too few
    for the 33 parameters per output, refused in the capture's own words without loading the model; 5 windows of 8
    make 32, still too few; 6 windows of 8 make 40, enough to go on to the load."""
    from linrec.inputs import models

    def refuse(*a, **k):
        raise AssertionError("loaded the model")

    monkeypatch.setattr(models, "load_model", refuse)
    (text := tmp_path / "text.txt").write_text("word " * 500)  # a local corpus: nothing fetched

    def request(tokens: int) -> Capturing:
        return Capturing.of(_args("measure", "--model", tiny_model_dir, "--corpus", str(text), "--seq-len", "8",
                                  "--tokens", str(tokens)))  # fmt: skip

    for tokens, rows in ((32, 24), (40, 32)):
        with pytest.raises(LinrecError, match=f"{rows} train rows for a 32-wide block: no affine map can be fitted"):
            request(tokens).with_model()
    request(48).with_model()


def test_blocks_against_the_models_count_are_the_constraints_rule_in_the_command_lines_words():
    """`block_list` (`linrec swap --blocks`, before the load where the config gives the count) says `Blocks(below=n)`'s
    message, the one `linrec.swap` says, in flags."""
    from linrec.app.requests import block_list
    from linrec.base.constraints import Blocks, flag_words

    assert block_list([0, 3], 4) == [0, 3] and block_list(None, 4) is None
    with pytest.raises(LinrecError) as python:
        Blocks(below=4).check("blocks", [0, 4, 9])
    with pytest.raises(LinrecError) as cli:
        block_list([0, 4, 9], 4)
    assert str(cli.value) == flag_words(str(python.value), "blocks", "--blocks")
    assert str(cli.value) == "--blocks 0,4,9: this model's last block is 3 (no 4, 9); e.g. --blocks 0,3"
