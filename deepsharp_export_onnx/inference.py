"""onnx's shape inference, guarded: the one way this package calls it.

onnx 1.23's inference dereferences a missing input type in some operators of other domains
(`ai.onnx.ml` LabelEncoder: a segmentation fault, which no `except` catches) when the node's
input has no type, as in a damaged or hostile graph. So a node of another domain is shown to
inference only once every input it reads has a type, made by an earlier node: a first pass infers the graph without
them, each pass admits the nodes whose inputs are typed by then, and what is never admitted stays
out (its outputs are left bare, which every caller already reads as "not known").

    inferred = infer_shapes(model, strict_mode=True, data_prop=True)

Data propagation is asked for only where it is safe: onnx follows a shape operand's values into
the ranks it infers, so a hostile graph whose Reshape takes a shape of 150,000 values (a float
tensor flattened into it) makes inference build tensors of rank 150,000 for seconds. A pass
without propagation first finds each shape operand's length; when one is longer than any rank
a graph has (`MAX_RANK`), the values are not propagated.
"""

from __future__ import annotations

import math

import onnx

DEFAULT_DOMAINS = ("", "ai.onnx")
MAX_RANK = 64
# the inputs whose values are a shape, axes, sizes or bounds: a list at most a rank long
SHAPE_OPERANDS = {"Reshape": (1,), "Expand": (1,), "ConstantOfShape": (0,), "Tile": (1,),
                  "Slice": (1, 2, 3, 4), "Squeeze": (1,), "Unsqueeze": (1,), "Pad": (1,),
                  "Split": (1,), "Resize": (2, 3), "Upsample": (1,), "Range": (0, 1, 2),
                  "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,),
                  "ReduceProd": (1,), "ReduceL2": (1,), "ReduceSumSquare": (1,), "TopK": (1,),
                  "OneHot": (1,), "CumSum": (1,)}


def infer_shapes(model: onnx.ModelProto, *, strict_mode: bool = False,
                 data_prop: bool = False) -> onnx.ModelProto:
    """`onnx.shape_inference.infer_shapes(model, strict_mode, data_prop)`, with the nodes of other
    domains admitted only once their inputs are typed (see the module docstring)."""
    if data_prop and _long_shape_operand(_guarded(model, strict_mode=False, data_prop=False)):
        data_prop = False
    return _guarded(model, strict_mode=strict_mode, data_prop=data_prop)


def _long_shape_operand(inferred: onnx.ModelProto) -> bool:
    graph = inferred.graph
    lengths = {}
    for info in (*graph.input, *graph.value_info, *graph.output):
        dims = info.type.tensor_type.shape.dim
        if info.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            lengths[info.name] = math.prod(d.dim_value for d in dims)
    lengths.update({t.name: math.prod(t.dims) for t in graph.initializer})
    return any(lengths.get(node.input[i], 0) > MAX_RANK for node in graph.node
               for i in SHAPE_OPERANDS.get(node.op_type, ()) if i < len(node.input))


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
                 and all(not name or (name in typed and before.get(name, -1) < i)
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
