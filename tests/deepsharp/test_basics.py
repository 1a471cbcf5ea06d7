"""Shape, RandomStream, Module registration and state dicts."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Module, Parameter, RandomStream, Sequential, Shape, Tensor
from deepsharp import functional as F
from deepsharp.errors import ShapeError, SpecError, StateError


def test_shape_prints_compares_and_refuses_negatives():
    assert str(Shape(28, 28, 1)) == "28x28x1" and repr(Shape(14)) == "Shape(14)"
    assert Shape(3, 4) == Shape((3, 4)) == (3, 4) and Shape.parse("3x4") == Shape(3, 4)
    assert Shape(2, 3, 4).size == 24 and Shape(2, 3).rank == 2 and Shape(5, 6)[1:] == Shape(6)
    with pytest.raises(ShapeError, match="axis 1 must not be negative, received -2"):
        Shape(3, -2)
    with pytest.raises(AttributeError):
        Shape(3).x = 1


def test_random_stream_draws_by_purpose():
    a, b = RandomStream(5), RandomStream(5)
    first = a.generator("initialise:0").random(3)
    b.generator("shuffle:0").random(100)  # other purposes drawn in between change nothing
    np.testing.assert_array_equal(first, b.generator("initialise:0").random(3))
    assert not np.array_equal(first, a.generator("initialise:1").random(3))
    assert not np.array_equal(first, RandomStream(6).generator("initialise:0").random(3))
    with pytest.raises(SpecError, match="seed must be a non-negative integer, received -1"):
        RandomStream(-1)


def test_sequential_is_immutable_and_round_trips_json():
    base = Sequential().dense(4)
    longer = base.relu()
    assert len(base) == 1 and len(longer) == 2
    spec = Sequential().dense(3, bias=False).gelu(approximate="tanh").dropout(0.25).softmax()
    assert Sequential.from_json(spec.to_json()) == spec
    assert repr(spec) == "Sequential().dense(3, bias=False).gelu(approximate='tanh').dropout(0.25).softmax()"
    with pytest.raises(Exception):
        spec.layers = ()


def test_unknown_kind_in_json_is_named():
    with pytest.raises(SpecError, match="unknown layer kind 'teleport'"):
        Sequential.from_json('{"layers": [{"kind": "teleport"}]}')


class TinyModule(Module):
    def __init__(self, random):
        super().__init__()
        self.hidden = Sequential().dense(5).relu().lower(Shape(3), random)
        self.scale = Parameter(np.ones(5, np.float32))
        self.register_buffer("offset", np.zeros(1, np.float32))
        self.out = Sequential().dense(2).lower(Shape(5), random)

    def forward(self, x):
        return self.out(F.tanh(self.hidden(x) * self.scale) + self.offset)


def test_module_names_parameters_and_buffers_by_path():
    module = TinyModule(RandomStream(0))
    assert list(module.state_dict()) == ["scale", "hidden.0.weight", "hidden.0.bias",
                                         "out.0.weight", "out.0.bias", "offset"]
    assert module.parameter_count() == 5 + 15 + 5 + 10 + 2


def test_load_state_dict_is_strict_and_reports_every_fault_at_once():
    module = TinyModule(RandomStream(0))
    state = module.state_dict()
    before = state["scale"].copy()
    state.pop("offset")
    state["extra"] = np.zeros(1)
    state["scale"] = np.zeros(4)
    with pytest.raises(StateError) as caught:
        module.load_state_dict(state)
    message = str(caught.value)
    assert "missing slots: offset" in message and "unexpected slots: extra" in message
    assert "slot scale: expected shape (5,), received (4,)" in message
    np.testing.assert_array_equal(module.state_dict()["scale"], before)  # nothing written


def test_module_calls_on_numpy_are_evaluation_passes():
    module = TinyModule(RandomStream(0))
    out = module(np.ones((2, 3), np.float32))
    assert isinstance(out, np.ndarray) and out.shape == (2, 2) and module.training
    assert isinstance(module(Tensor(np.ones((2, 3)))), Tensor)


def test_network_refuses_a_batch_of_the_wrong_shape():
    network = Sequential().dense(2).lower(Shape(4), RandomStream(0))
    with pytest.raises(ShapeError, match=r"expected a batch of examples of shape 4 .* received an array of shape \(3, 5\)"):
        network(np.ones((3, 5), np.float32))


def test_summary_lists_steps_shapes_and_counts():
    text = Sequential().dense(8).relu().dense(2).lower(Shape(4), RandomStream(0)).summary()
    assert "dense(8)" in text and "40" in text and "parameters: 58 (58 trainable)" in text
