"""linrec.collect.config: the dtype and the split are in a capture's key only when not the default, a key is computed
only from the config's own model source, each setting is checked by the rule declared with it, and the choices
declared here (light, for the command line) are those of the modules that act on them."""

import pytest

from linrec.base.errors import LinrecError
from linrec.collect.config import CaptureConfig
from linrec.inputs.source import ModelSource


def test_dtype_is_in_the_key_only_when_not_the_default():
    base = CaptureConfig("m")
    assert base.key() == CaptureConfig("m", dtype="float32").key()
    assert CaptureConfig("m", dtype="bfloat16").key() != base.key()
    with pytest.raises(LinrecError, match="dtype='int8' is not one of 'float32', 'bfloat16', 'float16'"):
        CaptureConfig("m", dtype="int8").validate()


def test_the_split_is_in_the_key_only_when_not_the_default():
    base = CaptureConfig("m")
    assert base.key() == CaptureConfig("m", split="windows").key()  # test_source pins the default keys' values
    assert CaptureConfig("m", split="documents").key() != base.key()
    with pytest.raises(LinrecError, match="split='files' is not one of 'windows', 'documents'; e.g. split='windows'"):
        CaptureConfig("m", split="files").validate()


def test_a_source_must_be_the_configs_own():
    with pytest.raises(ValueError, match="not that of this config"):
        CaptureConfig("gpt2").key(ModelSource.parse("smollm2-135m"))


def test_each_setting_is_checked_by_its_declared_rule_and_the_window_against_the_budget():
    """`validate` reads the rules declared with the fields (`linrec.base.params.checks`): the same `linrec.api` and
    the command line read. Planted: a rule dropped from one field lets its bad value through."""
    from dataclasses import fields

    for name, bad, needle in [("tokens", 0, "tokens=0 is out of range"), ("seq_len", 1, "seq_len=1 is out of range"),
                              ("seed", -1, "seed=-1"), ("sample", -2, "sample=-2"), ("sample_rows", -1, "sample_rows"),
                              ("test_frac", 1.5, "test_frac=1.5"), ("product", "int4", "product='int4'"),
                              ("bos", "maybe", "bos='maybe'")]:  # fmt: skip
        with pytest.raises(LinrecError, match=needle):
            CaptureConfig("m", **{name: bad}).validate()
    with pytest.raises(LinrecError, match="--seq-len 256 is longer than the token budget --tokens 128"):
        CaptureConfig("m", seq_len=256, tokens=128).validate()
    declared = {f.name for f in fields(CaptureConfig) if f.metadata.get("check") is not None}
    assert declared == {f.name for f in fields(CaptureConfig)} - {"model", "corpus"}  # checked by name elsewhere


def test_the_choices_declared_here_are_those_of_the_modules_that_act_on_them():
    from linrec.collect import config
    from linrec.inputs.corpora import BOS_MODES, SPLITS
    from linrec.inputs.hf import DTYPES
    from linrec.inputs.models import DEVICE_MAPS
    from linrec.stats.moments import PRODUCTS

    assert config.PRODUCT_NAMES == tuple(PRODUCTS) and config.DTYPE_NAMES == tuple(DTYPES)
    assert config.BOS_NAMES == BOS_MODES and config.SPLIT_NAMES == SPLITS and config.DEVICE_MAP_NAMES == DEVICE_MAPS
