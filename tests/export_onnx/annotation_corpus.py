"""Small annotated ONNX models, built with onnx.helper, each with feeds and its expected verdict.

A violating model is a correct graph with a wrong declaration (graph input, value_info or graph
output), so every model runs; `offender` is the value the first check fails on (None = passes),
`bindings` the binding map a passing run ends with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx.numpy_helper import from_array
from onnx.reference import ReferenceEvaluator
from onnx.reference.shape_annotation_checker import ShapeAnnotationError

F32 = np.float32


def tv(name: str, shape, elem: int = T.FLOAT) -> onnx.ValueInfoProto:
    """A tensor value info; shape None = no shape, a None axis = anonymous, a str axis = symbol."""
    return h.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, value_info=(), initializers=(), opset=21, ir=10) -> onnx.ModelProto:
    graph = h.make_graph(nodes, "g", inputs, outputs, value_info=list(value_info), initializer=list(initializers))
    made = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    made.ir_version = ir
    return made


def ones(*shape, dtype=F32) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) % 3 + 1


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    build: Callable[[], tuple[onnx.ModelProto, dict]]
    offender: str | None = None
    bindings: dict = field(default_factory=dict)

    @property
    def has_bodies(self) -> bool:
        return any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                   for n in self.build()[0].graph.node for a in n.attribute)


# --- main-graph models ------------------------------------------------------------------------


def mlp(h_shape=("batch", 3), y_shape=("batch", 3), x_shape=("batch", 4), batch=5):
    nodes = [h.make_node("MatMul", ["x", "w"], ["h"]), h.make_node("Add", ["h", "b"], ["z"]), h.make_node("Relu", ["z"], ["y"])]
    inits = [from_array(ones(4, 3), "w"), from_array(ones(3), "b")]
    return model(nodes, [tv("x", x_shape)], [tv("y", y_shape)], [tv("h", h_shape)], inits), {"x": ones(batch, 4)}


def hidden(y_shape=("batch", "hidden")):
    """'hidden' is bound by the value_info of an intermediate, then asserted by the output."""
    nodes = [h.make_node("MatMul", ["x", "w"], ["h"]), h.make_node("MatMul", ["h", "w2"], ["y"])]
    inits = [from_array(ones(4, 6), "w"), from_array(ones(6, 2), "w2")]
    m = model(nodes, [tv("x", ["batch", 4])], [tv("y", list(y_shape))], [tv("h", ["batch", "hidden"])], inits)
    return m, {"x": ones(2, 4)}


def doubled(y_shape):
    nodes = [h.make_node("Concat", ["x", "x"], ["y"], axis=0)]
    return model(nodes, [tv("x", [None, 3])], [tv("y", y_shape)]), {"x": ones(2, 3)}


def no_shapes():
    nodes = [h.make_node("Relu", ["x"], ["h"]), h.make_node("Concat", ["h", "x"], ["y"], axis=1)]
    return model(nodes, [tv("x", None)], [tv("y", None)], [tv("h", None)]), {"x": ones(2, 3)}


def unannotated_intermediate():
    nodes = [h.make_node("Concat", ["x", "x"], ["h"], axis=0), h.make_node("ReduceSum", ["h"], ["y"], keepdims=1)]
    return model(nodes, [tv("x", ["n", 3])], [tv("y", [1, 1])]), {"x": ones(4, 3)}


def reshape(y_shape=("rows", 4)):
    shape = from_array(np.array([-1, 4], np.int64), "shape")
    nodes = [h.make_node("Reshape", ["x", "shape"], ["y"])]
    m = model(nodes, [tv("x", ["batch", "steps", 4])], [tv("y", list(y_shape))], initializers=[shape])
    return m, {"x": ones(2, 3, 4)}


def broadcast():
    nodes = [h.make_node("Add", ["a", "b"], ["y"])]
    return model(nodes, [tv("a", ["n", 1]), tv("b", [1, "m"])], [tv("y", ["n", "m"])]), {"a": ones(3, 1), "b": ones(1, 5)}


def two_inputs(x_rows=2, z_rows=2):
    nodes = [h.make_node("Concat", ["x", "z"], ["y"], axis=0)]
    m = model(nodes, [tv("x", ["n", 3]), tv("z", ["n", 3])], [tv("y", [None, 3])])
    return m, {"x": ones(x_rows, 3), "z": ones(z_rows, 3)}


def elementwise(x_shape, y_shape, rows=3, cols=3):
    nodes = [h.make_node("Relu", ["x"], ["y"])]
    return model(nodes, [tv("x", x_shape)], [tv("y", y_shape)]), {"x": ones(rows, cols) if cols else ones(rows)}


def scalar():
    nodes = [h.make_node("Neg", ["x"], ["y"])]
    return model(nodes, [tv("x", [])], [tv("y", [])]), {"x": np.array(2.0, F32)}


def transposed():
    nodes = [h.make_node("Transpose", ["x"], ["y"], perm=[1, 0])]
    return model(nodes, [tv("x", ["batch", "feat"])], [tv("y", ["batch", "feat"])]), {"x": ones(2, 3)}


def two_value_infos(h2_rows=1):
    """h1 and h2 share 'k' in value_info; they are independent, so either may run first."""
    nodes = [
        h.make_node("Relu", ["x"], ["h1"]),
        h.make_node("Slice", ["x", "start", "stop"], ["h2"]),
        h.make_node("Concat", ["h1", "h2"], ["y"], axis=0),
    ]
    inits = [from_array(np.array([0], np.int64), "start"), from_array(np.array([h2_rows], np.int64), "stop")]
    vi = [tv("h1", ["k", 4]), tv("h2", ["k", 4])]
    return model(nodes, [tv("x", ["n", 4])], [tv("y", [None, 4])], vi, inits), {"x": ones(3, 4)}


def parallel_branches():
    nodes = [h.make_node("Relu", ["x"], ["h1"]), h.make_node("Neg", ["x"], ["h2"]), h.make_node("Add", ["h1", "h2"], ["y"])]
    vi = [tv("h1", ["n", 4]), tv("h2", ["n", 4])]
    return model(nodes, [tv("x", ["n", 4])], [tv("y", ["n", 4])], vi), {"x": ones(6, 4)}


def constant_node(c_shape=("k",)):
    c = from_array(ones(4), "c_value")
    nodes = [h.make_node("Constant", [], ["c"], value=c), h.make_node("Add", ["x", "c"], ["y"])]
    return model(nodes, [tv("x", ["k"])], [tv("y", ["k"])], [tv("c", list(c_shape))]), {"x": ones(4)}


def initializer_value_info(w_shape=(4, "units")):
    nodes = [h.make_node("MatMul", ["x", "w"], ["y"])]
    m = model(nodes, [tv("x", ["batch", 4])], [tv("y", ["batch", "units"])], [tv("w", list(w_shape))], [from_array(ones(4, 3), "w")])
    return m, {"x": ones(2, 4)}


def ir3(w_shape=("in", "units"), feed_w=None):
    """Below IR 4 every initializer is also a graph input: a model input with a default."""
    nodes = [h.make_node("MatMul", ["x", "w"], ["y"])]
    inputs = [tv("x", ["batch", "in"]), tv("w", list(w_shape))]
    m = model(nodes, inputs, [tv("y", ["batch", "units"])], initializers=[from_array(ones(4, 3), "w")], opset=8, ir=3)
    feeds = {"x": ones(2, 4)} | ({} if feed_w is None else {"w": feed_w})
    return m, feeds


def output_used_downstream():
    """y is a graph output, also in value_info, and also consumed by a later node."""
    nodes = [h.make_node("Relu", ["x"], ["y"]), h.make_node("Concat", ["y", "x"], ["z"], axis=0)]
    m = model(nodes, [tv("x", ["n", 2])], [tv("y", ["n", 2]), tv("z", ["twice", 2])], [tv("y", ["n", 2])])
    return m, {"x": ones(3, 2)}


def passthrough():
    nodes = [h.make_node("Relu", ["x"], ["y"])]
    return model(nodes, [tv("x", ["batch", 3])], [tv("x", ["batch", 3]), tv("y", ["batch", 3])]), {"x": ones(2, 3)}


def two_faults():
    nodes = [h.make_node("Relu", ["x"], ["y"]), h.make_node("Neg", ["x"], ["z"])]
    m = model(nodes, [tv("x", ["n", 3])], [tv("y", ["n", 5]), tv("z", ["n"])])
    return m, {"x": ones(2, 3)}


def empty_input(y_shape=("n",)):
    one = from_array(ones(1), "one")
    nodes = [h.make_node("Concat", ["x", "one"], ["y"], axis=0)]
    return model(nodes, [tv("x", ["n"])], [tv("y", list(y_shape))], initializers=[one]), {"x": ones(0)}


# --- models with If / Loop / Scan bodies ------------------------------------------------------


def if_model(then_out=("batch", 3), then_vi=("batch", 3), doubled_then=False, outer_vi=None):
    """y = If(c, then: t = Relu(x) [or Concat(x, x)], else: e = Neg(x)); 'batch' is shared."""
    then_node = h.make_node("Concat", ["x", "x"], ["t0"], axis=0) if doubled_then else h.make_node("Relu", ["x"], ["t0"])
    then_vi_list = [tv("t0", list(then_vi))] + ([tv("x", list(outer_vi))] if outer_vi else [])
    then = h.make_graph([then_node, h.make_node("Identity", ["t0"], ["t"])], "then", [], [tv("t", list(then_out))], value_info=then_vi_list)
    other = h.make_graph([h.make_node("Neg", ["x"], ["e"])], "else", [], [tv("e", ["batch", 3])])
    nodes = [h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="choose")]
    m = model(nodes, [tv("x", ["batch", 3]), tv("c", [], T.BOOL)], [tv("y", [None, 3])])
    return m, {"x": ones(2, 3), "c": np.array(True)}


def loop_model(grow=False, u_shape=("twice",), iters=3):
    """Loop 'steps' times over v; u = v + v (value_info only) feeds the scan output w.

    With grow, v doubles every iteration and there is no scan output (it could not be stacked).
    """
    step = h.make_node("Concat", ["v_in", "v_in"], ["v_out"], axis=0) if grow else h.make_node("Relu", ["v_in"], ["v_out"])
    body_nodes = [h.make_node("Identity", ["cond_in"], ["cond_out"]), step]
    outputs = [tv("cond_out", [], T.BOOL), tv("v_out", [None] if grow else ["n"])]
    if not grow:
        body_nodes += [h.make_node("Concat", ["v_out", "v_out"], ["u"], axis=0), h.make_node("Neg", ["u"], ["w"])]
        outputs.append(tv("w", [None]))
    body = h.make_graph(
        body_nodes, "body", [tv("i", [], T.INT64), tv("cond_in", [], T.BOOL), tv("v_in", ["n"])], outputs,
        value_info=[] if grow else [tv("u", list(u_shape))],
    )
    loop_outputs = ["v"] if grow else ["v", "ws"]
    nodes = [h.make_node("Loop", ["steps", "go", "v0"], loop_outputs, body=body, name="repeat")]
    inputs = [tv("steps", [], T.INT64), tv("go", [], T.BOOL), tv("v0", ["n"])]
    m = model(nodes, inputs, [tv("v", [None])] + ([] if grow else [tv("ws", ["steps", None])]))
    return m, {"steps": np.array(iters, np.int64), "go": np.array(True), "v0": ones(3)}


def scan_model(s_in=("d",), y_t=("d",)):
    """Running sum over the rows of x: state s ['d'], scanned x_t ['d'], scan output y_t."""
    body_nodes = [h.make_node("Add", ["s_in", "x_t"], ["s_out"]), h.make_node("Identity", ["s_out"], ["y_t"])]
    body = h.make_graph(
        body_nodes, "body",
        [tv("s_in", list(s_in)), tv("x_t", ["d"])],
        [tv("s_out", ["d"]), tv("y_t", list(y_t))],
    )
    nodes = [h.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1, name="scan")]
    m = model(nodes, [tv("s0", ["d"]), tv("x", ["steps", "d"])], [tv("s", ["d"]), tv("ys", ["steps", "d"])])
    return m, {"s0": ones(3), "x": ones(4, 3)}


C = Case
CASES: list[Case] = [
    # passing models
    C("mlp", "good", lambda: mlp(), None, {"batch": 5}),
    C("value_info_binds_hidden", "good: symbol bound by an intermediate's value_info", lambda: hidden(("batch", 2)), None, {"batch": 2, "hidden": 6}),
    C("anonymous_axes", "good: anonymous axes assert nothing", lambda: doubled([None, None]), None, {}),
    C("no_shapes", "good: no annotation", no_shapes, None, {}),
    C("unannotated_intermediate", "good: unannotated values are not checked", unannotated_intermediate, None, {"n": 4}),
    C("reshape_symbols", "good", lambda: reshape(), None, {"batch": 2, "steps": 3, "rows": 6}),
    C("broadcast", "good", broadcast, None, {"n": 3, "m": 5}),
    C("two_inputs_agree", "good", lambda: two_inputs(), None, {"n": 2}),
    C("zero_size_batch", "good: a symbol may bind 0", lambda: elementwise(["batch", 3], ["batch", 3], rows=0), None, {"batch": 0}),
    C("scalar", "good: rank 0", scalar, None, {}),
    C("parallel_branches", "good", parallel_branches, None, {"n": 6}),
    C("two_value_infos_agree", "good: two value_infos share a symbol", lambda: two_value_infos(3), None, {"n": 3, "k": 3}),
    C("constant_node", "good: a Constant output is checked", lambda: constant_node(), None, {"k": 4}),
    C("initializer_value_info", "good: an initializer's value_info binds", lambda: initializer_value_info(), None, {"units": 3, "batch": 2}),
    C("ir3_initializer_input", "good: IR 3 initializer as input, default used", lambda: ir3(), None, {"batch": 2, "in": 4, "units": 3}),
    C("output_used_downstream", "good: output also in value_info", output_used_downstream, None, {"n": 3, "twice": 6}),
    C("passthrough", "good: an input that is also an output", passthrough, None, {"batch": 2}),
    C("if_body", "good: If body shares 'batch'", lambda: if_model(), None, {"batch": 2}),
    C("loop_body", "good: Loop body, every iteration", lambda: loop_model(), None, {"n": 3, "twice": 6, "steps": 3}),
    C("scan_body", "good: Scan body", lambda: scan_model(), None, {"d": 3, "steps": 4}),
    # violations
    C("rank_output", "rank", lambda: mlp(y_shape=("batch", 3, 1)), "y"),
    C("rank_value_info", "rank", lambda: mlp(h_shape=("batch",)), "h"),
    C("anonymous_wrong_rank", "rank: anonymous axes still fix the rank", lambda: doubled([None, None, None]), "y"),
    C("constant_output", "constant", lambda: mlp(y_shape=("batch", 5)), "y"),
    C("constant_value_info", "constant", lambda: mlp(h_shape=("batch", 7)), "h"),
    C("constant_input", "constant: a broken precondition", lambda: mlp(x_shape=(2, 4)), "x"),
    C("symbol_two_inputs", "symbol conflict between two inputs", lambda: two_inputs(2, 4), "z"),
    C("symbol_input_vs_output", "symbol conflict across an input and an output", transposed, "y"),
    C("symbol_two_value_infos", "symbol conflict between two values", lambda: two_value_infos(1), "h2"),
    C("symbol_bound_by_value_info", "symbol bound by value_info, broken by the output", lambda: hidden(("batch", "hidden")), "y"),
    C("symbol_reshape", "symbol conflict", lambda: reshape(("batch", 4)), "y"),
    C("symbol_bound_to_zero", "symbol conflict: 0 then 1", lambda: empty_input(), "y"),
    C("constant_node_wrong", "constant on a Constant output", lambda: constant_node([5]), "c"),
    C("initializer_value_info_wrong", "constant on an initializer", lambda: initializer_value_info((3, 3)), "w"),
    C("ir3_default_wrong", "constant on an IR 3 initializer input (default)", lambda: ir3((4, 5)), "w"),
    C("ir3_fed_wrong", "constant on an IR 3 initializer input (fed)", lambda: ir3((4, 3), feed_w=ones(4, 2)), "w"),
    C("two_faults", "constant, then rank, in one run", two_faults, "y"),
    C("if_body_constant", "constant inside an If body", lambda: if_model(then_vi=("batch", 9)), "t0"),
    C("if_body_symbol_vs_main", "symbol conflict between an If body and the main graph", lambda: if_model(doubled_then=True, then_vi=(None, 3)), "t"),
    C("if_body_annotates_outer", "a body's annotation on an outer value", lambda: if_model(outer_vi=("batch", 4)), "x"),
    C("loop_body_grows", "symbol conflict across Loop iterations", lambda: loop_model(grow=True), "v_in"),
    C("loop_body_vs_main", "symbol conflict between a Loop body and the main graph", lambda: loop_model(u_shape=("n",)), "u"),
    C("loop_scan_output_constant", "constant inside a Loop body", lambda: loop_model(u_shape=(5,)), "u"),
    C("scan_body_constant", "constant inside a Scan body (Runtime refuses it as declared)", lambda: scan_model(s_in=(9,)), "s_in"),
    C("scan_body_rank", "rank inside a Scan body", lambda: scan_model(y_t=("d", 1)), "y_t"),
]


# --- oracles ----------------------------------------------------------------------------------


def reference_offender(m: onnx.ModelProto, feeds: dict) -> str | None:
    """The value onnx's ReferenceEvaluator(check_shape_annotations=True) names, or None if it passes.

    Its ShapeAnnotationError messages start "Value 'name'" (onnx/reference/shape_annotation_checker.py).
    """
    try:
        ReferenceEvaluator(m, check_shape_annotations=True).run(None, feeds)
    except ShapeAnnotationError as error:
        return re.match(r"Value '([^']*)'", str(error)).group(1)
    return None


def topological_orders(nodes, limit: int = 24) -> list[list[int]]:
    """Up to `limit` orders of `nodes` (indices) in which each node follows what it reads."""
    made_by = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    needs = [{made_by[x] for x in _reads(n) if x in made_by} for n in nodes]
    orders: list[list[int]] = []

    def extend(order: list[int]) -> None:
        if len(orders) >= limit:
            return
        if len(order) == len(nodes):
            orders.append(order)
            return
        for i in range(len(nodes)):
            if i not in order and needs[i] <= set(order):
                extend(order + [i])

    extend([])
    return orders


def _reads(node: onnx.NodeProto) -> set[str]:
    """Names a node reads, including those its bodies read from outside (an over-approximation)."""
    names = set(node.input)
    for attribute in node.attribute:
        for body in [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else attribute.graphs:
            names |= {x for n in body.node for x in _reads(n)}
    return names


def reordered(m: onnx.ModelProto, order: list[int]) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    nodes = [copy.graph.node[i] for i in order]
    copied = [onnx.NodeProto() for _ in nodes]
    for target, source in zip(copied, nodes):
        target.CopyFrom(source)
    del copy.graph.node[:]
    copy.graph.node.extend(copied)
    return copy
