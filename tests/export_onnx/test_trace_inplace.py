"""In-place writes, slices over symbolic axes and arange from a traced size, traced and held to
the eager run in ONNX Runtime (and the reference evaluator) at two sizes of every symbol."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import arange, functional as F
from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import Tensor
from deepsharp.tracing import Tracer
from tests.support.trace_check import check_trace, named_inputs

SERIES = {"x": ("batch", "steps", 4)}
SIZES = {"batch": (3, 5), "steps": (7, 11)}
_rng = np.random.default_rng(5)
WEIGHT = Tensor(_rng.standard_normal(4).astype(np.float32))
TABLE = Tensor(_rng.standard_normal((16, 4)).astype(np.float32))


def _written(write):
    """A fresh tensor made from x (writes never touch the caller's input), written by `write`."""
    def fn(x):
        y = x * 2.0
        write(y, x)
        return y
    return fn


# -- in-place writes ------------------------------------------------------------------------------

WRITES = {
    "first step": lambda y, x: y.__setitem__((slice(None), 0), 0.0),
    "last step from the first": lambda y, x: y.__setitem__((slice(None), -1), x[:, 0]),
    "fixed last axis": lambda y, x: y.__setitem__((Ellipsis, slice(1, 3)), -1.0),
    "shift by one": lambda y, x: y.__setitem__((slice(None), slice(1, None)), x[:, :-1]),
    "every other step reversed": lambda y, x: y.__setitem__((slice(None), slice(None, None, -2)),
                                                            WEIGHT),
    "fill_": lambda y, x: y.fill_(0.5),
    "zero_": lambda y, x: y[:, 2:].zero_(),
    "copy_": lambda y, x: y.copy_(x.mean(axis=1, keepdims=True)),
    "arithmetic": lambda y, x: (y.add_(1.0), y.mul_(WEIGHT), y.div_(x * x + 1.0),
                                y.sub_(x, alpha=0.5)),
    "augmented": lambda y, x: y.__iadd__(x[:, ::-1]),
    "through views": lambda y, x: (y.transpose(1, 2)[:, 0].fill_(3.0),
                                   y[:, 1][:, 1:].fill_(-3.0)),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_a_recorded_write_traces(name):
    checked = check_trace(_written(WRITES[name]), SERIES, SIZES)
    assert checked.count("Where") + checked.count("Add") >= 1


def test_a_write_over_fixed_axes_is_constants_and_a_where_at_set_9():
    checked = check_trace(_written(WRITES["fixed last axis"]), SERIES, SIZES)
    assert checked.ops() == ["Mul", "Where"] and checked.opset == 9


def test_a_write_into_a_constant_buffer_makes_it_traced():
    def fn(x):
        buffer = Tensor(np.zeros((2, 4), np.float32))
        buffer[1] = x.sum(axis=(0, 1))           # a constant buffer takes a traced value
        return x + buffer.sum(axis=0)

    checked = check_trace(fn, SERIES, SIZES)
    assert checked.count("Where") == 1


def test_a_constant_used_then_written_keeps_its_earlier_values_for_earlier_uses():
    def fn(x):
        buffer = Tensor(np.ones(4, np.float32))
        before = x * buffer                       # captured with its values now (ones)
        buffer[1:3] = x.mean(axis=(0, 1))[1:3]    # recorded: buffer is traced from here
        return before + x * buffer

    checked = check_trace(fn, SERIES, SIZES)
    assert checked.count("Where") == 1


def test_a_boolean_mask_write_traces_as_where():
    def fn(x, mask):
        y = x * 1.0
        y[mask] = WEIGHT                          # one value per trailing position
        return y

    check_trace(fn, {**SERIES, "mask": ("batch", "steps")}, SIZES, make=named_inputs)


def test_writes_into_int64_ids_trace():
    def fn(ids):
        y = ids * 2
        y[:, 0] = 7
        y[:, 1:] += ids[:, :-1]                  # a view written, then written back
        return y

    check_trace(fn, {"ids": ("batch", "steps")}, SIZES, make=named_inputs)


def test_a_bool_tensor_write_traces_without_a_bool_where():
    def fn(x, mask):
        kept = mask.clone()
        kept[:, 0] = True
        kept[:, -2:] = False
        return x * kept.astype(np.float32).reshape(*kept.shape, 1)

    checked = check_trace(fn, {**SERIES, "mask": ("batch", "steps")}, SIZES, make=named_inputs)
    assert checked.count("Where") == 0 and checked.count("Or") == 2


def test_a_write_from_a_value_of_another_length_is_refused():
    with Tracer() as tracer:
        x = tracer.input("x", np.ones((3, 7, 4), np.float32), {0: "batch", 1: "steps"})
        y = x * 1.0
        with pytest.raises(TraceException, match="SYMBOLIC_SHAPE: setitem .* the region written "
                                                 "of the symbolic axis steps has a length no "
                                                 "operation made yet"):
            y[:, 2:] = Tensor(np.ones((1, 5, 4), np.float32)) * y[:, :1]


# -- slices over a symbolic axis --------------------------------------------------------------------

SLICES = {
    "difference": (lambda x: x[:, 1:] - x[:, :-1], "steps-1"),
    "last three": (lambda x: x[:, -3:] * 2.0, 3),
    "first three": (lambda x: x[:, :3] * 2.0, 3),
    "every other": (lambda x: x[:, ::2] * 2.0, "ceil(steps/2)"),
    "odd steps": (lambda x: x[:, 1::2] * 2.0, "ceil((steps-1)/2)"),
    "reversed odd": (lambda x: x[:, -2::-2] * 2.0, "ceil((steps-1)/2)"),
    "last step": (lambda x: x[:, -1] * 2.0, None),
    "all but the ends": (lambda x: x[:, 2:-2] * 2.0, "steps-4"),
    "whole, by its size": (lambda x: x[:, :x.shape[1]] * 2.0, "steps"),
}


@pytest.mark.parametrize("name", list(SLICES))
def test_a_slice_of_a_symbolic_axis_follows_it(name):
    fn, steps = SLICES[name]
    checked = check_trace(fn, SERIES, SIZES)
    output = checked.model.graph.output[0].type.tensor_type.shape.dim
    if steps is not None:
        assert (output[1].dim_param or output[1].dim_value) == steps
    assert "Shape" not in checked.ops()  # Slice counts a negative bound from the end itself


def test_narrow_from_the_end_counts_from_the_end_at_any_size():
    check_trace(lambda x: x.narrow(1, -3, 2) * 2.0, SERIES, SIZES)


@pytest.mark.parametrize("pieces", [lambda x: x.chunk(2, dim=1), lambda x: x.split(3, dim=1)])
def test_pieces_of_a_symbolic_axis_are_refused(pieces):
    with Tracer() as tracer:
        x = tracer.input("x", np.ones((3, 7, 4), np.float32), {0: "batch", 1: "steps"})
        with pytest.raises(TraceException, match="SYMBOLIC_SHAPE: slice .* axis 1, whose size is "
                                                 "the symbol steps, is split into pieces "
                                                 "computed from its traced size 7"):
            pieces(x)


def test_a_derived_length_feeds_a_reshape():
    def fn(x):
        batch, steps, width = x.shape
        moves = (x[:, 1:] - x[:, :-1]).reshape(batch * (steps - 1), width) * 2.0
        return moves.reshape(batch, steps - 1, width)

    checked = check_trace(fn, SERIES, SIZES)
    flat = checked.model.graph.value_info
    assert "batch*(steps-1)" in {d.dim_param for v in flat for d in v.type.tensor_type.shape.dim}
    assert checked.count("Shape") == 2  # the sizes read from the input and the slice's result


# -- arange from a traced size ------------------------------------------------------------------------

ARANGES = {
    "positions": lambda x: x + arange(x.shape[1], dtype=np.float32).reshape(1, x.shape[1], 1),
    "position embedding": lambda x: x + F.embedding(arange(x.shape[1]), TABLE),
    "from one": lambda x: x[:, 1:] * arange(1, x.shape[1]).astype(np.float32).reshape(
        1, x.shape[1] - 1, 1),
    "every other": lambda x: x[:, ::2] * arange(0, x.shape[1], 2).astype(np.float32).reshape(
        1, -1, 1),
    "of the batch times the steps": lambda x: x.reshape(x.shape[0] * x.shape[1], 4) + arange(
        x.shape[0] * x.shape[1], dtype=np.float32).reshape(-1, 1),
}


@pytest.mark.parametrize("name", list(ARANGES))
def test_arange_of_a_traced_size_is_a_range_fed_by_shape(name):
    checked = check_trace(ARANGES[name], SERIES, SIZES)
    assert checked.count("Range") == 1 and checked.count("Shape") >= 1
    assert checked.opset >= 11


def test_arange_of_a_fixed_size_is_a_constant():
    checked = check_trace(lambda x: x + arange(4, dtype=np.float32), SERIES, SIZES)
    assert checked.count("Range") == 0


def test_arange_eager_matches_numpy():
    assert arange(5).tolist() == list(range(5)) and arange(5).dtype == np.int64
    np.testing.assert_array_equal(arange(1.0, 2.0, 0.25).numpy(), np.arange(1.0, 2.0, 0.25))
    assert arange(1.0, 2.0, 0.25).dtype == np.float32
    with pytest.raises(Exception, match="arange: step must not be zero"):
        arange(0, 5, 0)


def test_a_derived_size_too_small_at_the_trace_is_refused():
    with Tracer() as tracer:
        x = tracer.input("x", np.ones((3, 7, 4), np.float32), {0: "batch", 1: "steps"})
        with pytest.raises(TraceException) as refused:
            x[:, 6:]
    assert refused.value.kind is TraceErrorKind.SYMBOLIC_SHAPE
    assert "steps-6, is only 1 in the traced run" in str(refused.value)
