"""ONNX nodes for rounding, remainders, erf, norms and the special-value tests
(deepsharp/tensors/ops/rounding.py), in the shared table (`nodes.PRIMITIVE_NODES`).

The remainders are written by numpy's (and PyTorch's) algorithm, node for node, so the graph
gives the eager numbers exactly: C's fmod (`Mod` with fmod=1), then the sign corrected where the
divisor's and the remainder's differ. On integers `Mod` with fmod=0 is Python's `%` already.
"""

from __future__ import annotations

import numpy as np

from deepsharp.tracing import dims
from deepsharp_export_onnx.write.nodes import Emit, writes_primitive
from deepsharp_export_onnx.write.vocabulary_nodes import _reduce_node, dtype_of

_ROUND_NODES = {"floor": "Floor", "ceil": "Ceil", "round": "Round"}


def _floating(emit: Emit) -> bool:
    return emit.result_dtype().kind == "f"


def _rounding(op_type: str):
    """Floor, Ceil or Round on floats; an integer is its own rounding (Identity)."""

    def write(emit, inputs, attrs, ranks):
        return emit(op_type if _floating(emit) else "Identity", [inputs[0]])

    return write


for _name, _op in _ROUND_NODES.items():
    writes_primitive(_name, dims=dims.elementwise)(_rounding(_op))


@writes_primitive("trunc", dims=dims.elementwise)
def _trunc(emit, inputs, attrs, ranks):
    """Ceil below zero, Floor elsewhere (ONNX has no Trunc)."""
    (x,) = inputs
    if not _floating(emit):
        return emit("Identity", [x])
    below = emit("Less", [x, _zero(emit, "zero")], suffix="below_zero")
    return emit("Where", [below, emit("Ceil", [x], suffix="ceil"),
                          emit("Floor", [x], suffix="floor")])


def _zero(emit: Emit, label: str) -> str:
    kind = emit.result_dtype()
    return emit.constant(label, np.asarray(0, kind), kind)


def _fmod(emit: Emit, a: str, b: str) -> str:
    return emit("Mod", [a, b], {"fmod": 1}, suffix="fmod")


def _sign_differs(emit: Emit, mod: str, b: str) -> str:
    """Where the fmod is non-zero and its sign is not the divisor's: there remainder adds b and
    floor_divide takes one away (numpy's npy_divmod)."""
    zero = _zero(emit, "zero")
    nonzero = emit("Not", [emit("Equal", [mod, zero], suffix="mod_is_zero")], suffix="mod_nonzero")
    differs = emit("Xor", [emit("Less", [b, zero], suffix="b_negative"),
                           emit("Less", [mod, zero], suffix="mod_negative")], suffix="signs_differ")
    return emit("And", [nonzero, differs], suffix="corrected")


@writes_primitive("remainder", dims=dims.elementwise)
def _remainder(emit, inputs, attrs, ranks):
    a, b = emit.promoted(inputs)
    if not _floating(emit):
        return emit("Mod", [a, b], {"fmod": 0})
    mod = _fmod(emit, a, b)
    return emit("Where", [_sign_differs(emit, mod, b), emit("Add", [mod, b], suffix="plus_b"), mod])


@writes_primitive("fmod", dims=dims.elementwise)
def _fmod_write(emit, inputs, attrs, ranks):
    a, b = emit.promoted(inputs)
    return emit("Mod", [a, b], {"fmod": 1})


@writes_primitive("floor_divide", dims=dims.elementwise)
def _floor_divide(emit, inputs, attrs, ranks):
    """Integers: (a - a % b) / b, exact. Floats, numpy's npy_divmod: div = (a - fmod(a, b)) / b,
    one less where the signs differ, then floored, and one more where that floor lies more than
    half below it; a / b where b is 0."""
    a, b = emit.promoted(inputs)
    if not _floating(emit):
        mod = emit("Mod", [a, b], {"fmod": 0}, suffix="mod")
        return emit("Div", [emit("Sub", [a, mod], suffix="multiple"), b])
    kind = emit.result_dtype()
    one = emit.constant("one", np.asarray(1, kind), kind)
    mod = _fmod(emit, a, b)
    div = emit("Div", [emit("Sub", [a, mod], suffix="multiple"), b], suffix="div")
    div = emit("Where", [_sign_differs(emit, mod, b), emit("Sub", [div, one], suffix="less_one"),
                         div], suffix="div_corrected")
    floor = emit("Floor", [div], suffix="floor")
    half = emit.constant("half", np.asarray(0.5, kind), kind)
    above = emit("Greater", [emit("Sub", [div, floor], suffix="fraction"), half],
                 suffix="above_half")
    floor = emit("Where", [above, emit("Add", [floor, one], suffix="plus_one"), floor],
                 suffix="rounded")
    by_zero = emit("Equal", [b, _zero(emit, "zero")], suffix="b_is_zero")
    return emit("Where", [by_zero, emit("Div", [a, b], suffix="quotient"), floor])


@writes_primitive("erf", dims=dims.elementwise)
def _erf(emit, inputs, attrs, ranks):
    return emit("Erf", [inputs[0]])


@writes_primitive("norm", dims=dims.reduce)
def _norm(emit, inputs, attrs, ranks):
    op_type = "ReduceL1" if attrs["p"] == 1 else "ReduceL2"
    return _reduce_node(emit, op_type, inputs[0], attrs["axes"], attrs["keepdims"])


def _special(op_type: str):
    """IsNaN / IsInf on floats; on integers always false: Not(Equal(x, x))."""

    def write(emit, inputs, attrs, ranks):
        (x,) = inputs
        if dtype_of(emit, 0).kind == "f":
            return emit(op_type, [x])
        return emit("Not", [emit("Equal", [x, x], suffix="itself")])

    return write


writes_primitive("isnan", dims=dims.elementwise)(_special("IsNaN"))
writes_primitive("isinf", dims=dims.elementwise)(_special("IsInf"))
