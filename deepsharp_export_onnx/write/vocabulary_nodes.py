"""ONNX nodes for the tensor vocabulary's primitives (deepsharp/tensors/ops/compare.py,
functions.py, reductions.py, linear.py; the index, order and building ones are in
`selection_nodes`) and the bool forms of arithmetic, in the shared table (`nodes.PRIMITIVE_NODES`).

Each entry writes nodes in forms ONNX Runtime has kernels for, whatever the element type: a bool
`where`, `maximum` or `+` becomes And/Or/Not (Runtime has no bool Where, Max or Add); a bool
comparison of order compares int64; a reduction of bools sums floats. `opsets` then takes the set
each node needs for its element type (an int64 Max needs 12).
"""

from __future__ import annotations

import numpy as np

from deepsharp.tracing import dims
from deepsharp.tracing import vocabulary_dims as vdims
from deepsharp.tracing.symbols import Sym
from deepsharp_export_onnx.write.nodes import Emit, writes_primitive

BOOL = np.dtype(np.bool_)
INT64 = np.dtype(np.int64)


def dtype_of(emit: Emit, index: int) -> np.dtype:
    found = emit.dtype(index)
    return np.dtype(np.float32) if found is None else found


def _common(emit: Emit, count: int) -> np.dtype:
    return np.result_type(*(dtype_of(emit, i) for i in range(count)))


def _axes_const(emit: Emit, label: str, values) -> str:
    return emit.constant(label, np.asarray(values, np.int64))


def axis_size(emit: Emit, name: str, index: int, axis: int, rank: int) -> str:
    """An int64 [1] value holding input `index`'s size on `axis`: a constant when fixed, else
    read by Shape and Gather at run time."""
    known = emit.dims(index)
    if known is not None and not isinstance(known[axis], Sym):
        return emit.constant(f"size_{axis}", [int(known[axis])])
    shape = emit("Shape", [name], suffix=f"shape_{axis}")
    return emit("Gather", [shape, _axes_const(emit, f"axis_{axis}", [axis % rank])], {"axis": 0},
                suffix=f"size_{axis}")


# -- arithmetic on bools, comparisons, logic -------------------------------------------------------
def _binary(op_type: str, bool_op: str):
    """Arithmetic whose bool form is logical (numpy: True + True is True, * is and)."""

    def write(emit, inputs, attrs, ranks):
        if emit.result_dtype() == BOOL:
            return emit(bool_op, emit.promoted(inputs, to=BOOL))
        return emit(op_type, emit.promoted(inputs))

    return write


for _name, _op, _bool in (("add", "Add", "Or"), ("mul", "Mul", "And"), ("maximum", "Max", "Or"),
                          ("minimum", "Min", "And")):
    writes_primitive(_name, dims=dims.elementwise)(_binary(_op, _bool))


@writes_primitive("where", dims=dims.elementwise)
def _where(emit, inputs, attrs, ranks):
    """Where; with bool values (no Runtime kernel) (c and a) or (not c and b)."""
    if emit.result_dtype() != BOOL:
        return emit("Where", emit.promoted(inputs, skip=(0,)))
    c, a, b = emit.promoted(inputs, to=BOOL)
    chosen = emit("And", [c, a], suffix="chosen")
    other = emit("And", [emit("Not", [c], suffix="not"), b], suffix="other")
    return emit("Or", [chosen, other])


_ORDER = {"less": "Less", "greater": "Greater", "less_equal": "LessOrEqual",
          "greater_equal": "GreaterOrEqual"}


def _compare(op: str):
    def write(emit, inputs, attrs, ranks):
        common = _common(emit, 2)
        if common == BOOL and op in _ORDER:  # no bool kernel: bools compare as 0 and 1
            common = INT64
        both = emit.promoted(inputs, to=common)
        if op in _ORDER:
            return emit(_ORDER[op], both)
        if op == "equal":
            return emit("Equal", both)
        return emit("Not", [emit("Equal", both, suffix="equal")])

    return write


for _name in ("equal", "not_equal", *_ORDER):
    writes_primitive(_name, dims=dims.elementwise)(_compare(_name))


def _logical(op_type: str):
    return lambda emit, inputs, attrs, ranks: emit(op_type, emit.promoted(inputs, to=BOOL))


for _name, _op in (("logical_and", "And"), ("logical_or", "Or"), ("logical_xor", "Xor"),
                   ("logical_not", "Not")):
    writes_primitive(_name, dims=dims.elementwise)(_logical(_op))


def _bitwise(op_type: str):
    return lambda emit, inputs, attrs, ranks: emit(op_type, emit.promoted(inputs))


for _name, _op in (("bitwise_and", "BitwiseAnd"), ("bitwise_or", "BitwiseOr"),
                   ("bitwise_xor", "BitwiseXor"), ("bitwise_not", "BitwiseNot")):
    writes_primitive(_name, dims=dims.elementwise)(_bitwise(_op))


# -- functions -------------------------------------------------------------------------------------
@writes_primitive("sign", dims=dims.elementwise)
def _sign(emit, inputs, attrs, ranks):
    """Sign; for floats 0 where x is NaN (PyTorch's sign, and the eager one; ONNX Runtime's Sign
    gives NaN there)."""
    (x,) = emit.promoted(inputs)
    kind = emit.result_dtype()
    if kind.kind != "f":
        return emit("Sign", [x])
    signs = emit("Sign", [x], suffix="signs")
    missing = emit("IsNaN", [x], suffix="nan")
    return emit("Where", [missing, emit.constant("zero", np.asarray(0, kind), kind), signs])


@writes_primitive("log1p", dims=dims.elementwise)
def _log1p(emit, inputs, attrs, ranks):
    """Log(1 + x): ONNX has no Log1p."""
    (x,) = emit.promoted(inputs)
    one = emit.constant("one", np.asarray(1, emit.result_dtype()), emit.result_dtype())
    return emit("Log", [emit("Add", [x, one], suffix="plus_one")])


@writes_primitive("rsqrt", dims=dims.elementwise)
def _rsqrt(emit, inputs, attrs, ranks):
    (x,) = emit.promoted(inputs)
    return emit("Reciprocal", [emit("Sqrt", [x], suffix="sqrt")])


@writes_primitive("clamp", dims=dims.elementwise)
def _clamp(emit, inputs, attrs, ranks):
    """Clip for number bounds (0-d constants); Max then Min for tensor bounds."""
    x, *bounds = emit.promoted(inputs)
    constant = all(emit.constant_value(i) is not None for i in range(1, len(inputs)))
    if constant and all(r == 0 for r in ranks[1:]):
        low = bounds.pop(0) if attrs["has_low"] else ""
        high = bounds.pop(0) if attrs["has_high"] else ""
        return emit("Clip", [x, low, high] if high else [x, low])
    if attrs["has_low"] and attrs["has_high"]:
        x = emit("Max", [x, bounds[0]], suffix="low")
        return emit("Min", [x, bounds[1]])
    return emit("Max" if attrs["has_low"] else "Min", [x, bounds[0]])


@writes_primitive("linear", dims=vdims.linear)
def _linear(emit, inputs, attrs, ranks):
    """Gemm(x, W, b, transB=1) for a matrix x; MatMul by the weight's Transpose (folded by the
    runtime) and Add otherwise."""
    if ranks[0] == 2:
        return emit("Gemm", list(inputs), {"transB": 1})
    turned = emit("Transpose", [inputs[1]], {"perm": [1, 0]}, suffix="weight_t")
    if len(inputs) == 2:
        return emit("MatMul", [inputs[0], turned])
    return emit("Add", [emit("MatMul", [inputs[0], turned], suffix="matmul"), inputs[2]])


# -- reductions ------------------------------------------------------------------------------------
def _reduce_node(emit: Emit, op_type: str, x: str, axes, keepdims: int, suffix=None) -> str:
    return emit(op_type, [x], {"axes": [int(a) for a in axes], "keepdims": int(keepdims)},
                suffix=suffix)


def _reduce(op_type: str):
    def write(emit, inputs, attrs, ranks):
        (x,) = emit.promoted(inputs)
        return _reduce_node(emit, op_type, x, attrs["axes"], attrs["keepdims"])

    return write


for _name, _op in (("min", "ReduceMin"), ("prod", "ReduceProd"), ("logsumexp", "ReduceLogSumExp")):
    writes_primitive(_name, dims=dims.reduce)(_reduce(_op))


def _along(op_type: str, arg_type: str):
    """(values, indices) along one axis: ReduceMax and ArgMax (the first of equal values)."""

    def write(emit, inputs, attrs, ranks):
        x = inputs[0]
        keep = int(attrs["keepdims"])
        values = _reduce_node(emit, op_type, x, [attrs["axis"]], keep, suffix="values")
        source = x if dtype_of(emit, 0) != BOOL else emit("Cast", [x], {"to": 7}, suffix="as_int")
        indices = emit(arg_type, [source], {"axis": int(attrs["axis"]), "keepdims": keep},
                       suffix="indices")
        return [values, indices]

    return write


writes_primitive("max_along", dims=vdims.along)(_along("ReduceMax", "ArgMax"))
writes_primitive("min_along", dims=vdims.along)(_along("ReduceMin", "ArgMin"))


def _arg(arg_type: str):
    def write(emit, inputs, attrs, ranks):
        x = inputs[0]
        if dtype_of(emit, 0) == BOOL:
            x = emit("Cast", [x], {"to": 7}, suffix="as_int")
        if not attrs["flat"]:
            return emit(arg_type, [x], {"axis": int(attrs["axis"]),
                                        "keepdims": int(attrs["keepdims"])})
        flat = emit("Reshape", [x, emit.constant("flat", [-1])], suffix="flat")
        index = emit(arg_type, [flat], {"axis": 0, "keepdims": 0},
                     suffix="index" if attrs["keepdims"] else None)
        if not attrs["keepdims"]:
            return index
        return emit("Reshape", [index, emit.constant("ones", [1] * ranks[0])])

    return write


writes_primitive("argmax", dims=vdims.along)(_arg("ArgMax"))
writes_primitive("argmin", dims=vdims.along)(_arg("ArgMin"))


def _count(emit: Emit, x: str, axes, rank: int, kind, label: str) -> str:
    """How many values `axes` of x hold, as a `kind` scalar read from its shape at run time (its
    nodes named after `label`)."""
    shape = emit("Shape", [x], suffix=f"{label}_shape")
    picked = _axes_const(emit, f"{label}_axes", [int(a) % rank for a in axes])
    sizes = emit("Gather", [shape, picked], {"axis": 0}, suffix=f"{label}_sizes")
    count = emit("ReduceProd", [sizes], {"axes": [0], "keepdims": 0}, suffix=label)
    return emit("Cast", [count], {"to": _elem(kind)}, suffix=f"{label}_float")


def _fixed_count(emit: Emit, index: int, axes) -> int | None:
    """How many values `axes` of input `index` hold, where every one of them is a fixed size."""
    known = emit.dims(index)
    if known is None or any(isinstance(known[a], Sym) for a in axes):
        return None
    return int(np.prod([int(known[a]) for a in axes]))


def mean_node(emit: Emit, x: str, axes, keep: int, rank: int, suffix: str | None = None,
              label: str = "mean") -> str:
    """The mean of x (input 0's shape) over `axes`: ReduceMean where they hold values, else the
    sum over the count read from the shape (nodes named after `label`), so that an empty axis
    gives NaN (0 / 0) as numpy and PyTorch do: ONNX Runtime's ReduceMean gives 0 there (the
    reference evaluator NaN)."""
    if _fixed_count(emit, 0, axes):
        return _reduce_node(emit, "ReduceMean", x, axes, keep, suffix=suffix)
    return counted_mean(emit, x, axes, keep, rank, emit.result_dtype(), suffix, label)


def counted_mean(emit: Emit, x: str, axes, keep: int, rank: int, kind, suffix: str | None = None,
                 label: str = "mean") -> str:
    """ReduceSum of x over `axes` divided by their count read from x's shape (a `kind` scalar):
    0 / 0, NaN, over no values (the form the importer's `fuse_mean` reads back as ReduceMean)."""
    total = _reduce_node(emit, "ReduceSum", x, axes, keep, suffix=f"{label}_total")
    count = _count(emit, x, axes, rank, kind, f"{label}_count")
    return emit("Div", [total, count], suffix=suffix)


@writes_primitive("mean", dims=dims.reduce)
def _mean(emit, inputs, attrs, ranks):
    (x,) = emit.promoted(inputs)
    return mean_node(emit, x, attrs["axes"], attrs["keepdims"], ranks[0])


@writes_primitive("var", dims=dims.reduce)
def _var(emit, inputs, attrs, ranks):
    """sum((x - mean)^2) / max(0, n - correction); n read from the shape when a reduced axis is
    symbolic (the mean alone when the correction is 0: `mean_node`)."""
    (x,) = emit.promoted(inputs)
    axes, keep, kind = attrs["axes"], attrs["keepdims"], emit.result_dtype()
    mean = mean_node(emit, x, axes, 1, ranks[0], suffix="mean")
    centred = emit("Sub", [x, mean], suffix="centred")
    squares = emit("Mul", [centred, centred], suffix="squares")
    correction = float(attrs["correction"])
    if correction == 0:
        return mean_node(emit, squares, axes, keep, ranks[0], label="variance")
    total = _reduce_node(emit, "ReduceSum", squares, axes, keep, suffix="total")
    count = _fixed_count(emit, 0, axes)
    if count is not None:
        denominator = emit.constant("denominator", np.asarray(max(0.0, count - correction),
                                                              kind), kind)
    else:
        count = _count(emit, x, axes, ranks[0], kind, "count")
        denominator = emit("Sub", [count, emit.constant(
            "correction", np.asarray(correction, kind), kind)], suffix="difference")
        denominator = emit("Max", [denominator, emit.constant(
            "no_fewer", np.asarray(0, kind), kind)], suffix="denominator")
    return emit("Div", [total, denominator])


def _elem(dtype: np.dtype) -> int:
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def _any(emit: Emit, x: str, axes, keep: int, suffix: str | None = None) -> str:
    """Whether some entry is true: the count of true entries (as floats) above 0."""
    label = suffix or "any"
    count = _reduce_node(emit, "ReduceSum", emit("Cast", [x], {"to": 1}, suffix=f"{label}_float"),
                         axes, keep, suffix=f"{label}_count")
    zero = emit.constant(f"{label}_zero", np.asarray(0, np.float32), np.float32)
    return emit("Greater", [count, zero], suffix=suffix)


@writes_primitive("any", dims=dims.reduce)
def _any_write(emit, inputs, attrs, ranks):
    (x,) = emit.promoted(inputs, to=BOOL)
    return _any(emit, x, attrs["axes"], attrs["keepdims"])


@writes_primitive("all", dims=dims.reduce)
def _all(emit, inputs, attrs, ranks):
    """Not any(not x): an empty reduction gives True."""
    (x,) = emit.promoted(inputs, to=BOOL)
    false = emit("Not", [x], suffix="false")
    return emit("Not", [_any(emit, false, attrs["axes"], attrs["keepdims"], suffix="some_false")])


# -- scans -----------------------------------------------------------------------------------------
@writes_primitive("cumsum", dims=dims.elementwise)
def _cumsum(emit, inputs, attrs, ranks):
    (x,) = emit.promoted(inputs)
    return emit("CumSum", [x, emit.constant("axis", np.asarray(attrs["axis"], np.int64))])


@writes_primitive("cumprod", dims=dims.elementwise)
def _cumprod(emit, inputs, attrs, ranks):
    """ReduceProd over a triangle: y[i] = prod over j of (x[j] if j <= i else 1), the axis's copy
    x[..., 1, j, ...] against a (T, T) mask (a constant for a fixed length, else from Range).
    ONNX's CumProd (set 26) is avoided: few runtimes hold it."""
    (x,) = emit.promoted(inputs)
    axis, rank, kind = attrs["axis"], ranks[0], emit.result_dtype()
    rows = emit("Unsqueeze", [x], {"axes": [axis]}, suffix="rows")
    trailing = rank - 1 - axis
    known = emit.dims(0)
    if known is not None and not isinstance(known[axis], Sym):
        n = int(known[axis])
        lower = np.tril(np.ones((n, n), bool)).reshape((n, n) + (1,) * trailing)
        mask = emit.constant("mask", lower, np.bool_)
    else:
        size = axis_size(emit, inputs[0], 0, axis, rank)
        count = emit("Squeeze", [size], {"axes": [0]}, suffix="count")
        steps = emit("Range", [emit.constant("start", np.asarray(0, np.int64)), count,
                               emit.constant("step", np.asarray(1, np.int64))], suffix="range")
        i = emit("Unsqueeze", [steps], {"axes": [1]}, suffix="i")
        j = emit("Unsqueeze", [steps], {"axes": [0]}, suffix="j")
        mask = emit("Not", [emit("Greater", [j, i], suffix="after")], suffix="mask")
        if trailing:
            mask = emit("Unsqueeze", [mask], {"axes": list(range(2, 2 + trailing))},
                        suffix="mask_trailing")
    one = emit.constant("one", np.asarray(1, kind), kind)
    factors = emit("Where", [mask, rows, one], suffix="factors")
    return emit("ReduceProd", [factors], {"axes": [axis + 1], "keepdims": 0})
