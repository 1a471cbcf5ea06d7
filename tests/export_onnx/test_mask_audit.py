"""Every layer kind against a masked series: it keeps the meaning exact (a series padded at the
start or with holes answers at its real steps, or as a whole once reduced, what the unpadded
series answers, in the network and in ONNX Runtime), or it is refused by name with the way out
(in the network and by the exporter, by the same `mask_refusal`), or no masked series can reach
it. The table below holds every registered kind, and so does docs/networks.md's mask table."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from deepsharp import MeanSquaredError, RandomStream, Sequential, Shape
from deepsharp.errors import MaskRefused, ShapeError
from deepsharp.layers.base import SPEC_KINDS
from deepsharp_export_onnx import ExportRefused, OnnxExport
from tests.export_onnx.test_padding_anywhere import lay_out
from tests.support.onnx_check import ort_session

LOSS = MeanSquaredError()
STEPS, CHANNELS = 6, 4
SHAPE = Shape(STEPS, CHANNELS)
DOCS = Path(__file__).resolve().parents[2] / "docs" / "networks.md"


def masked() -> Sequential:
    return Sequential().masking(0.0)


def image() -> Sequential:
    """A masked series whose steps carry (2, 2) images: the mask rides on (step by step)."""
    return masked().reshape((STEPS, 2, 2))


def volume() -> Sequential:
    return masked().reshape((STEPS, 2, 2, 1))


ACTIVATIONS = ["relu", "sigmoid", "tanh", "gelu", "silu", "elu", "leaky_relu", "softplus",
               "softmax", "hardtanh", "relu6", "mish", "hard_sigmoid", "hard_swish", "prelu"]
# kind -> the layer after a masked series, whose real steps answer as the unpadded series'
EXACT = {
    **{kind: (lambda kind=kind: getattr(masked(), kind)()) for kind in ACTIVATIONS},
    "dense": lambda: masked().dense(3),
    "low_rank_dense": lambda: masked().low_rank_dense(3, 2),
    "layer_norm": lambda: masked().layer_norm(),
    "rms_norm": lambda: masked().rms_norm(),
    "batch_norm": lambda: masked().batch_norm(),
    "group_norm": lambda: masked().group_norm(2),
    "instance_norm": lambda: masked().instance_norm(),
    "dropout": lambda: masked().dropout(0.5),
    "spatial_dropout": lambda: masked().spatial_dropout(0.5),
    "gaussian_noise": lambda: masked().gaussian_noise(0.1),
    "columns": lambda: masked().columns(1, 3),
    "residual": lambda: masked().residual(Sequential().conv1d(CHANNELS, 3, padding="same")),
    "gate": lambda: masked().gate(Sequential().global_avg_pool(keep_axes=True).dense(CHANNELS)
                                  .sigmoid()),
    "concat": lambda: masked().concat(Sequential().conv1d(2, 3, padding="causal"), Sequential()),
    "attention": lambda: masked().attention(causal=True),
    "multi_head_attention": lambda: masked().multi_head_attention(2, 4),
    "sine_positions": lambda: masked().sine_positions(),
    "lstm": lambda: masked().lstm(3, return_sequences=True),
    "gru": lambda: masked().gru(3),
    "global_avg_pool": lambda: masked().global_avg_pool(),
    "global_max_pool": lambda: masked().global_max_pool(),
    "attention_pool": lambda: masked().attention_pool(),
    "conv1d": lambda: masked().conv1d(3, 3, padding="same"),
    "conv_transpose1d": lambda: masked().conv_transpose1d(3, 3, padding="same"),
    "masking": lambda: masked().dense(3).masking(0.0),
    "upsample": lambda: image().upsample(scale=(1, 2)),   # the steps left as they are
    "pad": lambda: image().pad(((0, 0), (1, 1))),          # the steps left as they are
    "reshape": lambda: image(),                            # each step's values as a (2, 2) image
}
# more exact forms of kinds above
EXACT_FORMS = {
    "concat-of-pools": lambda: masked().concat(Sequential().global_max_pool(),
                                               Sequential().attention_pool()),
    "residual-of-attention": lambda: masked().residual(Sequential().multi_head_attention(2, 4))
    .global_avg_pool(),
}
# kind -> (the layer after a masked series, its place, words of the way out)
REFUSED = {
    "conv2d": (lambda: image().conv2d(2, 3, padding="same"), 2, "an image"),
    "conv3d": (lambda: volume().conv3d(2, 1), 2, "a volume"),
    "conv_transpose2d": (lambda: image().conv_transpose2d(2, 3, padding="same"), 2, "an image"),
    "conv_transpose3d": (lambda: volume().conv_transpose3d(2, 1), 2, "a volume"),
    "max_pool1d": (lambda: masked().max_pool1d(2), 1, "global_max_pool"),
    "max_pool2d": (lambda: image().max_pool2d(1), 2, "global_max_pool"),
    "max_pool3d": (lambda: volume().max_pool3d(1), 2, "global_max_pool"),
    "avg_pool1d": (lambda: masked().avg_pool1d(3, stride=1, padding="same"), 1, "global_avg_pool"),
    "avg_pool2d": (lambda: image().avg_pool2d(1), 2, "global_avg_pool"),
    "avg_pool3d": (lambda: volume().avg_pool3d(1), 2, "global_avg_pool"),
    "adaptive_avg_pool": (lambda: masked().adaptive_avg_pool(2), 1, "padded length"),
    "adaptive_max_pool": (lambda: masked().adaptive_max_pool(2), 1, "padded length"),
    "flatten": (lambda: masked().flatten(), 1, "reduce over the steps first"),
    "from_channels_first": (lambda: masked().from_channels_first(), 1, "before the mask is made"),
    "to_channels_first": (lambda: masked().to_channels_first(), 1, "before the mask is made"),
}
# more refusals of kinds that are exact in another form
REFUSED_FORMS = {
    "conv1d-valid": (lambda: masked().conv1d(2, 3), 1, "conv1d", "padding 'valid'"),
    "conv1d-strided": (lambda: masked().conv1d(2, 3, stride=2, padding="same"), 1, "conv1d",
                       "stride 2"),
    "conv_transpose1d-strided": (lambda: masked().conv_transpose1d(2, 3, stride=2), 1,
                                 "conv_transpose1d", "use stride 1 with padding 'same'"),
    "pad-steps": (lambda: masked().pad(1), 1, "pad", "conv1d with padding 'same' or 'causal'"),
    "upsample-steps": (lambda: masked().upsample(scale=2), 1, "upsample",
                       "upsample series without a mask"),
    "reshape-steps": (lambda: masked().reshape((STEPS * CHANNELS,)), 1, "reshape",
                      "reduce over the steps first"),
}
# kinds no masked series reaches: they make a mask from ids, or take numbers, not a series
MAKE_OR_TAKE_NO_SERIES = {"embedding", "periodic_embedding"}


def test_the_audit_holds_every_layer_kind():
    ours = {kind for kind, cls in SPEC_KINDS.items() if cls.__module__.startswith("deepsharp.")}
    audited = set(EXACT) | set(REFUSED) | MAKE_OR_TAKE_NO_SERIES
    assert audited == ours, (sorted(ours - audited), sorted(audited - ours))


def test_docs_say_what_every_layer_does_with_a_mask():
    text = DOCS.read_text()
    table = text.split("#### What each layer does with a mask", 1)[1].split("\n\n", 2)[1]
    listed = set(re.findall(r"`([a-z0-9_]+)`", "\n".join(
        line.split("|")[1] for line in table.splitlines() if line.startswith("| `"))))
    ours = {kind for kind, cls in SPEC_KINDS.items() if cls.__module__.startswith("deepsharp.")}
    assert ours <= listed, sorted(ours - listed)


def _series(count: int, steps: int, seed: int) -> list[np.ndarray]:
    generator = np.random.default_rng(seed)
    return [generator.standard_normal((n, CHANNELS)).astype(np.float32) + 3.0
            for n in generator.integers(1, steps, count)]


@pytest.mark.parametrize("kind", sorted(EXACT) + sorted(EXACT_FORMS))
def test_exact_layers_answer_as_the_unpadded_series(kind):
    stack = {**EXACT, **EXACT_FORMS}[kind]()
    network = stack.lower(SHAPE, RandomStream(0))
    session = ort_session(OnnxExport(SHAPE).to_bytes(network, LOSS))
    fixed = any(spec.kind == "reshape" for spec in stack)  # the reshape holds the length
    series = _series(4, STEPS, seed=1)
    steps_out = len(network.output_shape) >= 2
    for where in ("start", "holes"):
        batch, places = lay_out(series, STEPS, where, 0.0)
        end, _ = lay_out(series, STEPS, "end", 0.0)
        out = network.predict(batch, LOSS)
        np.testing.assert_allclose(session.run(None, {"input": batch})[0], out, rtol=0, atol=1e-5)
        for row, (s, index) in enumerate(zip(series, places)):
            own = (network.predict(end[row:row + 1], LOSS)[0][:len(s)] if fixed
                   else network.predict(s[None], LOSS)[0])
            got = out[row][index] if steps_out else out[row]
            np.testing.assert_allclose(got, own, rtol=0, atol=1e-5, err_msg=f"{where}, row {row}")


def _assert_refused(stack: Sequential, place: int, kind: str, words: str) -> None:
    network = stack.lower(SHAPE, RandomStream(0))
    batch, _ = lay_out(_series(3, STEPS, seed=2), STEPS, "holes", 0.0)
    with pytest.raises(MaskRefused, match=rf"^predict: x: {kind} at place {place}: the series "
                                          rf"reaching it carries a mask .*{re.escape(words)}"):
        network.predict(batch, LOSS)  # the design, not the batch's shape, is named
    with pytest.raises(ExportRefused, match=rf"step {place} \({kind}\(.*\): the series reaching "
                                            rf"it carries a mask .*{re.escape(words)}"):
        OnnxExport(SHAPE).to_bytes(network, LOSS)


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_refused_layers_name_themselves_and_the_way_out(kind):
    build, place, words = REFUSED[kind]
    _assert_refused(build(), place, kind, words)


@pytest.mark.parametrize("form", sorted(REFUSED_FORMS))
def test_refused_forms_name_themselves_and_the_way_out(form):
    build, place, kind, words = REFUSED_FORMS[form]
    _assert_refused(build(), place, kind, words)


def test_no_masked_series_reaches_the_layers_taking_ids_or_numbers():
    for kind in MAKE_OR_TAKE_NO_SERIES:
        stack = (masked().embedding(10, 2) if kind == "embedding"
                 else masked().periodic_embedding(2, 3))
        with pytest.raises(ShapeError) as refused:
            stack.lower(SHAPE, RandomStream(0))
        assert kind in str(refused.value) and "place 1" in str(refused.value)
