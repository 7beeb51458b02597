"""The local-model options: one set of fields and checks, shared by every model-loading class."""

from __future__ import annotations

import dataclasses

import pytest

from presentation_dependence.errors import ConfigError
from presentation_dependence.judge import JUDGES
from presentation_dependence.qa.reader import ReaderConfig
from presentation_dependence.readout.options import (
    BatchedModelOptions,
    ModelOptions,
    check_device,
    check_dtype,
)
from presentation_dependence.rerankers import RERANKERS


def _model_option_classes() -> list[type]:
    """Every registered option class that loads a local model on a device, and the reader's."""
    found: list[type] = [ReaderConfig]
    for registry in (RERANKERS, JUDGES):
        for name in registry.names():
            cls = registry.get(name).config_cls
            if {"model_name", "device"} <= {f.name for f in dataclasses.fields(cls)}:
                found.append(cls)
    return found


CLASSES = _model_option_classes()


def test_every_local_model_option_class_shares_the_base() -> None:
    names = {c.__name__ for c in CLASSES}
    assert {"GradeRerankerOptions", "TransformersJudgeOptions", "ReaderConfig"} <= names
    for cls in CLASSES:
        assert issubclass(cls, ModelOptions), cls.__name__


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"device": "tpu"}, r"device must be one of auto, cpu, cuda or cuda:N, got 'tpu'"),
        ({"dtype": "fp16"}, r"dtype must be one of auto, float32, bfloat16, float16, got 'fp16'"),
        ({"model_name": ""}, "model_name must be a non-empty string"),
        ({"trust_remote_code": "yes"}, "trust_remote_code must be true or false"),
    ],
)
def test_the_shared_checks_run_in_every_class(cls: type, kw: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        cls(**kw)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_valid_devices_and_dtypes_pass(cls: type) -> None:
    opts = cls(device="cuda:1", dtype="bfloat16")
    assert (opts.device, opts.dtype) == ("cuda:1", "bfloat16")


def test_batched_checks_and_subclass_defaults() -> None:
    with pytest.raises(ConfigError, match="batch_size"):
        BatchedModelOptions(batch_size=0)
    with pytest.raises(ConfigError, match="num_threads"):
        BatchedModelOptions(num_threads=0)
    # a re-declared field keeps its own default: the readout judge and the reader read in float32
    assert ReaderConfig().dtype == "float32"
    assert JUDGES.get("readout").config_cls().dtype == "float32"
    assert ModelOptions().dtype == "auto"


def test_check_functions_name_the_allowed_values() -> None:
    check_device("cpu")
    check_dtype("auto")
    with pytest.raises(ConfigError, match="cuda:N"):
        check_device("mps")
    with pytest.raises(ConfigError, match="float16"):
        check_dtype(None)
