"""What the importer refuses in graphs from elsewhere, each by its message: one line per node,
naming the node, its op type and why, and the layer it would be read as; the op types read are
listed once, and a refused node does not drag false refusals after it."""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from deepsharp import MeanSquaredError
from deepsharp_export_onnx import ImportRefused, OnnxFile
from tests.support.foreign import Foreign
from tests.support.graph_edits import node_of, set_attr


def _constant(model: onnx.ModelProto, name: str, array: np.ndarray) -> None:
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] == name:
            del node.attribute[:]
            node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(array)))
            return
    for i, t in enumerate(model.graph.initializer):
        if t.name == name:
            model.graph.initializer[i].CopyFrom(numpy_helper.from_array(array, name))
            return
    raise KeyError(name)


def _last_step_of_bidirectional(model: onnx.ModelProto) -> None:
    """out[:, -1] of a bidirectional GRU's series (the tagger's head reads one step)."""
    matmul = node_of(model, "MatMul")
    model.graph.initializer.append(numpy_helper.from_array(np.array(-1, np.int64), "last"))
    gather = helper.make_node("Gather", [matmul.input[0], "last"], ["step"], name="last_step",
                              axis=1)
    matmul.input[0] = "step"
    model.graph.node.insert(list(model.graph.node).index(matmul), gather)
    del model.graph.output[0].type.tensor_type.shape.dim[1]


def _initial_states(model: onnx.ModelProto) -> None:
    expand = node_of(model, "Expand")
    _constant(model, expand.input[0], np.array(1.0, np.float32))


def _batch_of_two_billion(model: onnx.ModelProto) -> None:
    """A declared batch of 2**31 - 1 (a fuzzed graph): too large to run the region on."""
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2**31 - 1


# name, fixture, the change, what the refusal says
CASES: list[tuple[str, str, Callable[[onnx.ModelProto], None], str]] = [
    ("lstm-clip", "lstm.ts17", lambda m: set_attr(node_of(m, "LSTM"), "clip", 1.0),
     "node '/rnn/LSTM' (LSTM): lstm reads a node with its default activations, zero initial "
     "states and no peepholes, forward or bidirectional; this one has clip=1.0"),
    ("lstm-batch-major", "lstm.dynamo18", lambda m: set_attr(node_of(m, "LSTM"), "layout", 1),
     "this one has layout=1"),
    ("lstm-initial-states", "lstm.ts17fixed", _initial_states,
     "this one has initial states that are not zeros"),
    ("gru-reset-before", "bigru_last.ts17",
     lambda m: set_attr(node_of(m, "GRU"), "linear_before_reset", 0),
     "node '/rnn/GRU' (GRU): gru reads a node with its default activations, zero initial states "
     "and no peepholes, forward or bidirectional; this one has linear_before_reset=0 (PyTorch's "
     "GRU, and ours, reset after the product)"),
    ("bidirectional-last-step", "bigru_tagger.ts17", _last_step_of_bidirectional,
     "node 'last_step' (Gather): the last step of a bidirectional series is not the layer's last "
     "state (the reverse direction's is at the first step); read h_n, or the whole series"),
    ("a-middle-step", "lstm_out_last.ts17",
     lambda m: _constant(m, node_of(m, "Gather", 1).input[1], np.array(3, np.int64)),
     "node '/Gather' (Gather): step 3 of the series: only the last step reads as the layer's last "
     "state"),
    ("attention-softmax-over-queries", "encoder.ts17",
     lambda m: set_attr(node_of(m, "Softmax"), "axis", 2),
     "node '/layer/self_attn/Softmax' (Softmax): read as the Softmax of an attention from "
     "'input': no multi_head_attention with its projections gives what these nodes compute"),
    ("attention-batch-too-large", "attention.ts17fixed", _batch_of_two_billion,
     "read as the Softmax of an attention from 'input': its input is declared 2147483647 x "),
    ("conv-groups-mismatch", "cnn_view.ts17",
     lambda m: set_attr(node_of(m, "Conv"), "group", 2),
     "node '/conv/Conv' (Conv): its kernel reads 4 channels, the value 'input' (dims ['batch', 2, "
     "9, 9]) has 2 on its channel axis"),
]


@pytest.mark.parametrize("fixture, change, message", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_refused(fixture, change, message):
    case = Foreign.load(fixture)
    change(case.model)
    with pytest.raises(ImportRefused) as caught:
        OnnxFile(case.loss, output=case.output).read(case.model)
    text = str(caught.value)
    assert message in text
    assert "no reader for op type LSTM" not in text and "no reader for op type GRU" not in text


def test_a_refused_recurrent_node_drags_no_refusal_after_it():
    case = Foreign.load("lstm2.ts17")
    set_attr(node_of(case.model, "LSTM"), "clip", 1.0)
    with pytest.raises(ImportRefused) as caught:
        case.read()
    assert caught.value.faults == [
        "node '/rnn/LSTM' (LSTM): lstm reads a node with its default activations, zero initial "
        "states and no peepholes, forward or bidirectional; this one has clip=1.0"]


def test_a_time_major_series_is_refused_at_its_lstm():
    """nn.LSTM(batch_first=False): the graph's input is (steps, batch, channels)."""
    case = Foreign.load("lstm.ts17")
    turn = node_of(case.model, "Transpose")
    node_of(case.model, "LSTM").input[0] = turn.input[0]
    case.model.graph.node.remove(turn)
    with pytest.raises(ImportRefused) as caught:
        case.read()
    assert caught.value.faults[0] == (
        "node '/rnn/LSTM' (LSTM): lstm reads a batch-major series (batch, steps, channels) turned "
        "time-major by Transpose [1, 0, 2] just before the node; this one reads 'input' as it is "
        "(a graph taking its series time-major, as nn.LSTM(batch_first=False) is exported, is "
        "read as a network taking them batch-first when asked: OnnxFile(loss, "
        "series='batch_first'))")
    assert len(caught.value.faults) == 1  # and nothing after it refused again


def test_unknown_op_types_one_line_each_and_the_list_once():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["a"], name="dense"),
             helper.make_node("Hardmax", ["a"], ["b"], name="weird"),
             helper.make_node("Round", ["b"], ["y"], name="rounded")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     ["batch", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])],
                          initializer=[numpy_helper.from_array(np.ones((3, 2), np.float32), "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ImportRefused) as caught:
        OnnxFile(MeanSquaredError()).read(model)
    faults = caught.value.faults
    assert faults[0] == ("node 'weird' (Hardmax): no reader for op type Hardmax: no layer is read "
                         "from it alone")
    assert faults[1] == ("node 'rounded' (Round): no reader for op type Round: no layer is read "
                         "from it alone")
    assert faults[2].startswith("op types read: AveragePool, BatchNormalization, Clip, Conv,")
    assert len(faults) == 3 and str(caught.value).count("Gemm") == 1


def test_a_malformed_node_is_refused_by_name():
    nodes = [helper.make_node("Gemm", ["x"], ["y"], name="half_a_gemm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                     ["batch", 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(ImportRefused, match="node 'half_a_gemm' \\(Gemm\\): its kernel \\(input 1\\) "
                                            "must be a constant"):
        OnnxFile(MeanSquaredError()).read(model)


@pytest.mark.parametrize("index", [-1, 0])
def test_one_step_of_a_series_is_refused_with_the_ways_out(index):
    """PyTorch's `linear(x)[:, -1]` over a series that no recurrent layer made: no layer of ours
    takes one step of a series."""
    generator = np.random.default_rng(0)
    inits = [numpy_helper.from_array(generator.standard_normal(s).astype(np.float32), n)
             for n, s in (("a", (3, 4)), ("b", (4, 2)))]
    inits.append(numpy_helper.from_array(np.array(index, np.int64), "step"))
    nodes = [helper.make_node("MatMul", ["x", "a"], ["h"], name="project"),
             helper.make_node("Gather", ["h", "step"], ["one"], name="pick", axis=1),
             helper.make_node("MatMul", ["one", "b"], ["y"], name="head")]
    graph = helper.make_graph(
        nodes, "one_step", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    with pytest.raises(ImportRefused, match=rf"node 'pick' \(Gather\): step {index} of a series: "
                                            r"no layer takes one step .* take the mean over the "
                                            r"steps or a global pool instead"):
        OnnxFile(MeanSquaredError()).read(model)


def test_one_direction_of_a_bidirectional_last_state_is_refused_by_name():
    """h_n[-1] of a bidirectional GRU (a common PyTorch readout) is the reverse direction's last
    state alone: the refusal says so, and what reads."""
    case = Foreign.load("bigru_last.ts17")
    concat = next(n for n in case.model.graph.node if n.name == "/Concat")
    forward = next(n for n in case.model.graph.node if n.output[0] == concat.input[0])
    gemm = node_of(case.model, "Gemm")
    gemm.input[0] = concat.input[1]
    case.model.graph.node.remove(concat)
    case.model.graph.node.remove(forward)
    with pytest.raises(ImportRefused) as caught:
        case.read()
    assert caught.value.faults[0] == (
        "node '/Gather_1' (Gather): h_n[-1] of a bidirectional layer is the reverse direction's "
        "last state alone: no layer gives one direction's state (torch.cat((h_n[-2], h_n[-1]), "
        "dim=1) reads as the layer's last states)")
