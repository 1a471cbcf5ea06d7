"""onnx's shape inference, guarded: the one way this package calls it.

onnx 1.23's inference dereferences a missing input type in some operators of other domains
(`ai.onnx.ml` LabelEncoder: a segmentation fault, which no `except` catches) when the node's
input has no type, as in a damaged or hostile graph. So a node of another domain is shown to
inference only once every input it reads has a type, made by an earlier node: a first pass
infers the graph without them, each pass admits the nodes whose inputs are typed by then, and
what is never admitted stays out (its outputs are left bare, which every caller already reads as
"not known").

    inferred = infer_shapes(model, strict_mode=True, data_prop=True)

A shape operand that is no shape is hostile: onnx makes a Reshape's, Expand's,
ConstantOfShape's or Unsqueeze's result as many axes as its shape operand has values, and with
data propagation follows the values through Concat and the like, so a graph whose Reshape takes
a data tensor flattened into its shape (150,000 values, or 16 million at a probe's sizes) keeps
inference building ranks of that size for seconds to minutes. So the shape operands are checked
first, by what they are computed from (`shape_like`: Shape results and small constants, through
shape arithmetic); a rank maker whose operand is no shape is left out of inference (its outputs
stay bare, as every caller reads "not known"), and data propagation is asked for only when every
shape operand is a shape.
"""

from __future__ import annotations

import math

import onnx
from onnx import numpy_helper

DEFAULT_DOMAINS = ("", "ai.onnx")
MAX_RANK = 64
# the longest shape inference is let build from a shape operand (a few thousand axes cost
# nothing; the hostile graphs asked for hundreds of thousands)
SHAPE_BOUND = 4096
# the inputs whose values are a shape, axes, sizes or bounds: a list at most a rank long
SHAPE_OPERANDS = {"Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Tile": (1,),
                  "Slice": (1, 2, 3, 4), "Squeeze": (1,), "Unsqueeze": (1,), "Pad": (1,),
                  "Split": (1,), "Resize": (2, 3), "Upsample": (1,), "Range": (0, 1, 2),
                  "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,),
                  "ReduceProd": (1,), "ReduceL2": (1,), "ReduceSumSquare": (1,), "TopK": (1,),
                  "OneHot": (1,), "CumSum": (1,)}


# the nodes whose result has as many axes as a shape operand has values
RANK_MAKERS = {"Reshape": 1, "Expand": 1, "ConstantOfShape": 0, "Unsqueeze": 1}


def infer_shapes(model: onnx.ModelProto, *, strict_mode: bool = False,
                 data_prop: bool = False) -> onnx.ModelProto:
    """`onnx.shape_inference.infer_shapes(model, strict_mode, data_prop)`, with the nodes of other
    domains admitted only once their inputs are typed, and the nodes a shape operand that is no
    shape would make ranks of left out (see the module docstring)."""
    shapes = shape_like(model)
    nodes = model.graph.node
    unsafe = {i for i, node in enumerate(nodes) if node.domain in DEFAULT_DOMAINS
              and any(node.input[k] not in shapes for k in SHAPE_OPERANDS.get(node.op_type, ())
                      if k < len(node.input) and node.input[k])}
    long = {i for i in unsafe if nodes[i].op_type in RANK_MAKERS}
    return _guarded(_without(model, long), strict_mode=strict_mode,
                    data_prop=data_prop and not unsafe)


# the operations a shape is computed with: the inputs that carry the shape through (None: every
# input) and how long the result can be from their lengths (elementwise: the longest)
_CONCAT, _LONGEST = sum, max
_FIRST, _SECOND = (lambda lengths: lengths[0]), (lambda lengths: lengths[1])
_SHAPE_ARITHMETIC = {op: (None, _LONGEST) for op in (
    "Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Max", "Min", "Cast", "Identity", "Equal",
    "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where", "Sign",
    "Floor", "Ceil", "Round", "Sqrt", "Clip")}
_SHAPE_ARITHMETIC.update({
    "Concat": (None, _CONCAT), "Slice": ((0,), _FIRST), "Gather": ((0, 1), _SECOND),
    "GatherElements": ((0, 1), _SECOND), "Squeeze": ((0,), _FIRST), "Unsqueeze": ((0,), _FIRST),
    "Flatten": ((0,), _FIRST), "Transpose": ((0,), _FIRST),
    "ReduceProd": ((0,), _FIRST), "ReduceSum": ((0,), _FIRST), "ReduceMax": ((0,), _FIRST),
    "ReduceMin": ((0,), _FIRST)})


def shape_like(model: onnx.ModelProto) -> set[str]:
    """The values that are shapes, or computed from shapes and small constants only, and at most
    `SHAPE_BOUND` long: Shape and Size results (a rank: at most `MAX_RANK` counted), constants,
    and what shape
    arithmetic (Concat, Gather, Slice, Add, ...) makes of them, in node order, each with a bound
    on its length. A value computed from data (a tensor flattened, a Range, a graph input) is none,
    however it is reshaped; nor is anything that may be longer than `SHAPE_BOUND`."""
    bound = {t.name: math.prod(t.dims) for t in model.graph.initializer}
    constants = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.domain not in DEFAULT_DOMAINS:
            continue
        if node.op_type in ("Shape", "Size"):
            bound.update((o, MAX_RANK) for o in node.output)
        elif node.op_type == "Constant":
            value = next((a for a in node.attribute if a.name == "value"), None)
            bound.update((o, 1 if value is None else math.prod(value.t.dims)) for o in node.output)
            if value is not None:
                constants.update((o, value.t) for o in node.output)
        elif node.op_type == "Reshape":
            # inference takes the result's length from the target, which in a damaged graph need
            # not hold the input's values (one value made 2^31 long): a shape only when the
            # target is the constant [-1] or a small [n]
            length = _list_length(constants.get(node.input[1])) if len(node.input) > 1 else None
            if node.input[0] in bound and length is not None:
                bound.update((o, length or bound[node.input[0]]) for o in node.output)
        elif node.op_type in _SHAPE_ARITHMETIC:
            carried, length = _SHAPE_ARITHMETIC[node.op_type]
            operands = [n for k, n in enumerate(node.input)
                        if n and (carried is None or k in carried)]
            if operands and len(operands) == len(carried or operands) and \
                    all(bound.get(n, SHAPE_BOUND + 1) <= SHAPE_BOUND for n in operands):
                bound.update((o, length([bound[n] for n in operands])) for o in node.output)
    return {name for name, most in bound.items() if most <= SHAPE_BOUND}


def _list_length(target: onnx.TensorProto | None) -> int | None:
    """The length of the list (rank 1) a Reshape to this constant target makes: n for [n] up to
    SHAPE_BOUND, 0 for [-1] (the input's length); None for any other target."""
    if target is None or list(target.dims) != [1] or target.data_type != onnx.TensorProto.INT64:
        return None
    try:
        (value,) = numpy_helper.to_array(target).tolist()
    except ValueError:  # a damaged constant: its bytes do not hold one value
        return None
    return 0 if value == -1 else value if 0 < value <= SHAPE_BOUND else None


def _guarded(model: onnx.ModelProto, *, strict_mode: bool, data_prop: bool) -> onnx.ModelProto:
    foreign = [i for i, n in enumerate(model.graph.node) if n.domain not in DEFAULT_DOMAINS]
    if not foreign:
        return onnx.shape_inference.infer_shapes(model, strict_mode=strict_mode,
                                                 data_prop=data_prop)
    # inference walks the nodes in order: an input made by a later node is untyped when read
    before = {o: i for i, n in enumerate(model.graph.node) for o in n.output}
    admitted: set[int] = set()
    while True:
        typed = _typed_names(onnx.shape_inference.infer_shapes(
            _without(model, set(foreign) - admitted), strict_mode=False, data_prop=data_prop))
        ready = {i for i in foreign if i not in admitted
                 and all(name in typed and before.get(name, -1) < i  # "" (no input) crashes too
                         for name in model.graph.node[i].input)}
        if not ready:
            break
        admitted |= ready
    return onnx.shape_inference.infer_shapes(_without(model, set(foreign) - admitted),
                                             strict_mode=strict_mode, data_prop=data_prop)


def _without(model: onnx.ModelProto, dropped: set[int]) -> onnx.ModelProto:
    if not dropped:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    del copy.graph.node[:]
    copy.graph.node.extend(n for i, n in enumerate(model.graph.node) if i not in dropped)
    return copy


def _typed_names(model: onnx.ModelProto) -> set[str]:
    graph = model.graph
    infos = (*graph.input, *graph.value_info, *graph.output)
    return ({i.name for i in infos if i.type.WhichOneof("value") is not None
             and (i.type.WhichOneof("value") != "tensor_type" or i.type.tensor_type.elem_type)}
            | {t.name for t in graph.initializer} | {t.values.name for t in graph.sparse_initializer})
