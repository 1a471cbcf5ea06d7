"""The spatial primitives traced: each alone over symbolic batch, steps and width, a small CNN
written as code with a symbolic width, and what cannot be expressed (SYMBOLIC_SHAPE)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from deepsharp import MeanSquaredError, Module, Parameter, Shape, functional as F
from deepsharp.errors import TraceErrorKind, TraceException
from deepsharp.tensors import Tensor
from deepsharp.tracing import Tracer
from deepsharp_export_onnx import OnnxExport, check_annotations
from tests.support.onnx_check import assert_valid, ort_session
from tests.support.trace_check import assert_close, check_trace

_rng = np.random.default_rng(11)


def weight(*shape, scale=0.4, offset=0.0):
    return Tensor((offset + _rng.standard_normal(shape) * scale).astype(np.float32))


K1, B5 = weight(3, 3, 5), weight(5)            # a series' kernel: 3 steps, 3 -> 5 channels
K2, B4 = weight(3, 3, 3, 4), weight(4)         # an image's: 3 x 3, 3 -> 4 channels
KT1, KT2 = weight(4, 3, 5), weight(2, 3, 3, 4)  # transposed: (*window, C_in, C_out)
K3 = weight(2, 2, 2, 3, 2)                     # a volume's
KG, K54 = weight(3, 2, 2, 6), weight(3, 5, 4)  # 3 groups of 2 channels; a series' 5 -> 4
GAMMA, BETA = weight(3, scale=0.1, offset=1.0), weight(3, scale=0.1)
MEAN, VAR = weight(3, scale=0.2), Tensor(np.abs(_rng.standard_normal(3)).astype(np.float32) + 0.5)
GAMMA6, BETA6 = weight(6, scale=0.1, offset=1.0), weight(6, scale=0.1)

# example sizes differ from every fixed size of the cases (3, 4, 5, 6 channels, windows of 2-4)
SERIES = {"x": ("batch", "steps", 3)}
IMAGE = {"x": ("batch", 6, "width", 3)}
BT = {"batch": (7, 1, 2), "steps": (11, 8, 17)}
BW = {"batch": (7, 1, 2), "width": (11, 8, 17)}
B = {"batch": (7, 1, 2)}
FIXED_IMAGE = {"x": ("batch", 7, 9, 3)}

# (id, function, inputs, sizes, an ONNX op the graph must hold)
CASES = [
    ("conv1d-same-keeps-steps", lambda x: F.conv(x, K1, B5, padding="same"), SERIES, BT, "Conv"),
    ("conv1d-valid-new-extent", lambda x: F.conv(x, K1, padding="valid"), SERIES, BT, "Conv"),
    ("conv1d-causal-dilated", lambda x: F.conv(x, K1, B5, padding="causal", dilation=2),
     SERIES, BT, "Conv"),
    ("conv1d-same-stride-2", lambda x: F.conv(x, K1, B5, stride=2, padding="same"), SERIES, BT,
     "Conv"),
    ("conv2d-symbolic-width", lambda x: F.conv(x, K2, B4, padding=1), IMAGE, BW, "Conv"),
    ("conv2d-strided-width", lambda x: F.conv(x, K2, stride=(1, 2), padding=((1, 1), (0, 2))),
     IMAGE, BW, "Conv"),
    ("conv2d-groups", lambda x: F.conv(F.concat([x, x], axis=-1), KG, groups=3,
                                       padding="same"), IMAGE, BW, "Conv"),
    ("conv-kernel-computed-in-the-graph", lambda x: F.conv(x, K1 * x.mean().tanh(), padding=1),
     SERIES, BT, "Conv"),
    ("conv3d", lambda x: F.conv(x, K3, padding=(1, 0, 1)), {"x": ("batch", 4, 5, 6, 3)}, B, "Conv"),
    ("conv-transpose1d-stride-2", lambda x: F.conv_transpose(x, KT1, B5, stride=2, padding=1,
                                                             output_padding=1),
     SERIES, BT, "ConvTranspose"),
    ("conv-transpose1d-keeps-steps", lambda x: F.conv_transpose(x, KT1, padding=((1, 2),)),
     SERIES, BT, "ConvTranspose"),
    ("conv-transpose2d", lambda x: F.conv_transpose(x, KT2, B4, stride=2, dilation=(1, 2)),
     IMAGE, BW, "ConvTranspose"),
    ("max-pool1d", lambda x: F.max_pool(x, 2), SERIES, BT, "MaxPool"),
    ("max-pool2d-same", lambda x: F.max_pool(x, 3, stride=2, padding="same"), IMAGE, BW, "MaxPool"),
    ("max-pool2d-dilated", lambda x: F.max_pool(x, 2, stride=1, dilation=2), IMAGE, BW, "MaxPool"),
    ("avg-pool-border-not-counted", lambda x: F.avg_pool(x, 3, stride=1, padding=1), IMAGE, BW,
     "AveragePool"),
    ("avg-pool-same-strided", lambda x: F.avg_pool(x, 3, stride=2, padding="same"), IMAGE, BW,
     "AveragePool"),
    ("avg-pool-border-counted", lambda x: F.avg_pool(x, 2, padding=1, count_include_pad=True),
     SERIES, BT, "AveragePool"),
    ("adaptive-avg-unequal-bins", lambda x: F.adaptive_avg_pool(x, (3, 4)), FIXED_IMAGE, B,
     "MatMul"),
    ("adaptive-max-unequal-bins", lambda x: F.adaptive_max_pool(x, (3, 4)), FIXED_IMAGE, B,
     "ReduceMax"),
    ("adaptive-avg-equal-bins", lambda x: F.adaptive_avg_pool(x, (7, 3)), FIXED_IMAGE, B,
     "AveragePool"),
    ("adaptive-avg-over-steps", lambda x: F.adaptive_avg_pool(x, 4), SERIES, BT, "Range"),
    ("adaptive-max-over-steps", lambda x: F.adaptive_max_pool(x, 3), SERIES, BT, "Range"),
    # over a symbolic width the mean is a sum over the count read from the shape (mean_node)
    ("adaptive-avg-to-one-over-width", lambda x: F.adaptive_avg_pool(x, 1), IMAGE, BW,
     "ReduceSum"),
    ("adaptive-max-to-one-over-width", lambda x: F.adaptive_max_pool(x, (1, 1)), IMAGE, BW,
     "ReduceMax"),
    ("pad-constant-steps", lambda x: F.pad(x, (0, 0, 2, 1), value=0.5), SERIES, BT, "Pad"),
    ("pad-reflect-width", lambda x: F.pad(x, (0, 0, 2, 1, 1, 1), mode="reflect"),
     IMAGE, BW, "Pad"),
    ("pad-edge-channels", lambda x: F.pad(x, (1, 2), mode="replicate"), SERIES, BT, "Pad"),
    ("resize-nearest", lambda x: F.interpolate(x, scale=2), FIXED_IMAGE, B, "Resize"),
    ("resize-bilinear-to-size", lambda x: F.interpolate(x, size=(10, 5), mode="bilinear"),
     FIXED_IMAGE, B, "Resize"),
    ("resize-align-corners", lambda x: F.interpolate(x, size=(9, 13), mode="bilinear",
                                                     align_corners=True), FIXED_IMAGE, B, "Resize"),
    ("layer-norm", lambda x: F.layer_norm(x, GAMMA, BETA), SERIES, BT, "LayerNormalization"),
    ("rms-norm", lambda x: F.rms_norm(x, GAMMA), SERIES, BT, "RMSNormalization"),
    ("batch-norm-image", lambda x: F.batch_norm(x, MEAN, VAR, GAMMA, BETA), IMAGE, BW,
     "BatchNormalization"),
    ("batch-norm-rows", lambda x: F.batch_norm(x, MEAN, VAR, GAMMA, BETA), {"x": ("batch", 3)}, B,
     "BatchNormalization"),
    ("group-norm", lambda x: F.group_norm(F.concat([x, -x], axis=-1), 2, GAMMA6, BETA6), SERIES, BT,
     "GroupNormalization"),
    ("group-norm-rows", lambda x: F.group_norm(F.concat([x, -x], axis=-1), 3, GAMMA6, BETA6),
     {"x": ("batch", 3)}, B, "GroupNormalization"),
]


@pytest.mark.parametrize("fn, inputs, sizes, op_type", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_traced_spatial_op_matches_eager(fn, inputs, sizes, op_type):
    checked = check_trace(fn, inputs, sizes)
    assert op_type in checked.ops(), checked.ops()


def _dims(checked, name):
    values = [*checked.model.graph.value_info, *checked.model.graph.output]
    (value,) = [v for v in values if v.name == name]
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def test_a_window_keeping_the_length_keeps_the_symbol_and_a_stride_makes_a_new_atom():
    checked = check_trace(lambda x: F.conv(F.conv(x, K1, B5, padding="same").relu(),
                                           K54, stride=2),
                          SERIES, BT)
    convs = [n.output[0] for n in checked.model.graph.node
             if n.op_type == "Transpose" and n.name in ("conv_0", "output")]
    assert _dims(checked, convs[0]) == ["batch", "steps", 5]
    assert _dims(checked, "output") == ["batch", "conv3_1", 4]
    # the kernels are turned in the graph (the runtime folds them): the parameters' values kept
    kernels = [n for n in checked.model.graph.node if n.name.endswith("/kernel")]
    assert len(kernels) == 2 and all(n.op_type == "Transpose" for n in kernels)


def test_a_graph_of_spatial_nodes_takes_the_oldest_set_holding_them():
    assert check_trace(lambda x: F.max_pool(F.conv(x, K2, B4), 2), IMAGE, BW).opset == 8
    assert check_trace(lambda x: F.max_pool(x, 2, dilation=2), IMAGE, BW).opset == 10
    assert check_trace(lambda x: F.interpolate(x, scale=2), FIXED_IMAGE, B).opset == 11
    assert check_trace(lambda x: F.layer_norm(x, GAMMA, BETA), SERIES, BT).opset == 17
    assert check_trace(lambda x: F.group_norm(x, 3, GAMMA, BETA), SERIES, BT).opset == 21


@pytest.mark.parametrize("fn, fragment", [
    (lambda x: F.interpolate(x, scale=2), "resize (operation 1): place axis 2 is the symbolic "
                                          "size width"),
    (lambda x: F.adaptive_avg_pool(x, (2, 3)), "adaptive_avg_pool (operation 1): an adaptive "
                                               "pool of places (6, width) to sizes (2, 3)"),
    (lambda x: F.conv(x.permute(0, 1, 3, 2), weight(3, 1, 11, 4)),
     "conv (operation 2): axis 3 is the symbolic size width in one operand and fixed at 11"),
], ids=["resize", "adaptive-pool-of-an-image", "channels-the-kernel-takes"])
def test_what_cannot_follow_a_symbolic_place_is_refused_naming_the_op(fn, fragment):
    example = np.ones((7, 6, 11, 3), np.float32)
    with Tracer() as tracer:
        x = tracer.input("x", example, {0: "batch", 2: "width"})
        with pytest.raises(TraceException) as caught:
            fn(x)
    assert caught.value.kind is TraceErrorKind.SYMBOLIC_SHAPE
    assert fragment in str(caught.value), caught.value


class SmallCnn(Module):
    """Two convolutions over an image of any width: same-padded conv, ReLU, a strided max pool
    (the width becomes a new atom), a valid conv with batch norm (another atom), a group norm, a
    global average to one place, a linear head."""

    def __init__(self, channels=3, hidden=8, classes=5, seed=0):
        super().__init__()
        generator = np.random.default_rng(seed)

        def make(*shape, scale=0.3, offset=0.0):
            return Parameter((offset + generator.standard_normal(shape) * scale).astype(np.float32))

        self.conv1, self.bias1 = make(3, 3, channels, hidden), make(hidden)
        self.conv2 = make(3, 3, hidden, hidden)
        self.scale2, self.shift2 = make(hidden, scale=0.1, offset=1.0), make(hidden, scale=0.1)
        self.register_buffer("mean2", make(hidden, scale=0.1)._data)
        self.register_buffer("var2", np.abs(make(hidden)._data) + 0.5)
        self.scale3, self.shift3 = make(hidden, scale=0.1, offset=1.0), make(hidden, scale=0.1)
        self.head, self.head_bias = make(classes, hidden), make(classes)  # (out, in)

    def forward(self, x):
        h = F.conv(x, self.conv1, self.bias1, padding="same").relu()
        h = F.max_pool(h, 2)                                                 # (batch, 3, w1, 8)
        h = F.batch_norm(F.conv(h, self.conv2, padding=(1, 0)), self.mean2, self.var2,
                         self.scale2, self.shift2)                           # (batch, 3, w2, 8)
        h = F.group_norm(F.gelu(h), 4, self.scale3, self.shift3)
        pooled = F.adaptive_avg_pool(h, 1)                                   # (batch, 1, 1, 8)
        return F.linear(pooled.reshape(pooled.shape[0], -1), self.head, self.head_bias)


def test_a_small_cnn_with_a_symbolic_width():
    model = SmallCnn().eval()
    checked = check_trace(model.forward, {"x": ("batch", 7, "width", 3)},
                          {"batch": (5, 1, 3), "width": (13, 6, 30)},
                          parameters=dict(model._slots()))
    assert checked.count("Conv") == 2 and checked.opset == 21   # GroupNormalization
    assert max(checked.errors.values()) < 1e-5
    dims = [_dims(checked, n.output[0]) for n in checked.model.graph.node if n.op_type == "Conv"]
    assert dims[0] == ["batch", 8, 7, "width"]          # channels-first; same padding keeps it
    assert dims[1][:2] == ["batch", 8] and dims[1][3] not in ("width", 0)


def test_the_cnn_through_module_trace_names_its_slots():
    model = SmallCnn()
    x = np.random.default_rng(2).standard_normal((5, 7, 13, 3)).astype(np.float32)
    proto = model.trace(x, axis_names={0: "batch", 2: "width"}).to_onnx()
    named = {i.name for i in proto.graph.initializer
             if "/" not in i.name and not i.name.startswith("const_")}
    assert named == set(model.state_dict())


class SeriesCnn(Module):
    """A convolution over a series' steps, a strided max pool, a mean over the steps."""

    def __init__(self):
        super().__init__()
        self.kernel, self.bias = Parameter(K1._data), Parameter(B5._data)
        self.head = Parameter(weight(5, 2)._data)

    def forward(self, x):
        h = F.max_pool(F.conv(x, self.kernel, self.bias, padding="causal").relu(), 2)
        return h.mean(axis=1) @ self.head


def test_onnx_export_of_a_cnn_written_as_code_over_symbolic_steps():
    module = SeriesCnn()
    data = OnnxExport(Shape(16, 3)).to_bytes(module, MeanSquaredError())
    model = onnx.load_from_string(data)
    assert_valid(model)
    for n, steps in [(1, 2), (4, 29)]:
        x = np.random.default_rng(steps).standard_normal((n, steps, 3)).astype(np.float32)
        assert_close(ort_session(data).run(None, {"input": x})[0], module.evaluate(x), 1e-5,
                     f"{n} series of {steps} steps")
        bindings = check_annotations(model, {"input": x})   # and the atoms the steps make
        assert (bindings["batch"], bindings["steps"]) == (n, steps)
