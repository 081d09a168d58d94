"""linrec.collect.config: the dtype and the split are in a capture's key only when not the default, and a key is
computed only from the config's own model source."""

import pytest

from linrec.base.errors import LinrecError
from linrec.collect.config import CaptureConfig
from linrec.inputs.source import ModelSource


def test_dtype_is_in_the_key_only_when_not_the_default():
    base = CaptureConfig("m")
    assert base.key() == CaptureConfig("m", dtype="float32").key()
    assert CaptureConfig("m", dtype="bfloat16").key() != base.key()
    with pytest.raises(LinrecError, match="--dtype must be one of float32, bfloat16, float16"):
        CaptureConfig("m", dtype="int8").validate()


def test_the_split_is_in_the_key_only_when_not_the_default():
    base = CaptureConfig("m")
    assert base.key() == CaptureConfig("m", split="windows").key()  # test_source pins the default keys' values
    assert CaptureConfig("m", split="documents").key() != base.key()
    with pytest.raises(LinrecError, match="split must be one of windows, documents, got 'files'"):
        CaptureConfig("m", split="files").validate()


def test_a_source_must_be_the_configs_own():
    with pytest.raises(ValueError, match="not that of this config"):
        CaptureConfig("gpt2").key(ModelSource.parse("smollm2-135m"))
