"""Arguments of the wrong type at the verbs, optimizers and schedules: a SpecError naming the
argument and the value, never a silent conversion (True is not 1, "3" is not 3, 3.0 is not 3);
numpy scalars are accepted where Python ones are."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import (
    SGD, Adam, AdamW, Cosine, ExponentialDecay, LinearWarmup, RMSprop, Sequential, Shape,
    StepDecay,
)
from deepsharp.errors import ShapeError, SpecError


@pytest.mark.parametrize("call, message", [
    (lambda s: s.dense(True), "dense: units must be an integer, received True (bool)"),
    (lambda s: s.dense("3"), "dense: units must be an integer, received '3' (str)"),
    (lambda s: s.dense(3.0), "dense: units must be an integer, received 3.0 (float)"),
    (lambda s: s.dense(3, bias=1), "dense: bias must be True or False, received 1 (int)"),
    (lambda s: s.dense(3, bias="no"), "dense: bias must be True or False, received 'no' (str)"),
    (lambda s: s.dropout(True), "dropout: rate must be a number, received True (bool)"),
    (lambda s: s.dropout("0.5"), "dropout: rate must be a number, received '0.5' (str)"),
    (lambda s: s.conv2d(4, kernel=(3, True)), "conv2d: kernel must be an integer, received True"),
    (lambda s: s.lstm(np.bool_(True)), "lstm: units must be an integer, received True (bool)"),
    (lambda s: s.gelu(approximate=1), "gelu: approximate must be a string, received 1 (int)"),
    (lambda s: s.masking(float("nan")), "masking: value must not be NaN"),
    (lambda s: s.dense(), "dense: missing a required argument: 'units'"),
    (lambda s: s.dense(3, colour="red"), "dense: got an unexpected keyword argument 'colour'"),
])
def test_a_verb_refuses_a_value_of_the_wrong_type(call, message):
    with pytest.raises(SpecError) as caught:
        call(Sequential())
    assert message in str(caught.value)


def test_numpy_scalars_are_taken_as_the_python_scalars_they_hold():
    stack = (Sequential().dense(np.int64(3), bias=np.bool_(False)).dropout(np.float32(0.25))
             .conv1d(np.int32(2), kernel=np.int64(1)))
    assert stack[0].units == 3 and type(stack[0].units) is int and stack[0].bias is False
    assert stack[1].rate == 0.25
    assert Sequential.from_json(stack.to_json()) == stack


def test_masking_infinity_is_a_number_it_can_compare():
    assert Sequential().masking(float("inf"))[0].value == float("inf")


def test_embedding_after_dense_is_refused_at_lower():
    with pytest.raises(ShapeError, match=r"embedding\(10, 3\) at place 1 reads int64 ids, so it "
                                         r"must come first; here it follows dense\(4\)"):
        Sequential().dense(4).embedding(10, 3).lower(Shape(5))


@pytest.mark.parametrize("make, message", [
    (lambda: Adam(lr="0.1"), "Adam: lr must be a number, received '0.1' (str)"),
    (lambda: Adam(lr=True), "Adam: lr must be a number, received True (bool)"),
    (lambda: Adam(lr=float("nan")), "Adam: lr must be finite"),
    (lambda: Adam(betas=0.9), "Adam: betas must be a pair of numbers, received 0.9"),
    (lambda: AdamW(betas=(0.9, "0.99")), "AdamW: betas[1] must be a number, received '0.99'"),
    (lambda: Adam(schedule=3), "Adam: schedule must be a Schedule or None, received 3 (int)"),
    (lambda: Adam(clip_norm="1"), "Adam: clip_norm must be a number, received '1' (str)"),
    (lambda: SGD(momentum=None), "SGD: momentum must be a number, received None (NoneType)"),
    (lambda: SGD(0.1, 0.9, nesterov=1), "SGD: nesterov must be True or False, received 1 (int)"),
    (lambda: RMSprop(centered="yes"), "RMSprop: centered must be True or False, received 'yes'"),
    (lambda: StepDecay("3"), "StepDecay: every must be an integer, received '3' (str)"),
    (lambda: StepDecay(True), "StepDecay: every must be an integer, received True (bool)"),
    (lambda: StepDecay(2, gamma="x"), "StepDecay: gamma must be a number, received 'x'"),
    (lambda: Cosine(2.5), "Cosine: period must be an integer, received 2.5 (float)"),
    (lambda: ExponentialDecay(None), "ExponentialDecay: gamma must be a number, received None"),
    (lambda: LinearWarmup(2, then=5), "LinearWarmup: then must be a Schedule or None, received 5"),
    (lambda: StepDecay(3, unit=["epoch"]), "StepDecay: unit must be 'epoch' or 'step'"),
])
def test_optimizers_and_schedules_refuse_wrong_types(make, message):
    with pytest.raises(SpecError) as caught:
        make()
    assert message in str(caught.value)


def test_optimizers_and_schedules_take_numpy_scalars():
    assert Adam(lr=np.float32(0.5), betas=(np.float64(0.8), 0.9)).config()["betas"] == [0.8, 0.9]
    schedule = StepDecay(np.int64(2), gamma=np.float32(0.5))
    assert type(schedule.every) is int and schedule.rate(1.0, 4) == 0.25
    assert SGD(0.1, momentum=0.9, nesterov=np.bool_(True)).nesterov is True
