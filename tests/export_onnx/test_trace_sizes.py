"""Sizes read from symbolic axes while tracing (`n = x.shape[1]`, a SymInt): every use written from
the size, held to the eager run in ONNX Runtime at the traced size and two other sizes of every
symbol; what would fix a size at the traced one refused by name."""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pytest

from deepsharp import Module, Parameter, arange, functional as F
from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import Tensor
from deepsharp.tensors.symint import SymInt
from deepsharp.tracing import Tracer
from deepsharp_export_onnx import ExportRefused, OnnxExport
from tests.support.trace_check import check_trace

SERIES = {"x": ("batch", "steps", 4)}
SIZES = {"batch": (3, 2, 5), "steps": (7, 9, 12)}
EVEN = {"batch": (3, 2, 5), "steps": (8, 6, 12)}
_rng = np.random.default_rng(11)
TABLE = Parameter(_rng.standard_normal((16, 4)).astype(np.float32))


def _steps(x):
    return x.shape[1]


# -- sizes the graph computes -----------------------------------------------------------------------

USES = {
    "the reproduction: x[:, :n - 1]": lambda x: x[:, :_steps(x) - 1] * 2,
    "x[:, 1:n]": lambda x: x[:, 1:_steps(x)] - x[:, :-1],
    "x[:, n // 2:]": lambda x: x[:, _steps(x) // 2:] * 3,
    "x[:, :n // 2] and its rest joined": lambda x: F.concat(
        [x[:, :_steps(x) // 2], x[:, _steps(x) // 2:]], axis=1),
    "x[:, :n - 5] (computed: c < -2)": lambda x: x[:, :_steps(x) - 5] + 1,
    "x[:, n - 3:] (computed start)": lambda x: x[:, _steps(x) - 3:].sum(axis=1),
    "x[:, n - 1] and x[:, -n]": lambda x: x[:, _steps(x) - 1] - x[:, -_steps(x)],
    "x[:, n - 1::-1] (a flip)": lambda x: x[:, _steps(x) - 1::-1] * x,
    "x[:, :n + 2] (runs to the end)": lambda x: x[:, :_steps(x) + 2] * 2,
    "x[:, n % 2:]": lambda x: x[:, _steps(x) % 2:].mean(axis=1),
    "narrow(1, 1, n - 2)": lambda x: x.narrow(1, 1, _steps(x) - 2) * 2,
    "narrow(1, n // 2, n - n // 2)": lambda x: x.narrow(1, _steps(x) // 2,
                                                        _steps(x) - _steps(x) // 2) + 1,
    "select(1, n - 2)": lambda x: x.select(1, _steps(x) - 2) * 2,
    "weight[:n] (a constant sliced by a size)": lambda x: x + TABLE[:_steps(x)],
    "x.sum(1) / n": lambda x: x.sum(axis=1) / x.shape[1],
    "x * (n - 1) and n - x": lambda x: x * (_steps(x) - 1) + (x.shape[0] - x),
    "x.sum() / x.numel()": lambda x: x.sum() / x.numel() + x.sum(axis=1) / x.size(1),
    "x.size() unpacked": lambda x: x.reshape(x.size()[0] * x.size()[1], -1) * 2,
    "arange(n) positions": lambda x: x + arange(_steps(x)).astype(np.float32).reshape(
        1, _steps(x), 1),
    "arange(1, n), arange(n - 1)": lambda x: x[:, 1:] * arange(1, _steps(x)).astype(
        np.float32).reshape(-1, 1) + arange(_steps(x) - 1).astype(np.float32).reshape(-1, 1),
    "arange(n // 2, n)": lambda x: x[:, _steps(x) // 2:] * arange(
        _steps(x) // 2, _steps(x)).astype(np.float32).reshape(-1, 1),
    "F.embedding(arange(n), table)": lambda x: x + F.embedding(arange(_steps(x)), TABLE),
    "zeros(x.shape[0], 5)": lambda x: F.concat([x.mean(axis=1), F.zeros(x.shape[0], 5)],
                                                axis=1),
    "ones(b, n, 1) and full((b, n), 0.5)": lambda x: x * F.ones(x.shape[0], _steps(x), 1)
    + F.full((x.shape[0], _steps(x)), 0.5).reshape(x.shape[0], _steps(x), 1),
    "x.new_zeros(b, n - 1, 4) + x[:, 1:]": lambda x: x.new_zeros(x.shape[0], _steps(x) - 1, 4)
    + x[:, 1:],
    "expand(b, n, 4)": lambda x: x.mean(axis=1, keepdims=True).expand(x.shape[0], _steps(x), 4)
    - x,
    "reshape(b * n, 4) and back": lambda x: (x.reshape(x.shape[0] * _steps(x), 4) * 2).reshape(
        x.shape[0], _steps(x), 4),
    "view(b, n, 2, -1)": lambda x: x.view(x.shape[0], _steps(x), 2, -1).sum(axis=2),
    "flatten and unflatten": lambda x: x.flatten(0, 1).unflatten(0, (x.shape[0], _steps(x))),
    "a causal mask F.ones(t, t).triu(1)": lambda x: (x @ x.transpose(1, 2)).masked_fill(
        F.ones(_steps(x), _steps(x)).triu(1).bool(), -1e9).softmax(-1) @ x,
    "positions[:, :t] of a table": lambda x: x + TABLE.reshape(1, 16, 4)[:, :_steps(x)],
    "arange(t) expanded to (b, t)": lambda x: x * arange(_steps(x)).reshape(1, _steps(x)).expand(
        x.shape[0], _steps(x)).astype(np.float32).unsqueeze(-1),
    "x[arange(b), last]": lambda x: x[arange(x.shape[0]), (x[:, :, 0] > 0).astype(np.int64).sum(
        1).clamp(1, None) - 1],
    "written where x[:, n - 1] is": lambda x: _write(x, (slice(None), _steps(x) - 1), 0.0),
    "written where x[:, :n // 2] is": lambda x: _write(x, (slice(None), slice(None,
                                                                       _steps(x) // 2)), 1.0),
}


def _write(x, index, value):
    y = x * 2.0
    y[index] = value
    return y


@pytest.mark.parametrize("name", list(USES))
def test_a_size_read_from_a_symbolic_axis_is_computed_by_the_graph(name):
    check_trace(USES[name], SERIES, SIZES)


def test_a_size_divided_exactly_reshapes_at_every_even_size():
    def fn(x):
        batch, steps, width = x.shape
        halves = x.view(batch, steps // 2, -1)          # (batch, steps // 2, 8)
        return halves.view(batch, steps, width) - x      # back
    checked = check_trace(fn, SERIES, EVEN)
    assert checked.count("Mod") >= 1


def test_four_heads_at_a_batch_of_four_are_told_apart_by_the_sizes():
    """The batch traced at 4 with 4 heads: by value, `(batch*4, ...)` back to `(batch, 4, ...)`
    is ambiguous; the sizes read from the shape say which is which."""
    def fn(x):
        batch, steps, width = x.shape
        heads = x.reshape(batch, steps, 4, width // 4).permute(0, 2, 1, 3)
        flat = heads.reshape(batch * 4, steps, width // 4) * 2.0
        return flat.reshape(batch, 4, steps, width // 4).permute(0, 2, 1, 3).reshape(
            batch, steps, width)
    check_trace(fn, {"x": ("batch", "steps", 8)}, {"batch": (4, 2, 5), "steps": (7, 9, 12)})


def test_the_reproduction_exported_as_a_module_follows_the_steps():
    class M(Module):
        def forward(self, x):
            n = x.shape[1]
            return x[:, :n - 1] * 2

    x = np.random.default_rng(0).standard_normal((3, 7, 4)).astype(np.float32)
    data = OnnxExport(example=x, axis_names={0: "batch", 1: "steps"}).to_bytes(M(), None)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for shape in ((2, 9, 4), (5, 3, 4), (1, 2, 4)):
        y = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(session.run(None, {"input": y})[0], M()(y), atol=1e-6)


def test_a_bound_counted_from_the_end_twice_is_followed_where_python_wraps_it():
    """`x[:, :n - 5]` at n = 3 is Python's `x[:, :-2]` (one step): the graph computes the bound
    and ONNX's Slice counts it from the end as Python does."""
    checked = check_trace(USES["x[:, :n - 5] (computed: c < -2)"], SERIES, SIZES)
    session = ort.InferenceSession(checked.data, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(session.run(None, {"x": x})[0], x[:, :-2] + 1)


def test_shapes_are_symint_only_for_symbolic_axes_of_traced_tensors():
    x = Tensor(np.ones((3, 7, 4), np.float32))
    assert type(x.shape) is tuple and all(type(n) is int for n in x.shape)
    with Tracer() as tracer:
        t = tracer.input("x", np.ones((3, 7, 4), np.float32), {1: "steps"})
        batch, steps, width = t.shape
        assert (type(batch), type(width)) == (int, int) and isinstance(steps, SymInt)
        assert steps == 7 and hash(steps) == hash(7) and str(steps.expr) == "steps"
        assert isinstance(t.size(1), SymInt) and isinstance(t.numel(), SymInt)
        assert str((steps * 2 - 1).expr) == "2*steps-1" and str((steps // 2).expr) == "steps//2"
        assert type(x.shape[0]) is int and list(range(steps)) == list(range(7))
        tracer.finish({"y": t * 2})
    assert int(steps) == 7  # after the trace: a plain int


# -- refused by name ------------------------------------------------------------------------------

def _loop(x):
    total = x[:, 0] * 0
    for t in range(x.shape[1]):
        total = total + x[:, t]
    return total


def _select_loop(x):
    return sum(x.select(1, t) for t in range(x.shape[1]))


REFUSED = {
    "int(n)": (lambda x: x[:, :int(x.shape[1]) - 1], "int() (at test_trace_sizes.py:"),
    "float(n)": (lambda x: x / math.sqrt(x.shape[1]), "float() (or a math function"),
    "n / 2": (lambda x: x[:, :x.shape[1] / 2], "'/' (a true division gives a float)"),
    "n * 0.5": (lambda x: x * (x.shape[1] * 0.5), "'*' with the float 0.5"),
    "numpy of a size": (lambda x: x + Tensor(np.arange(x.shape[1])), "(at test_trace_sizes.py:"),
    "unbind": (lambda x: x.unbind(1)[0], "unbind(dim=1) (or iteration) over a symbolic axis"),
    "iteration": (lambda x: sum(row for row in x), "iterating over a tensor (for t in x)"),
    "len": (lambda x: x.sum(axis=0) / len(x), "len(x)"),
    "a loop over range(n)": (_loop, ("slice (operation", "the plain position 6 of axis 1, whose "
                                     "size is the symbol steps, is its last position in the "
                                     "traced run", "(traced at test_trace_sizes.py:")),
    "a loop selecting": (_select_loop, ("slice (operation", "the plain position 6 of axis 1")),
    "a plain bound equal to the size": (lambda x: x[:, :7] * 2, "is its size in the traced run"),
    "split by a size": (lambda x: x.split(x.shape[1] // 2, dim=1)[0],
                        "split(3) (its pieces counted from a size)"),
    "chunk by a size": (lambda x: x.chunk(x.shape[0], dim=2)[0], "chunk(3)"),
    "topk of n": (lambda x: x.topk(x.shape[1] - 1, dim=1).values, "topk(k=6)"),
    "a size where a count is kept": (lambda x: x.mean(axis=1).repeat(1, x.shape[1]),
                                     "tile (operation 2): its argument reps=(1, 7)"),
    "abs of a difference": (lambda x: x[:, :abs(x.shape[1] - 10)],
                            "abs() of a size that may be negative"),
    "a bound outside the axis at the trace": (lambda x: x[:, x.shape[1] - 9:],
                                              "its bound steps-9 is -2 at the traced size"),
    "a step read from a size": (lambda x: x[:, ::x.shape[0]], "slice (operation 1): its argument "
                                                              "steps=(1, 3, 1)"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_would_fix_a_size_is_refused_by_name(name):
    fn, fragments = REFUSED[name]
    with pytest.raises(TraceException) as refused:
        check_trace(fn, SERIES, SIZES)
    assert refused.value.kind is TraceErrorKind.SYMBOLIC_SHAPE
    for fragment in (fragments,) if isinstance(fragments, str) else fragments:
        assert fragment in str(refused.value), str(refused.value)


def test_a_refusal_in_a_module_names_the_line_and_writes_no_byte(tmp_path):
    class Unbinding(Module):
        def forward(self, x):
            return sum(x.unbind(1))

    x = np.random.default_rng(0).standard_normal((3, 7, 4)).astype(np.float32)
    target = tmp_path / "m.onnx"
    with pytest.raises(ExportRefused, match=r"SYMBOLIC_SHAPE: unbind\(dim=1\) .*"
                                            r"\(at test_trace_sizes.py:\d+\) fixes the size steps"):
        OnnxExport(example=x, axis_names={0: "batch", 1: "steps"}).write(Unbinding(), None,
                                                                         str(target))
    assert not target.exists()
    assert sum(Unbinding()(x).shape) == 7  # eager: as always


@pytest.mark.parametrize("index", [np.s_[:, -3::-1], np.s_[:, -2:-5:-2], np.s_[:, 5::-1]],
                         ids=["-3::-1", "-2:-5:-2", "5::-1"])
def test_a_negative_step_slice_is_python_s_at_every_size(index):
    """ONNX's Slice puts a negative step's start that falls before the axis on the first element;
    Python takes nothing from there: the graph reverses the axis and slices it forward."""
    with Tracer() as tracer:
        x = tracer.input("x", np.zeros((2, 9), np.float32), {1: "steps"})
        data = tracer.finish({"y": x[index] * 1.0}).to_bytes()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    for n in range(1, 12):
        a = np.arange(2 * n, dtype=np.float32).reshape(2, n)
        np.testing.assert_array_equal(session.run(None, {"x": a})[0], a[index], err_msg=f"n={n}")
