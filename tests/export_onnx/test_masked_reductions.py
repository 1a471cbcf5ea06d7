"""Masks wherever a series is reduced or normalised: a padded series answers exactly what the
unpadded series answers, in the network and in ONNX Runtime, with padding at the end and (where
the layer can leave it out) at the start; where it cannot, the layer is refused by name. (The
layers that count from a series' first step take padding anywhere: test_padding_anywhere.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp.errors import ShapeError
from deepsharp_export_onnx import ExportRefused, OnnxExport
from tests.export_onnx.test_seq_export import PAD, VOCABULARY, ids_batch
from tests.support import check_layer, run_ort

LOSS = MeanSquaredError()
STEPS, CHANNELS = 6, 3
LENGTHS = [6, 4, 1, 3]


def _series(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((n, CHANNELS)).astype(np.float32) + 0.5 for n in LENGTHS]


def _padded(series: list[np.ndarray], at_start: bool) -> np.ndarray:
    batch = np.zeros((len(series), STEPS, CHANNELS), np.float32)
    for row, s in enumerate(series):
        if at_start:
            batch[row, STEPS - len(s):] = s
        else:
            batch[row, :len(s)] = s
    return batch


def _ids(at_start: bool, seed: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    series = [rng.integers(1, VOCABULARY, n) for n in LENGTHS]
    batch = np.full((len(series), STEPS), PAD, np.int64)
    for row, s in enumerate(series):
        if at_start:
            batch[row, STEPS - len(s):] = s
        else:
            batch[row, :len(s)] = s
    return series, batch


def assert_padded_as_unpadded(spec: Sequential, shape: Shape, series, padded) -> None:
    """Each padded row answers what its unpadded series answers alone, in the network and in
    ONNX Runtime."""
    network = spec.lower(shape, RandomStream(3))
    data = OnnxExport(shape).to_bytes(network, LOSS)
    answers = network.predict(padded, LOSS)
    in_runtime = run_ort(data, padded)
    for row, s in enumerate(series):
        alone = network.predict(s[None], LOSS)[0]
        np.testing.assert_allclose(answers[row], alone, rtol=0, atol=1e-5, err_msg=f"row {row}")
        np.testing.assert_allclose(in_runtime[row], run_ort(data, s[None])[0], rtol=0, atol=1e-5,
                                   err_msg=f"ONNX Runtime, row {row}")
        np.testing.assert_allclose(in_runtime[row], alone, rtol=0, atol=1e-5)


POOLS = [
    ("global-avg", Sequential().masking(0.0).dense(4).global_avg_pool().dense(2)),
    ("global-avg-kept", Sequential().masking(0.0).dense(4).global_avg_pool(keep_axes=True)),
    ("global-max", Sequential().masking(0.0).dense(4).global_max_pool().dense(2)),
    ("global-max-kept", Sequential().masking(0.0).dense(4).global_max_pool(keep_axes=True)),
    ("attention-then-avg", Sequential().masking(0.0).multi_head_attention(2, 4).global_avg_pool()),
    ("causal-attention-then-max", Sequential().masking(0.0).attention(causal=True)
     .global_max_pool()),
    ("residual-layer-norm-avg", Sequential().masking(0.0).residual(
        Sequential().layer_norm().dense(3)).global_avg_pool()),
    ("attention-pool", Sequential().masking(0.0).dense(4).attention_pool().dense(2)),
    ("attention-then-attention-pool", Sequential().masking(0.0).multi_head_attention(2, 4)
     .attention_pool()),
]


@pytest.mark.parametrize("at_start", [False, True], ids=["padded-at-end", "padded-at-start"])
@pytest.mark.parametrize("spec", [c[1] for c in POOLS], ids=[c[0] for c in POOLS])
def test_series_reductions_leave_padding_out(spec, at_start):
    series = _series()
    assert_padded_as_unpadded(spec, Shape(STEPS, CHANNELS), series, _padded(series, at_start))


@pytest.mark.parametrize("at_start", [False, True], ids=["padded-at-end", "padded-at-start"])
def test_transformer_classifier_over_ids_leaves_padding_out(at_start):
    """The case the issue found: extra padding moved a transformer classifier's outputs."""
    spec = (Sequential().embedding(VOCABULARY, 8, padding_index=PAD)
            .residual(Sequential().layer_norm().multi_head_attention(2, 8))
            .residual(Sequential().layer_norm().dense(16).gelu().dense(8))
            .global_avg_pool().dense(3))
    series, batch = _ids(at_start)
    assert_padded_as_unpadded(spec, Shape(STEPS), series, batch)
    longer = np.concatenate([batch, np.full((len(batch), 5), PAD)], axis=1) if not at_start \
        else np.concatenate([np.full((len(batch), 5), PAD), batch], axis=1)
    network = spec.lower(Shape(STEPS), RandomStream(3))
    np.testing.assert_allclose(network.predict(longer, LOSS), network.predict(batch, LOSS),
                               rtol=0, atol=1e-5)


@pytest.mark.parametrize("spec", [
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).dense(3).global_avg_pool().dense(2),
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).dense(3).global_max_pool(
        keep_axes=True),
], ids=["avg", "max-kept"])
def test_masked_global_pools_everywhere(spec):
    """Gradients, the graph in Runtime and the reference evaluator (series that are all padding
    included: they give zeros), import with the same numbers, the same bytes again, training."""
    report = check_layer(spec, Shape(7), make_batch=ids_batch, lengths=(1, 23))
    if "avg" in str(spec):
        assert report.count("ReduceSum") == 2 and report.count("Div") == 1
    else:
        assert report.count("ReduceSum") == 1 and report.count("Where") == 2
    empty = np.full((2, 7), PAD)
    out = report.network(empty)
    assert np.isfinite(out).all()


@pytest.mark.parametrize("spec, make", [
    (Sequential().embedding(VOCABULARY, 4, padding_index=PAD).dense(3).attention_pool().dense(2),
     ids_batch),
    (Sequential().dense(3).attention_pool(), None),
], ids=["masked", "plain"])
def test_attention_pool_everywhere(spec, make):
    shape = Shape(7) if make is not None else Shape(7, 4)
    options = {"make_batch": make} if make is not None else {}
    report = check_layer(spec, shape, lengths=(1, 23), **options)
    assert report.count("Softmax") == 1 and report.count("Where") == (1 if make else 0)


def test_a_series_that_is_all_padding_pools_to_zeros():
    network = Sequential().masking(0.0).global_avg_pool().lower(Shape(4, 2), RandomStream(0))
    both = network(np.zeros((1, 4, 2), np.float32))
    np.testing.assert_array_equal(both, np.zeros((1, 2)))
    for pool in (Sequential().masking(0.0).global_max_pool(), Sequential().masking(0.0).attention_pool()):
        network = pool.lower(Shape(4, 2), RandomStream(0))
        np.testing.assert_array_equal(network(np.zeros((1, 4, 2), np.float32)), np.zeros((1, 2)))


@pytest.mark.parametrize("norm", ["group_norm", "instance_norm"])
@pytest.mark.parametrize("at_start", [False, True], ids=["padded-at-end", "padded-at-start"])
def test_group_and_instance_norms_use_the_real_steps(norm, at_start):
    layer = Sequential().group_norm(2) if norm == "group_norm" else Sequential().instance_norm()
    spec = Sequential().masking(0.0).dense(4).then(layer).global_avg_pool()
    series = _series()
    assert_padded_as_unpadded(spec, Shape(STEPS, CHANNELS), series, _padded(series, at_start))


@pytest.mark.parametrize("spec", [
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).group_norm(2).dense(3)
    .global_avg_pool(),
    Sequential().embedding(VOCABULARY, 4, padding_index=PAD).instance_norm().gru(2),
    Sequential().embedding(VOCABULARY, 6, padding_index=PAD).conv1d(6, 3, padding="same")
    .group_norm(3).global_max_pool(),
], ids=["group-norm", "instance-norm-gru", "after-a-channels-first-conv"])
def test_masked_norms_everywhere(spec):
    """Gradients (the answers at padded steps never reach the output: the padding row's gradient
    is zero by design), the graph, import with the same numbers and bytes, training."""
    report = check_layer(spec, Shape(7), make_batch=ids_batch, lengths=(1, 23))
    kinds = [s.kind for s in report.imported.spec]
    assert kinds == [s.kind for s in spec] and report.count("GroupNormalization") == 0


def test_batch_norm_in_evaluation_leaves_padding_out_downstream():
    spec = Sequential().masking(0.0).dense(4).batch_norm().global_avg_pool()
    series = _series()
    assert_padded_as_unpadded(spec, Shape(STEPS, CHANNELS), series, _padded(series, True))


def test_batch_norm_in_training_takes_statistics_from_real_steps():
    """Training-mode statistics over the real steps of the batch are those over all its real
    steps laid end to end: the running statistics and the answers at real steps agree."""
    spec = Sequential().masking(0.0).batch_norm(momentum=0.5)
    series = _series()
    padded = _padded(series, at_start=True)
    joined = np.concatenate(series)[None]
    a = spec.lower(Shape(STEPS, CHANNELS), RandomStream(0)).train()
    b = spec.lower(Shape(STEPS, CHANNELS), RandomStream(0)).train()
    from deepsharp import Tensor

    out_padded = a.forward(Tensor(padded))._data
    out_joined = b.forward(Tensor(joined))._data[0]
    real = np.concatenate([out_padded[row, STEPS - len(s):] for row, s in enumerate(series)])
    np.testing.assert_allclose(real, out_joined, rtol=0, atol=1e-5)
    for key in ("1.running_mean", "1.running_var"):
        np.testing.assert_allclose(a.state_dict()[key], b.state_dict()[key], rtol=1e-6)


def _refused(spec: Sequential, shape: Shape, batch: np.ndarray, network_message: str,
             export_message: str) -> None:
    network = spec.lower(shape, RandomStream(0))
    with pytest.raises(ShapeError, match=network_message):
        network.predict(batch, LOSS)
    if export_message:
        with pytest.raises(ExportRefused, match=export_message):
            OnnxExport(shape).to_bytes(network, LOSS)


@pytest.mark.parametrize("spec, kind", [
    (Sequential().masking(0.0).max_pool1d(2), "max_pool1d"),
    (Sequential().masking(0.0).avg_pool1d(2, padding="same"), "avg_pool1d"),
    (Sequential().masking(0.0).adaptive_avg_pool(2), "adaptive_avg_pool"),
    (Sequential().masking(0.0).adaptive_max_pool(3), "adaptive_max_pool"),
])
def test_windowed_and_adaptive_pools_refuse_a_mask(spec, kind):
    _refused(spec, Shape(STEPS, CHANNELS), _padded(_series(), False),
             f"{kind} at place 1: the series reaching it carries a mask",
             f"step 1 \\({kind}.*the series reaching it carries a mask")
