"""ONNX nodes for the primitives an operation record can hold.

One table, keyed by primitive name, used by the writers of layers that apply a primitive (the
activations) and by the tracer, so a primitive is written the same way whoever writes it. Each
entry takes an `Emit` (a tape bound to a name), the input value names, the record's attributes and
the input ranks, and returns the output value name (a list of names for several results).

An entry may also name how the primitive carries symbolic axes (`dims=`, a rule of
`deepsharp.tracing.dims`; `positional` when omitted): that is all the tracer needs to record it.
Adding a primitive to what can be traced is one entry here:

    @writes_primitive("conv", dims=dims.positional)
    def _conv(emit, inputs, attrs, ranks):
        return emit("Conv", inputs, {"strides": list(attrs["strides"]), ...})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from onnx import helper

from deepsharp.tracing import dims, slices
from deepsharp.tracing.dims import DimRule
from deepsharp.tracing.symbols import Dims
from deepsharp_export_onnx.graph import Tape

# ends of a slice running to the start with step -1, at any size (ONNX clamps it)
TO_THE_START = -(2 ** 63 - 1)
END = 2 ** 63 - 1


@dataclass
class Emit:
    """A tape bound to a base name: the first node takes the name, later ones `name/suffix`.

    A layer writer's Emit knows nothing of symbolic axes: every shape is the one recorded. The
    tracer's (`deepsharp_export_onnx.trace.lower.TraceEmit`) answers from the trace's symbolic dims.
    """

    tape: Tape
    name: str

    def __call__(self, op_type: str, inputs: Sequence[str], attrs: dict[str, Any] | None = None,
                 *, suffix: str | None = None, outputs: int = 1) -> Any:
        name = self.name if suffix is None else f"{self.name}/{suffix}"
        return self.tape.op(op_type, inputs, attrs, name=name, outputs=outputs)

    def constant(self, label: str, values: Any, dtype: Any = np.int64) -> str:
        return self.tape.constant(f"{self.name}/{label}", values, dtype)

    def dims(self, index: int) -> Dims | None:
        """Input `index`'s symbolic dims (None when not known: every axis as recorded)."""
        return None

    def constant_value(self, index: int) -> np.ndarray | None:
        """Input `index`'s values when it is a constant of the trace (else None)."""
        return None

    def annotate_as(self, name: str, *, operand: int | None = None, result: int | None = None,
                    perm: Sequence[int] | None = None) -> None:
        """Annotate `name` with the dims and type of input `operand` (or of result `result`),
        its axes permuted by `perm`: what a node in between (a Transpose to channels-first) makes.
        A layer writer's Emit knows no dims and annotates nothing."""

    def promoted(self, inputs: Sequence[str], skip: Sequence[int] = (), to: Any = None
                 ) -> list[str]:
        """`inputs` in the result's element type (or in dtype `to`), as numpy promoted them
        (ONNX's arithmetic takes one type): a Cast where an input's type differs. Positions in
        `skip` are left alone."""
        return list(inputs)

    def dtype(self, index: int) -> np.dtype | None:
        """Input `index`'s numpy dtype (None when not known: a layer writer's float32)."""
        return None

    def result_dtype(self, index: int = 0) -> np.dtype:
        """Result `index`'s numpy dtype (float32 for a layer writer)."""
        return np.dtype(np.float32)

    def shape_operand(self, shape: Sequence[int], *, minus_one: bool = False,
                      broadcast_from: int | None = None) -> str:
        """An int64 operand giving result 0's shape (`shape` as recorded). `minus_one` allows
        one -1 (Reshape); `broadcast_from=i` allows 1 where input i already has the size
        (Expand)."""
        return self.constant("shape", [int(s) for s in shape])

    def size(self, dim: Any) -> str:
        """An int64[1] value holding the size `dim` (a number, or in a trace a symbolic size
        computed from Shape nodes)."""
        return self.constant(f"size_{int(dim)}", [int(dim)])

    def vector(self, label: str, entries: Sequence[Any]) -> str:
        """An int64 vector of `entries`: a constant when every entry is a number; in a trace an
        entry may be a size (a Dim or a polynomial of tracing/sizes.py), computed at run time."""
        return self.constant(label, [int(v) for v in entries])

    def dtype_of(self, index: int) -> np.dtype | None:
        """Input `index`'s element type, when known (in a trace)."""
        return None


PrimitiveWriter = Callable[[Emit, Sequence[str], dict[str, Any], Sequence[int]], str]
PRIMITIVE_NODES: dict[str, PrimitiveWriter] = {}
PRIMITIVE_DIMS: dict[str, DimRule] = {}  # how the tracer carries symbolic axes through each


def writes_primitive(*names: str, dims: DimRule | None = None
                     ) -> Callable[[PrimitiveWriter], PrimitiveWriter]:
    def register(fn: PrimitiveWriter) -> PrimitiveWriter:
        for name in names:
            if name in PRIMITIVE_NODES:
                raise ValueError(f"primitive {name!r} has two ONNX writers")
            PRIMITIVE_NODES[name] = fn
            if dims is not None:
                PRIMITIVE_DIMS[name] = dims
        return fn

    return register


def _same_name(op_type: str, skip: Sequence[int] = ()) -> PrimitiveWriter:
    return lambda emit, inputs, attrs, ranks: emit(op_type, emit.promoted(inputs, skip))


for _primitive, _op in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh",
                        "softplus": "Softplus", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
                        "neg": "Neg", "abs": "Abs", "sin": "Sin", "cos": "Cos",
                        "sub": "Sub", "div": "Div", "pow": "Pow"}.items():
    writes_primitive(_primitive, dims=dims.elementwise)(_same_name(_op))
# add, mul, maximum, minimum and where (bool forms): vocabulary_nodes


@writes_primitive("gelu", dims=dims.elementwise)
def _gelu(emit, inputs, attrs, ranks):
    return emit("Gelu", inputs, {"approximate": "tanh" if attrs["approximate"] else "none"})


@writes_primitive("silu", dims=dims.elementwise)
def _silu(emit, inputs, attrs, ranks):
    """x * Sigmoid(x): ONNX has no SiLU operator."""
    s = emit("Sigmoid", inputs, suffix="sigmoid")
    return emit("Mul", [inputs[0], s])


@writes_primitive("hardtanh", dims=dims.elementwise)
def _hardtanh(emit, inputs, attrs, ranks):
    """Clip by two constants of the value's type."""
    kind = emit.result_dtype()
    low = emit.constant("low", np.asarray(attrs["low"], kind), kind)
    high = emit.constant("high", np.asarray(attrs["high"], kind), kind)
    return emit("Clip", [inputs[0], low, high])


@writes_primitive("mish", dims=dims.elementwise)
def _mish(emit, inputs, attrs, ranks):
    """x * Tanh(Softplus(x)), as PyTorch writes it below set 18 (ONNX's Mish needs 18)."""
    soft = emit("Softplus", inputs, suffix="softplus")
    return emit("Mul", [inputs[0], emit("Tanh", [soft], suffix="tanh")])


@writes_primitive("hard_sigmoid", dims=dims.elementwise)
def _hard_sigmoid(emit, inputs, attrs, ranks):
    """HardSigmoid with PyTorch's alpha 1/6 and beta 1/2: max(0, min(1, x / 6 + 1/2))."""
    return emit("HardSigmoid", inputs, {"alpha": 1.0 / 6.0, "beta": 0.5})


@writes_primitive("hard_swish", dims=dims.elementwise)
def _hard_swish(emit, inputs, attrs, ranks):
    return emit("HardSwish", inputs)


@writes_primitive("prelu", dims=dims.like_first)
def _prelu(emit, inputs, attrs, ranks):
    """PRelu, the slope reshaped to lie along the axis (ONNX broadcasts it from the right)."""
    rank, axis = ranks[0], int(attrs["axis"]) % max(ranks[0], 1)
    x, slope = emit.promoted(inputs)
    if rank > 1 and axis != rank - 1:
        shape = emit.constant("slope_shape", [-1] + [1] * (rank - 1 - axis))
        slope = emit("Reshape", [slope, shape], suffix="slope")
    return emit("PRelu", [x, slope])


@writes_primitive("elu", dims=dims.elementwise)
def _elu(emit, inputs, attrs, ranks):
    return emit("Elu", inputs, {"alpha": float(attrs["alpha"])})


@writes_primitive("leaky_relu", dims=dims.elementwise)
def _leaky_relu(emit, inputs, attrs, ranks):
    return emit("LeakyRelu", inputs, {"alpha": float(attrs["slope"])})


def _softmax_like(op_type: str) -> PrimitiveWriter:
    def write(emit, inputs, attrs, ranks):
        axis = int(attrs["axis"])
        # `_last_axis` lets opsets.needs keep the old (2-D coercing) form for the last axis
        return emit(op_type, inputs, {"axis": axis, "_last_axis": axis == ranks[0] - 1})

    return write


writes_primitive("softmax", dims=dims.elementwise)(_softmax_like("Softmax"))
writes_primitive("log_softmax", dims=dims.elementwise)(_softmax_like("LogSoftmax"))
writes_primitive("matmul", dims=dims.matmul)(_same_name("MatMul"))


def _reduce(op_type: str) -> PrimitiveWriter:
    def write(emit, inputs, attrs, ranks):
        return emit(op_type, emit.promoted(inputs), {"axes": [int(a) for a in attrs["axes"]],
                                                     "keepdims": int(attrs["keepdims"])})

    return write


writes_primitive("sum", dims=dims.reduce)(_reduce("ReduceSum"))
writes_primitive("max", dims=dims.reduce)(_reduce("ReduceMax"))


@writes_primitive("cast", dims=dims.elementwise)
def _cast(emit, inputs, attrs, ranks):
    return emit("Cast", inputs, {"to": helper.np_dtype_to_tensor_dtype(np.dtype(attrs["to"]))})


@writes_primitive("transpose", dims=dims.transpose)
def _transpose(emit, inputs, attrs, ranks):
    return emit("Transpose", inputs, {"perm": [int(p) for p in attrs["perm"]]})


@writes_primitive("reshape", dims=dims.reshape)
def _reshape(emit, inputs, attrs, ranks):
    """Reshape by a constant shape, a constant with one -1, or a shape computed from Shape nodes
    when several axes are symbolic. A literal 0 (an empty axis) needs `allowzero`, or ONNX would
    read it as "copy the input's size"."""
    shape = emit.shape_operand(attrs["shape"], minus_one=True)
    return emit("Reshape", [inputs[0], shape], {"allowzero": 1} if 0 in attrs["shape"] else {})


@writes_primitive("expand", dims=dims.expand)
def _expand(emit, inputs, attrs, ranks):
    return emit("Expand", [inputs[0], emit.shape_operand(attrs["shape"], broadcast_from=0)])


@writes_primitive("concat", dims=dims.concat)
def _concat(emit, inputs, attrs, ranks):
    return emit("Concat", emit.promoted(inputs), {"axis": int(attrs["axis"])})


@writes_primitive("gather", dims=dims.gather)
def _gather(emit, inputs, attrs, ranks):
    """Gather along `axis`. Negative indices count from the end only from set 11: a constant's are
    known, an input's may be anything."""
    indices = emit.constant_value(1)
    negative = indices is None or bool((indices < 0).any())
    return emit("Gather", inputs, {"axis": int(attrs["axis"]), "_negative": negative})


@writes_primitive("slice", dims=slices.slice_)
def _slice(emit, inputs, attrs, ranks):
    """Only the axes not taken whole; a reversed whole axis (flip) runs from -1 to the start, which
    holds at any size. Bounds read from symbolic axes are as the trace noted them (`_bounds`:
    numbers, or sizes the graph computes)."""
    known = emit.dims(0)
    kinds = slices.slice_axes(known, attrs) if known is not None else ["part"] * ranks[0]
    written = attrs.get("_bounds", {})
    starts, ends, axes, steps = [], [], [], []
    for axis, (b, e, s, kind) in enumerate(zip(attrs["starts"], attrs["stops"], attrs["steps"],
                                               kinds)):
        if axis in written:
            kind, b, e = written[axis]
        if kind == "full":
            continue
        if kind == "flip":
            b, e = -1, TO_THE_START
        starts.append(b), ends.append(e), axes.append(axis), steps.append(s)
    return slice_node(emit, inputs[0], starts, ends, axes, steps)


def _mirrored(bound: int) -> int:
    """Where a bound of a negative step lands, in Python's reading, once the axis is reversed
    (a position p is n-1-p there): from the start p -> from the end -(p+1); from the end c ->
    from the start -1-c; the ends swap."""
    if bound >= END:
        return 0
    if bound <= -END:
        return END
    return -1 - bound if bound < 0 else -(bound + 1)


def slice_node(emit: Emit, value: str, starts: Sequence[Any], ends: Sequence[Any],
               axes: Sequence[int], steps: Sequence[int], label: str | None = None) -> str:
    """Slice with Python's meaning at every size. ONNX's Slice clamps a negative step's start to
    the first element where Python, once the start falls before the axis (`x[-3::-1]` of 2
    elements), takes nothing; such an axis (a start counted from the end, below -1) is reversed
    first and sliced forward, its bounds mirrored."""
    turned = [i for i, (b, s) in enumerate(zip(starts, steps))
              if s < 0 and isinstance(b, int) and -END < b < -1]
    name = f"{label}_" if label else ""
    if turned:
        value = emit("Slice", [value, *(emit.constant(f"{name}reversed_{k}", v) for k, v in (
            ("starts", [-1] * len(turned)), ("ends", [TO_THE_START] * len(turned)),
            ("axes", [axes[i] for i in turned]), ("steps", [-1] * len(turned))))],
            suffix=f"{name}reversed")
        starts, ends, steps = list(starts), list(ends), list(steps)
        for i in turned:
            starts[i], ends[i], steps[i] = _mirrored(starts[i]), _mirrored(ends[i]), -steps[i]
    operands = [emit.vector(f"{name}{k}", v) for k, v in
                (("starts", starts), ("ends", ends), ("axes", axes), ("steps", steps))]
    return emit("Slice", [value, *operands], suffix=label)


# The sequence primitives (embedding, attention, lstm, gru), the spatial ones (convolutions,
# pools, pad, resize, norms) and the tensor vocabulary's register themselves here too.
from deepsharp_export_onnx.write import sequence_nodes, spatial_nodes  # noqa: E402,F401
from deepsharp_export_onnx.write import selection_nodes, vocabulary_nodes  # noqa: E402,F401
from deepsharp_export_onnx.write import arithmetic_nodes  # noqa: E402,F401
from deepsharp_export_onnx.write import assign_nodes  # noqa: E402,F401
