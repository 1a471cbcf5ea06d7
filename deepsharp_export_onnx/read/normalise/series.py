"""`OnnxFile(loss, series="batch_first")`: a graph taking its series time-major (steps, batch,
channels), as PyTorch exports `nn.LSTM`/`nn.GRU` with their default `batch_first=False`, read
as a network taking them batch-first (batch, steps, channels), as every network does (fit
batches along the first axis).

The graph is rewritten, exactly, into the form a `batch_first=True` export has: its input taken
batch-first and turned time-major by a Transpose [1, 0, 2] in front. The network read then takes
batch-first series, and exports as such. Its output must be one answer per series (a head on
the last state, `fc(h_n[-1])`); a series output, kept time-major through the layers after the
recurrent one, is refused.
"""

from __future__ import annotations

import onnx
from onnx import helper

from deepsharp_export_onnx.errors import ImportRefused
from deepsharp_export_onnx.read.normalise.graph import Graph

TURN = [1, 0, 2]


def batch_first_series(g: Graph) -> None:
    if len(g.inputs) != 1 or len(g.dims.get(g.inputs[0].name, ())) != 3:
        dims = [g.dims.get(i.name) for i in g.inputs]
        raise ImportRefused([f"series='batch_first' reads a graph whose one input is a series "
                             f"(steps, batch, channels); this one's inputs have dims {dims}"])
    taken = g.inputs[0]
    dims = g.dims[taken.name]
    inner = f"{taken.name}/time_major"
    g.rename_uses(taken.name, inner)
    g.nodes.insert(0, helper.make_node("Transpose", [taken.name], [inner], perm=TURN,
                                       name=f"{taken.name}/to_time_major"))
    g.dims[inner] = dims
    g.inputs[0] = _turned(taken)
    g.note(g.inputs[0])
    out = g.outputs[0]
    if len(g.dims.get(out.name, ())) > 2:
        raise ImportRefused([f"series='batch_first' reads a graph whose output is one answer per "
                             f"series (batch, ...), as a head on the last state gives; the output "
                             f"{out.name!r} has dims {g.dims[out.name]}, a series the graph keeps "
                             f"time-major through the layers after the recurrent one, which are "
                             f"not turned"])


def _turned(info: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    turned = onnx.ValueInfoProto()
    turned.CopyFrom(info)
    dims = turned.type.tensor_type.shape.dim
    first, second = onnx.TensorShapeProto.Dimension(), onnx.TensorShapeProto.Dimension()
    first.CopyFrom(dims[1])
    second.CopyFrom(dims[0])
    dims[0].CopyFrom(first)
    dims[1].CopyFrom(second)
    return turned
