"""Every way a trace is refused: the kind, and a message naming the read, write or operation."""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import Module, Parameter, functional as F
from deepsharp.errors import TraceErrorKind as Kind, TraceException
from deepsharp.losses import CrossEntropy, MeanSquaredError
from deepsharp.optimizers import SGD
from deepsharp.tensors import PRIMITIVES, Tensor, apply, modes, no_grad, primitive
from deepsharp.tracing import Tracer

_rng = np.random.default_rng(3)


def example(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def refused(kind: Kind, *fragments: str):
    """pytest.raises for a TraceException of `kind` whose message holds every fragment; the
    trace has ended (no hook left on the thread)."""

    class Check:
        def __enter__(self):
            self.raises = pytest.raises(TraceException)
            self.info = self.raises.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.raises.__exit__(*exc)
            error = self.info.value
            assert error.kind is kind, f"{error.kind} != {kind}: {error}"
            for fragment in fragments:
                assert fragment in str(error), f"{fragment!r} not in {error}"
            assert modes.trace_hook() is None
            return handled

    return Check()


# -- DATA_DEPENDENT ------------------------------------------------------------------------------

@pytest.mark.parametrize("read, name", [
    (lambda y: y.numpy(), "numpy()"),
    (lambda y: y.sum().item(), "item()"),
    (lambda y: y.tolist(), "tolist()"),
    (lambda y: np.asarray(y), "__array__"),
    (lambda y: bool(y.sum()), "__bool__"),
    (lambda y: float(y.sum()), "__float__"),
    (lambda y: int(y.sum()), "__int__"),
    (lambda y: [1, 2, 3][y.sum().astype(np.int64)], "__index__"),
    (lambda y: y.data, "data"),
    (lambda y: Tensor(y), "Tensor()"),
    (lambda y: Tensor(np.zeros((3, 4), np.float32)).__setitem__(y.astype(np.int64), 1.0),
     "an index"),
])
def test_reading_a_traced_tensor_is_data_dependent(read, name):
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4))
        y = x * 2.0
        with refused(Kind.DATA_DEPENDENT, name, "a traced tensor", "made by"):
            read(y)


def test_reading_an_input_names_it():
    with Tracer() as tracer:
        x = tracer.input("pixels", example(3, 4), {0: "batch"})
        with refused(Kind.DATA_DEPENDENT, "numpy()", "the input 'pixels' (batch, 4)"):
            x.numpy()


def test_reading_after_finish_is_allowed():
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4))
        y = x * 2.0
        tracer.finish({"y": y})
    np.testing.assert_array_equal(y.numpy(), x.numpy() * 2)
    assert float(y.sum()) == pytest.approx(float(x.numpy().sum() * 2), rel=1e-5)


def test_reading_a_constant_while_tracing_is_allowed():
    w = Tensor(example(4, 2))
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4))
        scale = float(w.numpy().max())  # not traced: a plain number, frozen into the graph
        traced = tracer.finish({"y": (x @ w) * scale})
    assert traced.output_names == ["y"]


# -- IN_PLACE_MUTATION -----------------------------------------------------------------------------

# (writes into traced tensors are recorded: tests/export_onnx/test_trace_inplace.py)
@pytest.mark.parametrize("write, fragments", [
    (lambda y: y.detach().fill_(0.0), ["fill_()", "a view (detach)", "made by relu"]),
    (lambda y: y.expand(2, 3, 4).fill_(0.0), ["fill_()", "a view (expand)"]),
    (lambda y: y.__setitem__((Tensor(np.array([True, False, True])), slice(1, None)), 1.0),
     ["x[...] = value", "boolean masks mixed with other indices"]),
])
def test_writes_a_graph_cannot_hold_are_refused(write, fragments):
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4))
        y = x.relu()
        with refused(Kind.IN_PLACE_MUTATION, *fragments, "the tensor written is traced"):
            write(y)
    assert np.all(y.numpy() == np.maximum(x.numpy(), 0))  # nothing was written


def test_a_constant_written_after_capture_is_reported_at_finish():
    w = Tensor(example(4, 2))
    tracer = Tracer.begin()
    tracer.parameter("layer.weight", w)
    x = tracer.input("x", example(3, 4))
    y = x @ w
    w.fill_(0.0)  # allowed now, but the graph already holds the earlier values
    with refused(Kind.IN_PLACE_MUTATION, "constant 'layer.weight' (4, 2) float32",
                 "matmul (operation 1)", "version 0 -> 1"):
        tracer.finish({"y": y})


def test_an_optimizer_step_during_the_trace_is_reported_through_a_view():
    class Model(Module):
        def __init__(self):
            super().__init__()
            self.weight = Parameter(example(2, 4))

        def forward(self, x):
            return x @ self.weight.T  # a view of the weight, captured as a constant

    model = Model()
    tracer = Tracer.begin()
    tracer.parameter("weight", model.weight)
    x = tracer.input("x", example(3, 4))
    y = model(x)
    model.weight.grad = np.ones((2, 4), np.float32)
    SGD(lr=0.1).bind(model.named_parameters()).step()
    with refused(Kind.IN_PLACE_MUTATION, "constant 'weight.view_0'", "its source 'weight'"):
        tracer.finish({"y": y})


# -- NO_GRAD_IN_TRACE --------------------------------------------------------------------------------

def test_no_grad_while_tracing_is_refused():
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4))
        with refused(Kind.NO_GRAD_IN_TRACE, "no_grad()"):
            with no_grad():
                x * 2.0


def test_an_evaluation_call_on_numpy_inside_a_trace_is_refused():
    class Double(Module):
        def forward(self, x):
            return x * 2.0

    with Tracer() as tracer:
        tracer.input("x", example(3, 4))
        with refused(Kind.NO_GRAD_IN_TRACE, "no_grad()"):
            Double()(example(3, 4))  # Module.evaluate runs under no_grad


# -- SYMBOLIC_SHAPE ----------------------------------------------------------------------------------

@pytest.mark.parametrize("compute, fragments", [
    (lambda x: x[:, -4:2], ["slice (operation 1)", "a slice of axis 1", "steps",
                            "-4:2", "fewer elements the larger"]),
    (lambda x: x[:, :9], ["slice (operation 1)", "a slice of axis 1", ":9", "clamped",
                          "traced size 5"]),
    (lambda x: x + Tensor(np.ones((x.shape[0], 1, 1), np.float32)),
     ["add (operation 1)", "axis 0 is the symbolic size batch", "fixed at 7"]),
    (lambda x: x.sum(-1) @ Tensor(np.ones((5, 2), np.float32)),
     ["matmul (operation 2)", "steps", "fixed at 5", "contracts"]),
    (lambda x: F.concat([x, Tensor(np.zeros((7, 5, 1), np.float32))], axis=-1),
     ["concat (operation 1)", "axis 0 is the symbolic size batch", "fixed at 7"]),
])
def test_what_a_symbol_cannot_reach_is_refused(compute, fragments):
    with Tracer() as tracer:
        x = tracer.input("x", example(7, 5, 4), {0: "batch", 1: "steps"})
        with refused(Kind.SYMBOLIC_SHAPE, *fragments):
            compute(x)


def test_a_symbol_split_between_axes_is_refused():
    with Tracer() as tracer:
        x = tracer.input("x", example(6, 5, 4), {0: "batch", 1: "steps"})
        with refused(Kind.SYMBOLIC_SHAPE, "reshape (operation 1)", "cannot be spread",
                     "batch=6, steps=5"):
            x.reshape(8, 15)


def test_a_fixed_size_equal_to_a_symbol_is_ambiguous():
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4), {0: "batch"})
        flat = (x @ Tensor(np.ones((4, 3), np.float32))).reshape(9)  # 3*batch
        with refused(Kind.SYMBOLIC_SHAPE, "reshape (operation 3)", "ambiguous",
                     "(3, batch) or (batch, 3)"):
            flat.reshape(3, 3)


# -- INVALID_USAGE -----------------------------------------------------------------------------------

def test_nested_tracers_are_refused():
    with Tracer():
        with pytest.raises(TraceException) as caught:
            Tracer.begin()
    assert caught.value.kind is Kind.INVALID_USAGE and "nested" in str(caught.value)
    assert modes.trace_hook() is None


@pytest.mark.parametrize("misuse, fragments", [
    (lambda t, x: t.input("x", example(2, 2)), ["the name 'x' is used twice"]),
    (lambda t, x: t.parameter("x", Tensor(example(2))), ["the name 'x' is used twice"]),
    (lambda t, x: t.parameter("w", x * 2.0), ["parameter 'w' depends on an input"]),
    (lambda t, x: t.input("y", example(1, 4), {0: "batch"}),
     ["symbol 'batch' has size 1 on axis 0, but 7"]),
    (lambda t, x: t.input("y", example(1, 4), {0: "rows"}),
     ["symbol 'rows' (axis 0) has example size 1", "at least 2"]),
    (lambda t, x: t.input("y", example(7, 4), {0: "rows"}),
     ["symbols 'batch' and 'rows' both have example size 7"]),
    (lambda t, x: t.input("y", example(7, 4), {2: "rows"}), ["axis_names names axis 2"]),
    (lambda t, x: t.input("y", x, {}), ["the example is itself a traced tensor"]),
    (lambda t, x: t.finish({"y": Tensor(example(2))}), ["output 'y' (2,)", "does not depend on an input"]),
    (lambda t, x: t.finish({"x": x * 2.0}), ["output name 'x'", "already used"]),
    (lambda t, x: t.finish({"y": x.numpy}), ["output 'y' must be a Tensor"]),
])
def test_misuse_is_invalid_usage(misuse, fragments):
    with Tracer() as tracer:
        x = tracer.input("x", example(7, 4), {0: "batch"})
        with pytest.raises(TraceException) as caught:
            misuse(tracer, x)
    assert caught.value.kind is Kind.INVALID_USAGE, caught.value
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_close_stops_a_trace_begun_without_a_block():
    tracer = Tracer.begin()
    x = tracer.input("x", example(3, 4))
    assert modes.trace_hook() is tracer
    tracer.close()
    assert modes.trace_hook() is None
    (x * 2.0).numpy()  # no longer watched
    with pytest.raises(TraceException, match="finish: the tracer is not recording \\(it is closed\\)"):
        tracer.finish({"y": x})


def test_a_finished_tracer_cannot_record_again():
    tracer = Tracer.begin()
    x = tracer.input("x", example(3, 4))
    tracer.finish({"y": x * 2.0})
    with pytest.raises(TraceException, match="input: the tracer is not recording"):
        tracer.input("z", example(3, 4))
    with pytest.raises(TraceException, match="already started"):
        tracer.__enter__()


# -- UNSUPPORTED_OPERATION --------------------------------------------------------------------------

@pytest.mark.parametrize("loss, op", [(MeanSquaredError(), "mse_loss"),
                                      (CrossEntropy(), "cross_entropy_ids_loss")])
def test_losses_are_unsupported_by_name(loss, op):
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4))
        with refused(Kind.UNSUPPORTED_OPERATION, f"{op} (operation 1)", "a loss"):
            loss(x, np.zeros(3, np.int64) if op.endswith("ids_loss") else example(3, 4))


def test_training_mode_dropout_is_unsupported():
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 4))
        with refused(Kind.UNSUPPORTED_OPERATION, "dropout (operation 1)", "random mask"):
            F.dropout(x, 0.5, training=True)
        assert F.dropout(x, 0.5, training=False) is x


def test_training_mode_batch_norm_is_unsupported():
    mean, var = Tensor(np.zeros(4, np.float32)), Tensor(np.ones(4, np.float32))
    scale, shift = Tensor(np.ones(4, np.float32)), Tensor(np.zeros(4, np.float32))
    with Tracer() as tracer:
        x = tracer.input("x", example(3, 5, 4), {0: "batch"})
        with refused(Kind.UNSUPPORTED_OPERATION, "batch_norm (operation 1)", "training mode",
                     "running statistics"):
            F.batch_norm(x, mean, var, scale, shift, training=True)
    np.testing.assert_array_equal(mean.numpy(), 0.0)  # refused before the running update


def test_a_primitive_without_a_mapping_is_unsupported_by_name():
    @primitive("test_unmapped_square")
    class _Square:
        def forward(a):
            return a * a, None

    try:
        with Tracer() as tracer:
            x = tracer.input("x", example(3, 4))
            with refused(Kind.UNSUPPORTED_OPERATION, "test_unmapped_square (operation 1)",
                         "no mapping to ONNX nodes",
                         "mapped: abs, acos, acosh, adaptive_avg_pool"):
                apply("test_unmapped_square", x)
    finally:
        del PRIMITIVES["test_unmapped_square"]
