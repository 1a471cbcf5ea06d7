"""The normalising pass the importer runs before any reader: a graph from any exporter and operator
set becomes an equivalent graph in one form per layer.

    model = normalise(model, output="probabilities")

1. The output read is chosen (a graph with several must be told which), and the nodes it does
   not need are dropped; a graph taking time-major series is turned to take them batch-first
   when asked (series.py).
2. `Constant` nodes become named constants (fold.py).
3. Every value is annotated: onnx's shape inference, run at two probe sizes of the input's
   symbols (the tape's `annotate_bare_values`), tells numbers from symbols; once more after the
   rounds below when they gave a Reshape its constant shape (the dims after it then known).
4. Until nothing changes: constant-only nodes are folded, `Shape` nodes read as late as they
   can and the shapes computed from them written as constants (shapes.py), no-ops are dropped
   and one form is given to what exporters write several ways (rewrite.py), and decompositions
   are fused (fuse.py); dead nodes go. When nothing else changes, a Reshape whose computed
   shape is not a constant reads its sizes off the nearest values that hold them (shapes.py).

Every step is exact: the normalised graph computes what the graph did.
"""

from __future__ import annotations

import onnx

from deepsharp_export_onnx.errors import ImportRefused
from deepsharp_export_onnx.graph import annotate_bare_values
from deepsharp_export_onnx.read.normalise.fold import constant_nodes, fold
from deepsharp_export_onnx.read.normalise.fuse import FUSIONS
from deepsharp_export_onnx.read.normalise.graph import Graph
from deepsharp_export_onnx.read.normalise.rewrite import REWRITES
from deepsharp_export_onnx.read.normalise.series import batch_first_series
from deepsharp_export_onnx.read.normalise.shapes import (
    late_shapes, near_shapes, resolve_reshapes, transposes_through_reshapes,
)
from deepsharp_export_onnx.inference import infer_shapes

ROUNDS = 12
ANNOTATIONS = 4  # annotations at most: one, then one more after each pass that resolves
MALFORMED = (IndexError, KeyError, ValueError, TypeError, AttributeError)
INVENTED = "unk__"  # the prefix of the symbols onnx's inference makes up for unknown sizes
BATCH = "batch"


def normalise(model: onnx.ModelProto, output: str | None = None,
              series: str | None = None) -> onnx.ModelProto:
    g = Graph(model, [choose_output(model, output)])
    step = "reading the graph"
    try:
        if series == "batch_first":
            batch_first_series(g)
        _name_anonymous_batch(g)
        constant_nodes(g)
        g.prune()
        annotate(g)
        for passes_left in reversed(range(ANNOTATIONS)):
            resolved = False
            for _ in range(ROUNDS):
                changed = False
                for rule in (fold, late_shapes, resolve_reshapes, transposes_through_reshapes,
                             *REWRITES, *FUSIONS):
                    step = rule.__name__
                    done = rule(g)
                    changed |= done
                    resolved |= done and rule is resolve_reshapes
                if not changed:  # the last resort: its Shape readers would stop patterns above
                    step = near_shapes.__name__
                    changed = near_shapes(g)
                g.prune()
                if not changed:
                    break
            if not (passes_left and resolved):
                break
            # a Reshape given its constant shape tells inference the dims after it (in operator
            # sets whose inference does not follow Shape into Reshape): annotate once more
            step = "annotating again"
            annotate(g)
        return g.to_model()
    except MALFORMED as error:  # a node a pass could not follow: said, not raised
        raise ImportRefused([f"normalising ({step}): a malformed node ({type(error).__name__}: "
                             f"{error})"]) from None


def choose_output(model: onnx.ModelProto, output: str | None) -> onnx.ValueInfoProto:
    outputs = list(model.graph.output)
    names = [o.name for o in outputs]
    if output is None:
        if len(outputs) == 1:
            return outputs[0]
        raise ImportRefused([f"the graph has {len(outputs)} outputs {names}: choose the one to "
                             f"read, OnnxFile(loss, output={names[-1]!r})"])
    found = next((o for o in outputs if o.name == output), None)
    if found is None:
        raise ImportRefused([f"output={output!r}: the graph's outputs are {names}"])
    return found


def _name_anonymous_batch(g: Graph) -> None:
    """An input whose first axis has neither a size nor a name (scikit-learn's converter writes
    them so) gets the symbol `batch`, so inference can follow it."""
    for index, info in enumerate(g.inputs):
        dims = info.type.tensor_type.shape.dim if info.type.tensor_type.HasField("shape") else []
        if dims and not dims[0].HasField("dim_value") and not dims[0].dim_param:
            copy = onnx.ValueInfoProto()
            copy.CopyFrom(info)
            copy.type.tensor_type.shape.dim[0].dim_param = BATCH
            g.inputs[index] = copy
            g.note(copy)


# operators whose output has their input's shape, which onnx 1.23's inference leaves bare
# (GroupNormalization at opset 21, a function), and every value after them with it
SHAPE_KEEPING = frozenset({"GroupNormalization"})


def _through_shape_keeping(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` inferred again past each SHAPE_KEEPING node, its output given its input's type."""
    for _ in range(sum(n.op_type in SHAPE_KEEPING for n in model.graph.node)):
        graph = model.graph
        known = {v.name: v for v in [*graph.input, *graph.value_info, *graph.output]
                 if v.type.tensor_type.HasField("shape")}
        added = False
        for node in graph.node:
            if node.op_type in SHAPE_KEEPING and node.input and node.input[0] in known \
                    and node.output and node.output[0] not in known:
                info = graph.value_info.add()
                info.CopyFrom(known[node.input[0]])
                info.name = node.output[0]
                added = True
        if not added:
            break
        model = infer_shapes(model, strict_mode=False, data_prop=True)
    return model


def annotate(g: Graph) -> None:
    """Annotate every value: numbers where fixed, the input's symbols where they follow them
    (inference at two probe sizes); where that fails (a graph strict inference refuses), what
    onnx's symbolic inference finds, its made-up symbols left unknown."""
    model = g.to_model()
    del model.graph.value_info[:]
    try:
        symbolic = _through_shape_keeping(infer_shapes(model, strict_mode=False, data_prop=True))
    except Exception:  # inference refusing a graph leaves its values bare: readers say what they miss
        symbolic = model
    for info in symbolic.graph.value_info:
        g.note(info, invented=INVENTED)
    try:
        annotate_bare_values(model)
    except Exception:
        return
    for info in model.graph.value_info:
        g.note(info)
