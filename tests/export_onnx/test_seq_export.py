"""Every sequence layer held to the standard by `check_layer`: gradients, export, check_model,
ONNX Runtime and the reference evaluator at batches 1, 5, 32 and at series lengths 1 and 23 (the
example's is 7), import with the same numbers, byte-identical re-export, training again."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import BinaryCrossEntropy, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp_export_onnx import OnnxExport
from tests.support import check_layer
from tests.support.onnx_check import assert_graph_matches, assert_round_trip

VOCABULARY, PAD = 30, 0
LENGTHS = (1, 23)


def ids_batch(n: int, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    """Ids with padding at the end: some series full, some empty, the rest in between."""
    steps = shape[0]
    ids = generator.integers(1, VOCABULARY, (n, steps))
    lengths = generator.integers(0, steps + 1, n)
    lengths[: min(n, 2)] = [steps, 0][: min(n, 2)]
    ids[np.arange(steps)[None, :] >= lengths[:, None]] = PAD
    return ids


def plain_ids(n: int, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    return generator.integers(0, VOCABULARY, (n, *shape))


def padded_series(n: int, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    """Float series whose tails are zero steps (at least one step real)."""
    x = generator.standard_normal((n, *shape)).astype(np.float32)
    lengths = generator.integers(1, shape[0] + 1, n)
    x[np.arange(shape[0])[None, :] >= lengths[:, None]] = 0
    return x


SERIES = Shape(7, 4)
IDS = Shape(7)

CASES = [
    ("embedding", Sequential().embedding(VOCABULARY, 4), IDS, plain_ids, {}),
    ("lstm", Sequential().lstm(5), SERIES, None, {}),
    ("lstm-sequences-bidirectional-2", Sequential().lstm(3, return_sequences=True,
                                                         bidirectional=True, layers=2), SERIES, None, {}),
    ("gru", Sequential().gru(5, bidirectional=True), SERIES, None, {}),
    ("gru-sequences-2", Sequential().gru(3, return_sequences=True, layers=2).dense(2), SERIES, None, {}),
    ("padded-lstm", Sequential().embedding(VOCABULARY, 4, padding_index=PAD).lstm(
        3, bidirectional=True, layers=2), IDS, ids_batch, {}),
    ("padded-gru-sequences", Sequential().embedding(VOCABULARY, 4, padding_index=PAD).gru(
        3, return_sequences=True, bidirectional=True).gru(2), IDS, ids_batch, {}),
    ("masking-lstm", Sequential().masking(0.0).lstm(3, return_sequences=True, bidirectional=True),
     SERIES, padded_series, {"gradients": False}),
    ("masking-gru", Sequential().masking(0.0).gru(4), SERIES, padded_series, {"gradients": False}),
    ("attention", Sequential().attention(), SERIES, None, {}),
    ("attention-causal", Sequential().attention(causal=True), SERIES, None, {}),
    ("multi-head-attention", Sequential().multi_head_attention(2, 6), SERIES, None, {}),
    ("multi-head-attention-causal", Sequential().multi_head_attention(3, 6, causal=True), SERIES,
     None, {}),
    ("padded-attention", Sequential().embedding(VOCABULARY, 4, padding_index=PAD)
     .multi_head_attention(2, 4, causal=True).attention().lstm(3), IDS, ids_batch, {}),
    ("masking-attention", Sequential().masking(0.0).multi_head_attention(2, 4), SERIES,
     padded_series, {"gradients": False}),
    ("sine-positions", Sequential().sine_positions().dense(3), SERIES, None, {}),
    ("periodic-embedding", Sequential().periodic_embedding(3, 4).relu().dense(1), Shape(5), None,
     {}),
    ("residual", Sequential().residual(Sequential().dense(4).relu().dense(4)), SERIES, None, {}),
    ("gate", Sequential().gate(Sequential().dense(4).sigmoid()), SERIES, None, {}),
    ("gate-over-the-steps", Sequential().dense(4).gate(
        Sequential().global_avg_pool(keep_axes=True).dense(2).relu().dense(4).hard_sigmoid()),
     SERIES, None, {}),
    ("concat-columns", Sequential().concat(Sequential(), Sequential().columns(1, 3).dense(2),
                                           Sequential().gru(2, return_sequences=True)),
     SERIES, None, {}),
    ("nested-training-only", Sequential().dropout(0.1).residual(
        Sequential().dense(4).dropout(0.2).gaussian_noise(0.1).relu().residual(
            Sequential().gaussian_noise(0.3).dense(4)))
     .concat(Sequential().dropout(0.5), Sequential().gaussian_noise(0.2).dense(2))
     .residual(Sequential().dropout(0.3))          # written as Add(x, x)
     .concat(Sequential(), Sequential()),          # written as Concat(x, x)
     Shape(4), None, {"gradients": False}),
    ("opset-20-axes-as-inputs", Sequential().embedding(VOCABULARY, 4, padding_index=PAD)
     .multi_head_attention(2, 4, causal=True).dense(6).gelu().lstm(3, return_sequences=True)
     .gru(2), IDS, ids_batch, {}),
    ("opset-20-masking", Sequential().masking(0.0).gelu().lstm(3), SERIES, padded_series,
     {"gradients": False}),
    ("low-rank-dense", Sequential().low_rank_dense(3, 2, alpha=3.0).low_rank_dense(2, 1),
     SERIES, None, {}),
]


@pytest.mark.parametrize("spec, shape, make, options", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_layer_everywhere(spec, shape, make, options):
    if make is not None:
        options = {**options, "make_batch": make}
    lengths = LENGTHS if shape.rank == 2 or make in (ids_batch, plain_ids) else ()
    check_layer(spec, shape, lengths=lengths, **options)


def _inputs_and_outputs(report):
    graph = report.model.graph
    dims = lambda v: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]  # noqa: E731
    return dims(graph.input[0]), dims(graph.output[0])


def test_recurrent_layers_are_one_node_each_with_both_directions():
    report = check_layer(Sequential().embedding(VOCABULARY, 4, padding_index=PAD).lstm(
        3, bidirectional=True, layers=2).dense(1), IDS, make_batch=ids_batch, lengths=LENGTHS,
        loss=BinaryCrossEntropy())
    assert report.count("LSTM") == 2
    lstm = [n for n in report.model.graph.node if n.op_type == "LSTM"]
    assert all(a.s == b"bidirectional" for n in lstm for a in n.attribute if a.name == "direction")
    assert all(n.input[4] == lstm[0].input[4] != "" for n in lstm)   # sequence_lens from the mask
    # the real steps gathered to the front (CumSum, ScatterElements; GatherND by rows) ask for 12
    assert report.count("GatherND") == 1 and report.count("ScatterElements") == 1
    assert report.opset == 12 and report.model.graph.input[0].type.tensor_type.elem_type == \
        onnx.TensorProto.INT64
    assert _inputs_and_outputs(report) == (["batch", "steps"], ["batch", 1])


def test_newer_operator_sets_take_axes_as_inputs():
    report = check_layer(Sequential().embedding(VOCABULARY, 4, padding_index=PAD).gelu()
                         .multi_head_attention(2, 4).lstm(2), IDS, make_batch=ids_batch,
                         gradients=False, train_again=False)
    assert report.opset == 20
    for node in report.model.graph.node:
        if node.op_type in ("Unsqueeze", "ReduceSum", "ReduceMax"):
            assert not any(a.name == "axes" for a in node.attribute) and len(node.input) == 2


def test_gru_is_written_with_linear_before_reset():
    report = check_layer(Sequential().gru(2), SERIES, gradients=False, train_again=False)
    gru = next(n for n in report.model.graph.node if n.op_type == "GRU")
    assert onnx.helper.get_attribute_value(
        next(a for a in gru.attribute if a.name == "linear_before_reset")) == 1
    assert report.opset == 7


def test_attention_is_the_unfused_pattern_of_old_operator_sets():
    report = check_layer(Sequential().embedding(VOCABULARY, 4, padding_index=PAD)
                         .multi_head_attention(2, 4).global_avg_pool(), IDS, make_batch=ids_batch,
                         gradients=False, train_again=False)
    ops = [n.op_type for n in report.model.graph.node]
    assert "Attention" not in ops and ops.count("Softmax") == 1 and ops.count("Where") == 1
    assert ops.count("MatMul") == 6   # q, k, v, scores, values, output projection
    assert report.opset == 9          # Where; a causal mask's Range would ask for 11


def test_series_keep_symbolic_steps():
    report = check_layer(Sequential().multi_head_attention(2, 4).sine_positions(), SERIES,
                         gradients=False, lengths=LENGTHS, train_again=False)
    assert _inputs_and_outputs(report) == (["batch", "steps", 4], ["batch", "steps", 4])


def _norm() -> Sequential:
    """A pre-norm block's layer norm once the normalisation layers are merged in (`layer_norm`
    belongs to that family); until then the block is written without it."""
    return Sequential().layer_norm() if hasattr(Sequential, "layer_norm") else Sequential()


def test_transformer_encoder_block_and_text_classifier():
    """The encoder block of the docs: residual (layer norm, attention), residual (layer norm,
    feed-forward), twice, then a GRU reads the tokens up to their length."""
    block = (Sequential().residual(_norm().multi_head_attention(2, 8))
             .residual(_norm().dense(16).gelu().dense(8)))
    spec = (Sequential().embedding(VOCABULARY, 8, padding_index=PAD).sine_positions()
            .then(block).then(block).gru(6).dense(3))
    report = check_layer(spec, IDS, make_batch=ids_batch, lengths=LENGTHS, loss=CrossEntropy())
    assert report.count("Softmax") == 3   # two attention blocks and the output


def test_with_low_rank_network_exports_and_reads_back_with_frozen_kernels():
    base = Sequential().embedding(VOCABULARY, 4, padding_index=PAD).lstm(3).dense(4).relu().dense(1)
    network = base.lower(IDS, RandomStream(3)).with_low_rank(2, on=["2", "4"])
    generator = np.random.default_rng(0)
    for path, p in network.named_parameters():  # trained adapters, so the products count
        if path.endswith("lora_b"):
            p._data[...] = generator.standard_normal(p.shape)
    loss = BinaryCrossEntropy()
    data = OnnxExport(IDS).to_bytes(network, loss)
    batches = [ids_batch(n, (7,), generator) for n in (1, 5, 32)]
    assert_graph_matches(data, network, loss, batches)
    imported = assert_round_trip(data, network, loss, batches[-1])
    assert sorted(p for p, _ in imported.trainable_parameters()) == [
        "0.weight", "1.bias_hh_l0", "1.bias_ih_l0", "1.weight_hh_l0", "1.weight_ih_l0",
        "2.lora_a", "2.lora_b", "4.lora_a", "4.lora_b"]   # only the adapted kernels stay frozen
    assert imported.steps[2].weight.frozen and imported.steps[2].bias.frozen
