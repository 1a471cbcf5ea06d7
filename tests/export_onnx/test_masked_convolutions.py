"""Masked series through convolutions: a kernel keeping each series' length (conv1d and
conv_transpose1d with stride 1 and padding "same", "causal" or as many places) runs on each
series' real steps alone, so a series padded at the start, at the end, at both ends or with
holes gives at its real steps exactly what the unpadded series gives (and zeros at its padding):
in the network (values, parameter gradients, input gradients by finite differences in float64
through the gathers), in ONNX Runtime (two batch sizes, two lengths) and through the importer.
Unmasked and end-padded series give what the kernel gave before, bit for bit; every other
kernel over a masked series is refused by name."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import Adam, CrossEntropy, MeanSquaredError, RandomStream, Sequential, Shape, Tensor
from deepsharp.tensors import apply
from deepsharp_export_onnx import ImportRefused, OnnxExport, OnnxFile
from tests.export_onnx.test_padding_anywhere import (
    PLACEMENTS, assert_input_gradients_through_the_gathers, assert_real_steps_answer_alone,
    id_series, ids_anywhere, lay_out, parameter_gradients, real_places,
)
from tests.export_onnx.test_seq_export import PAD, VOCABULARY
from tests.support import check_layer
from tests.support.graph_edits import node_of, set_attr, without_masked_kernels
from tests.support.onnx_check import ort_session

LOSS = MeanSquaredError()
CHANNELS = 3


def float_series(count: int, steps: int, seed: int) -> list[np.ndarray]:
    """Series of 1 to steps - 1 real steps whose values are never the padding's (0)."""
    generator = np.random.default_rng(seed)
    return [generator.standard_normal((n, CHANNELS)).astype(np.float32) + 3.0
            for n in generator.integers(1, steps - 1, count)]


def floats_anywhere(n: int, shape: tuple[int, ...], generator: np.random.Generator) -> np.ndarray:
    """check_layer's batches: series padded (with 0) at the start, both ends and in holes, and
    one with no real step."""
    steps = shape[0]
    batch = np.zeros((n, *shape), np.float32)
    for row, length in enumerate(generator.integers(0, steps + 1, n) if n > 1 else [steps // 2]):
        where = PLACEMENTS[row % len(PLACEMENTS)]
        batch[row, real_places(int(length), steps, where, generator)] = \
            generator.standard_normal((int(length), shape[1])) + 3.0
    return batch


KERNELS = [
    ("conv1d-same", Sequential().masking(0.0).conv1d(4, 3, padding="same")),
    ("conv1d-causal", Sequential().masking(0.0).conv1d(4, 3, padding="causal")),
    ("conv1d-pytorch-padding", Sequential().masking(0.0).conv1d(4, 3, padding=1, bias=False)),
    ("conv1d-before-after", Sequential().masking(0.0).conv1d(4, 4, padding=((1, 2),))),
    ("conv1d-dilated-even", Sequential().masking(0.0).conv1d(4, 4, padding="same", dilation=2)),
    ("conv1d-depthwise", Sequential().masking(0.0).conv1d(3, 3, padding="same", groups=3)),
    ("conv1d-pointwise", Sequential().masking(0.0).conv1d(4, 1)),
    ("conv-transpose1d-same", Sequential().masking(0.0).conv_transpose1d(4, 3, padding="same")),
    ("conv-transpose1d-dilated", Sequential().masking(0.0).conv_transpose1d(
        2, 3, padding="same", dilation=2)),
]
STACKS = [
    ("stacked-then-avg-pool", Sequential().masking(0.0).conv1d(4, 3, padding="same").relu()
     .conv1d(4, 3, padding="same").global_avg_pool()),
    ("residual-conv", Sequential().masking(0.0).residual(
        Sequential().conv1d(3, 3, padding="same").relu())),
    ("concat-conv", Sequential().masking(0.0).concat(
        Sequential().conv1d(2, 3, padding="causal"), Sequential())),
    ("conv-then-lstm", Sequential().masking(0.0).conv1d(4, 3, padding="same").lstm(3)),
]
TEXT_CLASSIFIER = (Sequential().embedding(VOCABULARY, 8, padding_index=PAD)
                   .conv1d(8, 3, padding="same").relu().conv1d(8, 3, padding="same")
                   .global_max_pool().dense(3))


@pytest.mark.parametrize("spec", [s for _, s in KERNELS + STACKS],
                         ids=[n for n, _ in KERNELS + STACKS])
def test_real_steps_answer_as_the_unpadded_series(spec):
    network = spec.lower(Shape(7, CHANNELS), RandomStream(3))
    assert_real_steps_answer_alone(network, float_series, 0.0, Shape(7, CHANNELS),
                                    zero_padding=any(spec is s for _, s in KERNELS))


def test_the_text_classifier_trains_and_answers_as_the_unpadded_texts():
    """embedding (padding id) -> conv1d same -> relu -> conv1d same -> global max pool -> dense:
    trained on texts padded anywhere, each text answers what it answers alone."""
    network = TEXT_CLASSIFIER.lower(Shape(12), RandomStream(0))
    generator = np.random.default_rng(0)
    texts = ids_anywhere(64, (12,), generator)
    labels = (texts == 7).any(axis=1).astype(np.int64)
    history = network.fit(texts, labels, loss=CrossEntropy(), optimizer=Adam(1e-2), epochs=3,
                          batch_size=16, verbose=0)
    assert history[-1]["loss"] < history[0]["loss"]
    assert_real_steps_answer_alone(network, id_series, PAD, Shape(12), zero_padding=False)


@pytest.mark.parametrize("spec", [
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).conv1d(3, 3, padding="same").relu()
    .conv_transpose1d(2, 3, padding="same"),
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).conv1d(3, 2, padding="causal")
    .global_max_pool(),
], ids=["conv-then-transpose-sequences", "causal-then-max-pool"])
@pytest.mark.parametrize("where", ["start", "both", "holes"])
def test_parameter_gradients_are_those_of_the_unpadded_series(spec, where):
    """The gradients of a weighted sum of the real steps' answers: the padded batch gives the
    sum of what each unpadded series gives alone."""
    network = spec.lower(Shape(8), RandomStream(1))
    series = id_series(3, 8, seed=2)
    batch, places = lay_out(series, 8, where, PAD)
    generator = np.random.default_rng(0)
    out = network.predict(batch, LOSS)
    weights = np.zeros(out.shape, np.float32)
    expected: dict[str, np.ndarray] = {}
    for row, (s, index) in enumerate(zip(series, places)):
        mine = generator.standard_normal((len(s), *out.shape[2:]) if out.ndim == 3
                                         else out.shape[1:]).astype(np.float32)
        if out.ndim == 3:
            weights[row, index] = mine
        else:
            weights[row] = mine
        for path, grad in parameter_gradients(network, s[None], mine[None]).items():
            expected[path] = expected.get(path, 0) + grad
    for path, grad in parameter_gradients(network, batch, weights).items():
        np.testing.assert_allclose(grad, expected[path], rtol=1e-4, atol=1e-6, err_msg=path)


@pytest.mark.parametrize("spec", [
    Sequential().conv1d(3, 3, padding="same"),
    Sequential().conv1d(2, 2, padding="causal", dilation=2),
    Sequential().conv_transpose1d(2, 3, padding="same"),
], ids=["conv1d-same", "conv1d-causal-dilated", "conv-transpose1d-same"])
def test_input_gradients_flow_through_the_gathers(spec):
    """Finite differences in float64 of a weighted sum of the answers, with respect to a series
    whose mask (held apart from its values) has padding at the start and holes: the padding's
    values get no gradient, the real ones that of the unpadded series."""
    assert_input_gradients_through_the_gathers(spec)


@pytest.mark.parametrize("spec, shape, make, gradients", [
    (TEXT_CLASSIFIER, Shape(9), ids_anywhere, True),
    # masking's steps flip between real and padding under a finite difference at the padding's
    # value: the input gradients through the gathers are checked with the mask held apart above
    (Sequential().masking(0.0).conv1d(4, 3, padding="causal", dilation=2).gelu()
     .conv_transpose1d(3, 2, padding="same").dense(2), Shape(7, CHANNELS), floats_anywhere, False),
], ids=["text-classifier", "causal-then-transpose"])
def test_padded_anywhere_everywhere(spec, shape, make, gradients):
    """Finite differences in float64 through the gathers, the graph in ONNX Runtime and the
    reference evaluator, import with the same numbers and the same bytes again, training."""
    report = check_layer(spec, shape, make_batch=make, lengths=(1, 11), batch_sizes=(1, 6),
                         gradients=gradients)
    assert report.count("GatherND") == 4 and report.count("Mul") >= 4
    assert [s.kind for s in report.imported.spec] == [s.kind for s in spec]


def test_unmasked_series_are_the_kernel_bit_for_bit():
    """No mask: the convolution primitive's own answer, and a graph with no reordering."""
    network = Sequential().conv1d(4, 3, padding="same").lower(Shape(7, CHANNELS), RandomStream(0))
    x = np.random.default_rng(0).standard_normal((3, 7, CHANNELS)).astype(np.float32)
    step = network.steps[0]
    kernel = apply("conv", Tensor(x), step.weight, step.bias, **step.spec.attrs())
    np.testing.assert_array_equal(network.predict(x, LOSS), kernel._data)
    model = onnx.load_from_string(OnnxExport(Shape(7, CHANNELS)).to_bytes(network, LOSS))
    assert [n.op_type for n in model.graph.node] == ["Transpose", "Conv", "Transpose"]


def test_padding_at_the_end_is_the_kernel_bit_for_bit():
    """End padding with zero padding rows (an embedding's padding row): the real steps are what
    the kernel gave before on the padded batch, bit for bit, in the network (which skips the
    reordering) and in the graph (whose reordering is the identity), and the padding is zero."""
    network = (Sequential().embedding(VOCABULARY, 4, padding_index=PAD)
               .conv1d(3, 3, padding="same").lower(Shape(9), RandomStream(0)))
    batch, places = lay_out(id_series(5, 9, seed=4), 9, "end", PAD)
    embedding, step = network.steps
    before = apply("conv", embedding.forward(Tensor(batch)), step.weight, step.bias,
                   **step.spec.attrs())._data
    data = OnnxExport(Shape(9)).to_bytes(network, LOSS)
    old = without_masked_kernels(onnx.load_from_string(data)).SerializeToString()
    answers = {"network": network.predict(batch, LOSS),
               "graph": ort_session(data).run(None, {"input": batch})[0]}
    old_graph = ort_session(old).run(None, {"input": batch})[0]  # the kernel on the padded batch
    for label, out, was in (("network", answers["network"], before),
                            ("graph", answers["graph"], old_graph)):
        for row, index in enumerate(places):
            np.testing.assert_array_equal(out[row, index], was[row, index], err_msg=label)
            assert not out[row, len(index):].any(), label


def test_a_graph_convolving_the_padding_is_refused():
    """A Conv reading a masked series as it is (as graphs were written before convolutions
    honoured masks) means no layer: refused by name, with the way out."""
    network = TEXT_CLASSIFIER.lower(Shape(9), RandomStream(0))
    data = OnnxExport(Shape(9)).to_bytes(network, LOSS)
    old = without_masked_kernels(onnx.load_from_string(data))
    with pytest.raises(ImportRefused, match=r"node '1\.conv1d' \(Conv\): it reads a masked series "
                                            r"as it is, convolving the padding as real steps"):
        OnnxFile(LOSS).read(old)


def test_a_masked_form_around_a_kernel_changing_the_length_is_refused():
    network = TEXT_CLASSIFIER.lower(Shape(9), RandomStream(0))
    model = onnx.load_from_string(OnnxExport(Shape(9)).to_bytes(network, LOSS))
    set_attr(node_of(model, "Conv"), "strides", [2])
    with pytest.raises(ImportRefused, match=r"conv1d\(8, 3, stride=2, .*\) does not keep a "
                                            r"series' length .* cannot run on a masked series"):
        OnnxFile(LOSS).read(model)


def test_a_traced_stack_reorders_in_the_graph_whatever_the_example():
    """Traced with padding at the end (which the network runs without reordering), the graph
    still reorders: padding at the start and in holes answers as in the network."""
    network = TEXT_CLASSIFIER.lower(Shape(7), RandomStream(0))
    example, _ = lay_out(id_series(3, 7, seed=6), 7, "end", PAD)
    session = ort_session(network.trace(example, axis_names={0: "batch", 1: "steps"}).to_bytes())
    for where in ("start", "holes"):
        batch, _ = lay_out(id_series(4, 9, seed=7), 9, where, PAD)
        np.testing.assert_allclose(session.run(None, {"input": batch})[0], network.evaluate(batch),
                                   rtol=0, atol=1e-5, err_msg=where)
