"""Padding anywhere in a series: the layers that count from a series' first step (lstm, gru and
sine_positions) run on its real steps gathered to the front, so a series padded at the start, at
the end, at both ends or with holes gives, at its real steps, exactly what the unpadded series
gives: in the network (values and gradients), in ONNX Runtime (two batch sizes, two lengths) and
through the importer. Padding at the end gives bit for bit what the layers gave before the
reordering, and graphs written before it (no GatherND) still read."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape, Tensor
from deepsharp.tensors import apply
from deepsharp.layers.embedding import sine_table
from deepsharp_export_onnx import OnnxExport, OnnxFile
from tests.export_onnx.test_seq_export import PAD, VOCABULARY
from deepsharp.layers.base import Flow
from tests.support import assert_gradients, check_layer
from tests.support.gradcheck import float64_module
from tests.support.onnx_check import ort_session
from tests.support.graph_edits import without_reordering

LOSS = MeanSquaredError()
CHANNELS = 3
PLACEMENTS = ("start", "end", "both", "holes")
SIZES = [(2, 7), (5, 10)]  # (batch, steps): two batch sizes, two lengths


def real_places(length: int, steps: int, where: str, generator: np.random.Generator) -> np.ndarray:
    """Which of `steps` places a series of `length` real steps takes."""
    if where == "end":
        return np.arange(length)
    if where == "start":
        return np.arange(steps - length, steps)
    if where == "both":
        return np.arange(length) + (steps - length + 1) // 2
    return np.sort(generator.choice(steps, length, replace=False))


def lay_out(series: list[np.ndarray], steps: int, where: str, fill, seed: int = 0
            ) -> tuple[np.ndarray, list[np.ndarray]]:
    """The series padded to `steps` by `fill` as `where` says, and each one's real places."""
    generator = np.random.default_rng(seed)
    batch = np.full((len(series), steps, *series[0].shape[1:]), fill, series[0].dtype)
    places = []
    for row, s in enumerate(series):
        index = real_places(len(s), steps, where, generator)
        batch[row, index] = s
        places.append(index)
    return batch, places


def float_series(count: int, steps: int, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    lengths = generator.integers(1, steps - 1, count)
    return [generator.standard_normal((n, CHANNELS)).astype(np.float32) + 0.5 for n in lengths]


def id_series(count: int, steps: int, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.integers(1, VOCABULARY, n) for n in generator.integers(1, steps - 1, count)]


def ids_anywhere(n: int, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    """check_layer's batches: ids padded at the start, both ends and in holes (and a series with
    no real step), by rows."""
    steps = shape[0]
    lengths = generator.integers(1, steps + 1, n)
    lengths[0] = 0
    series = [generator.integers(1, VOCABULARY, int(k)) for k in lengths]
    batch = np.full((n, steps), PAD, np.int64)
    for row, s in enumerate(series):
        where = PLACEMENTS[row % len(PLACEMENTS)]
        batch[row, real_places(len(s), steps, where, generator)] = s
    return batch


FLOAT_SPECS = [
    ("lstm-last", Sequential().masking(0.0).lstm(4)),
    ("lstm-sequences", Sequential().masking(0.0).lstm(4, return_sequences=True)),
    ("gru-bidirectional-last", Sequential().masking(0.0).gru(3, bidirectional=True)),
    ("gru-bidirectional-sequences",
     Sequential().masking(0.0).gru(3, bidirectional=True, return_sequences=True)),
    ("lstm-2-layers-bidirectional-sequences",
     Sequential().masking(0.0).lstm(3, layers=2, bidirectional=True, return_sequences=True)),
    ("gru-2-layers-last", Sequential().masking(0.0).gru(3, layers=2)),
    ("sine-positions", Sequential().masking(0.0).sine_positions()),
]
ID_SPECS = [
    ("transformer-classifier",
     Sequential().embedding(VOCABULARY, 8, padding_index=PAD).sine_positions()
     .residual(Sequential().layer_norm().multi_head_attention(2, 8))
     .residual(Sequential().layer_norm().dense(16).gelu().dense(8))
     .global_avg_pool().dense(3)),
    ("embedding-lstm-sequences-then-pool",
     Sequential().embedding(VOCABULARY, 4, padding_index=PAD).lstm(3, return_sequences=True)
     .global_avg_pool()),
]


def assert_real_steps_answer_alone(network, make, fill, shape: Shape, *,
                                   zero_padding: bool = False) -> None:
    """For two batch sizes and two lengths and every placement of the padding: ONNX Runtime
    answers as the network, and every real step (or a row reduced over its steps) as the
    unpadded series alone, in both; with `zero_padding`, the padding's answers are zeros."""
    session = ort_session(OnnxExport(shape).to_bytes(network, LOSS))
    steps_out = len(network.output_shape) == 2
    for count, steps in SIZES:
        series = make(count, steps, seed=count)
        alone = [network.predict(s[None], LOSS)[0] for s in series]
        alone_ort = [session.run(None, {"input": s[None]})[0][0] for s in series]
        for where in PLACEMENTS:
            batch, places = lay_out(series, steps, where, fill)
            out = network.predict(batch, LOSS)
            out_ort = session.run(None, {"input": batch})[0]
            np.testing.assert_allclose(out_ort, out, rtol=0, atol=1e-5, err_msg=where)
            for row, index in enumerate(places):
                label = f"{where}, {steps} steps, row {row}"
                for answers, own in ((out, alone), (out_ort, alone_ort)):
                    got = answers[row][index] if steps_out else answers[row]
                    np.testing.assert_allclose(got, own[row], rtol=0, atol=1e-5, err_msg=label)
                if zero_padding:
                    padding = np.setdiff1d(np.arange(steps), index)
                    assert not out[row, padding].any() and not out_ort[row, padding].any(), label


@pytest.mark.parametrize("spec, make, fill, shape", [
    *[(s, float_series, 0.0, Shape(7, CHANNELS)) for _, s in FLOAT_SPECS],
    *[(s, id_series, PAD, Shape(7)) for _, s in ID_SPECS],
], ids=[c[0] for c in FLOAT_SPECS + ID_SPECS])
def test_real_steps_answer_as_the_unpadded_series(spec, make, fill, shape):
    assert_real_steps_answer_alone(spec.lower(shape, RandomStream(3)), make, fill, shape)


@pytest.mark.parametrize("where", ["start", "both", "holes"])
def test_padding_steps_get_what_padding_at_the_end_gets(where):
    """A returned series is zero at the padding; sine positions give the padding the rows after
    the real steps', in order, as at the end."""
    series = float_series(4, 9, seed=1)
    batch, places = lay_out(series, 9, where, 0.0)
    end, _ = lay_out(series, 9, "end", 0.0)
    for spec in (Sequential().masking(0.0).lstm(2, return_sequences=True, bidirectional=True),
                 Sequential().masking(0.0).sine_positions()):
        network = spec.lower(Shape(9, CHANNELS), RandomStream(0))
        out, at_end = network.predict(batch, LOSS), network.predict(end, LOSS)
        for row, index in enumerate(places):
            padding = np.setdiff1d(np.arange(9), index)
            np.testing.assert_array_equal(out[row, padding], at_end[row, len(index):])
    table = sine_table(9, CHANNELS)
    np.testing.assert_array_equal(out[0, np.setdiff1d(np.arange(9), places[0])],
                                  table[len(places[0]):])


def parameter_gradients(network, x: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    for _, p in network.trainable_parameters():
        p.grad = None
    (network.forward(Tensor(x)) * Tensor(weights)).sum().backward()
    return {path: p.grad.copy() for path, p in network.trainable_parameters()}


@pytest.mark.parametrize("spec", [
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).lstm(3, bidirectional=True,
                                                                 return_sequences=True),
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).sine_positions().gru(3, layers=2),
], ids=["lstm-bidirectional-sequences", "sine-positions-gru-2-layers"])
@pytest.mark.parametrize("where", ["start", "both", "holes"])
def test_gradients_are_those_of_the_unpadded_series(spec, where):
    """The parameters' gradients of a weighted sum of the real steps' answers: the padded batch
    gives the sum of what each unpadded series gives alone."""
    network = spec.lower(Shape(8), RandomStream(1))
    series = id_series(3, 8, seed=2)
    batch, places = lay_out(series, 8, where, PAD)
    generator = np.random.default_rng(0)
    out = network.predict(batch, LOSS)
    sequences = out.ndim == 3
    weights = np.zeros(out.shape, np.float32)
    expected: dict[str, np.ndarray] = {}
    for row, (s, index) in enumerate(zip(series, places)):
        mine = generator.standard_normal(out.shape[2:] if sequences else out.shape[1:])
        mine = np.broadcast_to(mine, (len(s), *mine.shape)) if sequences else mine
        if sequences:
            weights[row, index] = mine
        else:
            weights[row] = mine
        alone = parameter_gradients(network, s[None], np.asarray(mine, np.float32)[None])
        for path, grad in alone.items():
            expected[path] = expected.get(path, 0) + grad
    for path, grad in parameter_gradients(network, batch, weights).items():
        np.testing.assert_allclose(grad, expected[path], rtol=1e-4, atol=1e-6, err_msg=path)


@pytest.mark.parametrize("spec", [
    Sequential().lstm(2, bidirectional=True, return_sequences=True),
    Sequential().gru(2, layers=2),
    Sequential().sine_positions(),
], ids=["lstm-bidirectional-sequences", "gru-2-layers", "sine-positions"])
def test_input_gradients_flow_through_the_gathers(spec):
    assert_input_gradients_through_the_gathers(spec)


def assert_input_gradients_through_the_gathers(spec: Sequential) -> None:
    """Finite differences in float64 of a weighted sum of the answers of the stack's first
    layer, with respect to a series whose mask (held apart from its values) has padding at the
    start and holes."""
    network = spec.lower(Shape(6, 2), RandomStream(0))
    step = network.steps[0]
    mask = Tensor(np.array([[False, True, False, True, True, False],
                            [False, False, False, True, True, True]]))
    x = np.random.default_rng(0).standard_normal((2, 6, 2))
    weights = np.random.default_rng(1).standard_normal(step.call(Flow(Tensor(x), mask)).value.shape)
    with float64_module(network):
        assert_gradients(lambda t: (step.call(Flow(t, mask)).value * Tensor(weights)).sum(), [x])


@pytest.mark.parametrize("spec", [
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).lstm(3, layers=2, bidirectional=True,
                                                                 return_sequences=True).dense(2),
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).gru(3),
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).sine_positions().lstm(2)
    .dense(2),
], ids=["lstm-2-layers-bidirectional-sequences", "gru-last", "sine-positions-lstm"])
def test_padded_anywhere_everywhere(spec):
    """Finite differences in float64 through the gathers, the graph in ONNX Runtime and the
    reference evaluator, import with the same numbers and the same bytes again, training."""
    report = check_layer(spec, Shape(7), make_batch=ids_anywhere, lengths=(1, 11),
                         batch_sizes=(1, 6))
    assert report.opset == 12 and report.count("ScatterElements") >= 1
    kinds = [s.kind for s in report.imported.spec]
    assert kinds == [s.kind for s in spec]


def test_padding_at_the_end_is_bit_identical_to_the_lengths_alone():
    """End padding: the network skips the reordering (the kernel's own answer, bit for bit), and
    the graph's reordering by the identity changes no bit against the graph without it."""
    spec = Sequential().masking(0.0).lstm(4, return_sequences=True)
    network = spec.lower(Shape(7, CHANNELS), RandomStream(0))
    batch, places = lay_out(float_series(5, 7, seed=4), 7, "end", 0.0)
    step = network.steps[1]
    lengths = np.array([len(p) for p in places])
    kernel = apply("lstm", Tensor(batch), *step.slots_of(0, ""), Tensor(lengths), reverse=0)[0]
    np.testing.assert_array_equal(network.predict(batch, LOSS), kernel._data)
    data = OnnxExport(Shape(7, CHANNELS)).to_bytes(network, LOSS)
    before = without_reordering(onnx.load_from_string(data)).SerializeToString()
    np.testing.assert_array_equal(ort_session(data).run(None, {"input": batch})[0],
                                  ort_session(before).run(None, {"input": batch})[0])


@pytest.mark.parametrize("spec", [
    Sequential().masking(0.0).lstm(3, bidirectional=True, return_sequences=True).dense(1),
    Sequential().masking(0.0).sine_positions().gru(2, layers=2),
], ids=["lstm-sequences", "sine-positions-gru"])
def test_graphs_written_before_the_reordering_still_read(spec):
    """A graph with the lengths alone (as written for padding at the end) reads as the same
    layers: the same answers at the end, and the new form when written again."""
    network = spec.lower(Shape(7, CHANNELS), RandomStream(0))
    data = OnnxExport(Shape(7, CHANNELS)).to_bytes(network, LOSS)
    before = without_reordering(onnx.load_from_string(data))
    assert not [n for n in before.graph.node if n.op_type in ("GatherND", "CumSum")]
    imported = OnnxFile(LOSS).read(before)
    batch, _ = lay_out(float_series(4, 7, seed=5), 7, "end", 0.0)
    np.testing.assert_allclose(imported.predict(batch, LOSS), network.predict(batch, LOSS),
                               rtol=0, atol=1e-6)
    assert OnnxExport(Shape(7, CHANNELS)).to_bytes(imported, LOSS) == data


def test_a_traced_stack_reorders_in_the_graph_whatever_the_example():
    """Traced with padding at the end (which the network runs without reordering), the graph
    still reorders: padding at the start and in holes answers as in the network."""
    spec = (Sequential().embedding(VOCABULARY, 4, padding_index=PAD).sine_positions()
            .lstm(3, return_sequences=True))
    network = spec.lower(Shape(7), RandomStream(0))
    example, _ = lay_out(id_series(3, 7, seed=6), 7, "end", PAD)
    traced = network.trace(example, axis_names={0: "batch", 1: "steps"}).to_bytes()
    session = ort_session(traced)
    for where in ("start", "holes"):
        batch, _ = lay_out(id_series(4, 9, seed=7), 9, where, PAD)
        np.testing.assert_allclose(session.run(None, {"input": batch})[0], network.evaluate(batch),
                                   rtol=0, atol=1e-5, err_msg=where)
