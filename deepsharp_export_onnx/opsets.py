"""Which operator set each node form needs, and the form a node takes in the set chosen.

Writers state what a node computes (`ReduceMean` over axes (1, 2)); this module says the oldest
set holding that form and, once the graph's set is chosen, writes the node as that set has it:
axes as an attribute in the older sets, as an int64 input in the newer ones.

The graph asks for the oldest set that holds every node for its element types (never below 7,
the oldest ONNX Runtime runs; an int64 Max needs 12, ONNX Runtime's first kernel for it), and the
IR version ONNX pairs with it.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import onnx

FLOOR = 7  # ONNX Runtime runs no graph of an older operator set

# The oldest set whose form of each operator we write (numpy broadcasting for arithmetic, the
# attribute forms of the elementwise functions without `consumed_inputs`, and so on).
FIRST: dict[str, int] = {
    "Add": 7, "Sub": 7, "Mul": 7, "Div": 7, "Pow": 7, "MatMul": 1, "Gemm": 7,
    "Relu": 6, "Sigmoid": 6, "Tanh": 6, "Exp": 6, "Log": 6, "Sqrt": 6, "Neg": 6, "Abs": 6,
    "Reciprocal": 6, "Floor": 6, "Ceil": 6,
    "Elu": 6, "LeakyRelu": 6, "Softplus": 1, "Softmax": 1, "LogSoftmax": 1, "Gelu": 20,
    "HardSigmoid": 6, "HardSwish": 14, "PRelu": 7,
    "Erf": 9, "Sin": 7, "Cos": 7, "Max": 8, "Min": 8, "Sum": 8, "Where": 9, "Not": 1,
    "And": 7, "Or": 7, "Equal": 11, "Greater": 9, "Less": 9, "Cast": 6, "Identity": 1,
    "Transpose": 1, "Reshape": 5, "Flatten": 9, "Concat": 4, "Gather": 1, "Slice": 10,
    "Expand": 8, "Shape": 1, "Tile": 6, "ConstantOfShape": 9, "Range": 11, "CumSum": 11,
    "Trilu": 14, "Einsum": 12, "Clip": 11, "Sign": 9, "Xor": 7, "LessOrEqual": 12,
    "GreaterOrEqual": 12, "ArgMax": 1, "ArgMin": 1, "TopK": 10, "GatherElements": 11,
    "GatherND": 11, "ReduceLogSumExp": 1,
    "ReduceSum": 1, "ReduceMean": 1, "ReduceMax": 1, "ReduceMin": 1, "ReduceProd": 1,
    "ReduceL2": 1, "ReduceSumSquare": 1, "Squeeze": 1, "Unsqueeze": 1, "Split": 2,
    # BatchNormalization: set 14's form, whose training_mode=0 default says "normalise by the
    # running statistics" outright; the reference evaluator runs sets 7-13's form (is_test unset,
    # a default momentum) as a training-mode normalisation by the batch's statistics
    "LayerNormalization": 17, "BatchNormalization": 14, "GroupNormalization": 21,
    "InstanceNormalization": 6, "RMSNormalization": 23,
    "IsNaN": 9, "IsInf": 10, "Round": 11, "ReduceL1": 1, "Tan": 7, "Asin": 7, "Acos": 7,
    "Atan": 7, "Sinh": 9, "Cosh": 9, "Asinh": 9, "Acosh": 9, "Atanh": 9,
    "Conv": 1, "ConvTranspose": 1, "MaxPool": 8, "AveragePool": 7, "GlobalAveragePool": 1,
    "GlobalMaxPool": 1, "Pad": 2, "Resize": 11, "LSTM": 7, "GRU": 7,
    "ScatterElements": 11, "ScatterND": 11, "Size": 1, "Mod": 10,
    "BitwiseAnd": 18, "BitwiseOr": 18, "BitwiseXor": 18, "BitwiseNot": 18,
}

# Nodes whose needs depend on their attributes: a function of the attributes giving the set.
_SPECIAL: dict[str, Callable[[dict[str, Any]], int]] = {
    # Before 13, Softmax coerces its input to 2-D at `axis`: the same as a softmax over the last
    # axis only when `axis` is the last one.
    "Softmax": lambda a: 1 if a.get("_last_axis", True) else 13,
    "LogSoftmax": lambda a: 1 if a.get("_last_axis", True) else 13,
    "MaxPool": lambda a: 10 if (a.get("ceil_mode") or any(d != 1 for d in a.get("dilations", ())))
    else 8,
    "AveragePool": lambda a: 19 if any(d != 1 for d in a.get("dilations", ()))
    else (10 if a.get("ceil_mode") else 7),
    # negative indices count from the end from 11 (`_negative`: some index may be negative)
    "Gather": lambda a: 11 if a.get("_negative") else 1,
    "Reshape": lambda a: 14 if a.get("allowzero") else 5,
    # `reduction` add and mul exist from 16, max and min from 18
    "ScatterElements": lambda a: {None: 11, "none": 11, "add": 16, "mul": 16}.get(
        a.get("reduction"), 18),
    "ScatterND": lambda a: 16 if a.get("reduction") else 11,
    # `batch_dims` (a gather per row of the batch) exists from 12
    "GatherND": lambda a: 12 if a.get("batch_dims") else 11,
    # `largest` (and `sorted`) exist from 11; TopK writes `largest` only when 0
    "TopK": lambda a: 11 if "largest" in a else 10,
}

# The oldest set where ONNX Runtime 1.31's CPU kernels run a node on an element type, where that
# is later than FIRST (measured node by node, set by set; the checker's type constraints agree):
# None when no set has a kernel, a form the writers never write (vocabulary_nodes writes And/Or
# for bool Where, Max and Add). The type is that of input 0 (`TYPED_INPUT` names another).
class NoKernel(ValueError):
    """A node form no operator set runs (the tape turns it into ExportRefused, naming the node)."""


_NUMERIC = {"bool": None}
_FLOAT_ONLY = {"int": None, "bool": None}
BY_TYPE: dict[str, dict[str, int | None]] = {
    "Max": {"int": 12, "bool": None}, "Min": {"int": 12, "bool": None},
    "Pow": {"int": 12, "bool": None}, "Clip": {"int": 12, "double": 12, "bool": None},
    "Where": {"bool": None}, "TopK": {"int": 11, "bool": None},
    "Less": _NUMERIC, "Greater": _NUMERIC, "LessOrEqual": _NUMERIC, "GreaterOrEqual": _NUMERIC,
    "Add": _NUMERIC, "Sub": _NUMERIC, "Mul": _NUMERIC, "Div": _NUMERIC, "Neg": _NUMERIC,
    "Abs": _NUMERIC, "Sign": _NUMERIC, "CumSum": _NUMERIC, "Einsum": _NUMERIC,
    "ReduceMax": {"bool": 20}, "ReduceMin": {"bool": 20}, "ReduceSum": _NUMERIC,
    "ReduceProd": _NUMERIC, "ReduceMean": _NUMERIC, "ReduceLogSumExp": _NUMERIC,
    "ArgMax": _NUMERIC, "ArgMin": _NUMERIC, "Pad": {"bool": 13},
    "Exp": _FLOAT_ONLY, "Log": _FLOAT_ONLY, "Sqrt": _FLOAT_ONLY, "Reciprocal": _FLOAT_ONLY,
    "Sin": _FLOAT_ONLY, "Cos": _FLOAT_ONLY, "Relu": {"int": 18, "bool": None},
    "Sigmoid": _FLOAT_ONLY, "Tanh": _FLOAT_ONLY, "Softmax": _FLOAT_ONLY, "LogSoftmax": _FLOAT_ONLY,
    "Gemm": _FLOAT_ONLY, "MatMul": {"bool": None},
    "Gelu": {"double": None, **_FLOAT_ONLY}, "Erf": {"double": None, **_FLOAT_ONLY},
    **{op: {"double": None, **_FLOAT_ONLY} for op in ("Softplus", "HardSigmoid", "HardSwish")},
    "PRelu": {"double": 16, **_FLOAT_ONLY},
    "Floor": _FLOAT_ONLY, "Ceil": _FLOAT_ONLY, "Round": _FLOAT_ONLY, "IsNaN": _FLOAT_ONLY,
    "IsInf": _FLOAT_ONLY, "Mod": _NUMERIC,
    **{op: {"float": None, "double": None, "bool": None}  # integers only
       for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot")},
    **{op: {"double": None, **_FLOAT_ONLY}  # float32 kernels only
       for op in ("Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh")}, "ReduceL1": _NUMERIC, "ReduceL2": _NUMERIC,
}
TYPED_INPUT: dict[str, tuple[int, ...]] = {"Where": (1,), "Pow": (0, 1)}

_KINDS = {onnx.TensorProto.FLOAT: "float", onnx.TensorProto.FLOAT16: "float",
          onnx.TensorProto.BFLOAT16: "float", onnx.TensorProto.DOUBLE: "double",
          onnx.TensorProto.BOOL: "bool"}
_BOOL_RESULTS = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor",
                 "Not", "IsNaN", "IsInf"}
_INT64_RESULTS = {"Shape", "Size", "ArgMax", "ArgMin", "NonZero"}


def kind(elem_type: int) -> str:
    """float, double, int or bool: the families the kernels differ by."""
    return _KINDS.get(elem_type, "int")


def result_types(op_type: str, attrs: dict[str, Any], inputs: list[int | None],
                 outputs: int) -> list[int | None]:
    """The element types of a node's results from its inputs' (None where not known)."""
    first = inputs[0] if inputs else None
    if op_type == "Cast":
        return [attrs["to"]]
    if op_type in _BOOL_RESULTS:
        return [onnx.TensorProto.BOOL] * outputs
    if op_type in _INT64_RESULTS:
        return [onnx.TensorProto.INT64] * outputs
    if op_type == "Where":
        return [inputs[1]]
    if op_type == "TopK":
        return [first, onnx.TensorProto.INT64]
    return [first] * outputs


def _type_needs(op_type: str, types: list[int | None]) -> int:
    table = BY_TYPE.get(op_type)
    if not table:
        return 1
    found = 1
    for index in TYPED_INPUT.get(op_type, (0,)):
        elem = types[index] if index < len(types) else None
        if elem is None or kind(elem) not in table:
            continue
        need = table[kind(elem)]
        if need is None:
            raise NoKernel(f"ONNX Runtime has no kernel for {op_type} on "
                           f"{onnx.TensorProto.DataType.Name(elem).lower()} values at any "
                           f"operator set")
        found = max(found, need)
    return found

# From which set a list attribute becomes an int64 input (at the given input position).
_AS_INPUT: dict[str, tuple[str, int]] = {
    "ReduceSum": ("axes", 13), "ReduceMean": ("axes", 18), "ReduceMax": ("axes", 18),
    "ReduceMin": ("axes", 18), "ReduceProd": ("axes", 18), "ReduceL2": ("axes", 18),
    "ReduceSumSquare": ("axes", 18), "ReduceLogSumExp": ("axes", 18),
    "Squeeze": ("axes", 13), "Unsqueeze": ("axes", 13),
    "Split": ("split", 13),
}


def needs(op_type: str, attrs: dict[str, Any], types: list[int | None] | None = None) -> int:
    """The oldest operator set holding this node in the form written, for its inputs' element
    types (ONNX TensorProto types, None where not known)."""
    by_type = _type_needs(op_type, list(types or []))
    if op_type in _SPECIAL:
        return max(FIRST.get(op_type, 1), _SPECIAL[op_type](attrs), by_type)
    try:
        return max(FIRST[op_type], by_type)
    except KeyError:
        raise KeyError(f"opsets: no entry for operator {op_type!r}; add it to FIRST") from None


def ir_version(opset: int, imports: list | None = None) -> int:
    """The IR version ONNX pairs with `opset` (7 -> 3, 20 -> 9), or with every set `imports`
    (OperatorSetIdProtos) names."""
    return onnx.helper.find_min_ir_version_for(imports or [onnx.helper.make_opsetid("", opset)])


# Operators of other domains than ONNX's own: the set of their domain each needs (LabelEncoder's
# keys_* / values_* attributes arrive in ai.onnx.ml 2).
DOMAINS: dict[str, dict[str, int]] = {"ai.onnx.ml": {"LabelEncoder": 2}}


def domains_needed(nodes: list[tuple[str, str]]) -> list[tuple[str, int]]:
    """(domain, set) for every other domain the (domain, op_type) pairs use, in name order."""
    needed: dict[str, int] = {}
    for domain, op_type in nodes:
        if domain:
            try:
                version = DOMAINS[domain][op_type]
            except KeyError:
                raise KeyError(f"opsets: no entry for operator {op_type!r} of domain "
                               f"{domain!r}; add it to DOMAINS") from None
            needed[domain] = max(needed.get(domain, 1), version)
    return sorted(needed.items())


def materialize(op_type: str, inputs: list[str], attrs: dict[str, Any], opset: int,
                constant: Callable[[str, np.ndarray], str]) -> tuple[list[str], dict[str, Any]]:
    """The node's inputs and attributes as set `opset` has them. `constant(label, array)` makes
    an initializer for an attribute that has become an input. Keys starting with `_` are notes
    for `needs`, not attributes."""
    attrs = {k: v for k, v in attrs.items() if not k.startswith("_")}
    inputs = list(inputs)
    moved = _AS_INPUT.get(op_type)
    if moved is not None and moved[0] in attrs and opset >= moved[1]:
        values = np.asarray(attrs.pop(moved[0]), dtype=np.int64)
        inputs.append(constant(moved[0], values))
    if op_type == "Pad" and opset >= 11:
        inputs.append(constant("pads", np.asarray(attrs.pop("pads"), dtype=np.int64)))
        if "value" in attrs:
            inputs.append(constant("value", np.asarray(attrs.pop("value"), dtype=np.float32)))
    return inputs, attrs
