"""Activation nodes -> activation layers; x * Sigmoid(x) -> silu, x * Tanh(Softplus(x)) -> mish,
x * HardSigmoid(x) -> hard_swish; Clip by two constants -> hardtanh (relu6 at 0 and 6); PRelu by
a constant slope -> prelu."""

from __future__ import annotations

import numpy as np
import onnx

from deepsharp.layers.base import SPEC_KINDS
from deepsharp_export_onnx.read.readers.base import Read, Reading, reads, reads_fork, reads_pattern
from deepsharp_export_onnx.read.readers.patterns import other_input, producer, scalar
from deepsharp_export_onnx.read.readers.windows import spec_of
from layout import Order

_PLAIN = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softplus",
          "Mish": "mish", "HardSwish": "hard_swish"}


@reads(*_PLAIN)
def read_plain(node: onnx.NodeProto, r: Reading) -> Read:
    return Read(node.output[0], [node], [SPEC_KINDS[_PLAIN[node.op_type]]()], [{}])


@reads("Gelu")
def read_gelu(node: onnx.NodeProto, r: Reading) -> Read:
    approximate = r.view.attrs(node).get("approximate", "none")
    return Read(node.output[0], [node], [SPEC_KINDS["gelu"](approximate=approximate)], [{}])


@reads("Elu")
def read_elu(node: onnx.NodeProto, r: Reading) -> Read:
    alpha = r.view.attrs(node).get("alpha", 1.0)
    return Read(node.output[0], [node], [SPEC_KINDS["elu"](alpha=_float32(alpha))], [{}])


@reads("LeakyRelu")
def read_leaky_relu(node: onnx.NodeProto, r: Reading) -> Read:
    slope = r.view.attrs(node).get("alpha", 0.01)
    return Read(node.output[0], [node], [SPEC_KINDS["leaky_relu"](slope=_float32(slope))], [{}])


@reads("Softmax")
def read_softmax(node: onnx.NodeProto, r: Reading) -> Read:
    axis = r.view.attrs(node).get("axis", -1 if r.view.opset >= 13 else 1)
    channel = 1 if r.order is Order.CHANNELS_FIRST and r.rank > 2 else r.rank - 1
    if axis % r.rank != channel:
        raise r.unreadable(node, f"softmax over axis {axis}; the layer's is the channel axis "
                                 f"({channel})")
    return Read(node.output[0], [node], [SPEC_KINDS["softmax"]()], [{}])


@reads_fork
def read_silu(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    """Sigmoid(x) and Mul(x, Sigmoid(x)) reading the same x: a SiLU."""
    sigmoid = next((n for n in nodes if n.op_type == "Sigmoid"), None)
    mul = next((n for n in nodes if n.op_type == "Mul"), None)
    if len(nodes) != 2 or sigmoid is None or mul is None:
        return None
    if sorted(mul.input) != sorted([r.value, sigmoid.output[0]]):
        return None
    if r.view.open_consumers(sigmoid.output[0]) != [mul]:
        return None
    return Read(mul.output[0], [sigmoid, mul], [SPEC_KINDS["silu"]()], [{}])


@reads("Clip")
def read_clip(node: onnx.NodeProto, r: Reading) -> Read:
    """Clip(x, low, high) -> hardtanh(low, high), relu6 at (0, 6); Clip(x, 0) -> relu (the
    bounds constant inputs from set 11, attributes before it)."""
    low, high = _clip_bounds(node, r)
    if low == 0 and high is None:
        return Read(node.output[0], [node], [SPEC_KINDS["relu"]()], [{}])
    if low is None or high is None or not low < high:
        raise r.unreadable(node, f"a Clip to [{low}, {high}]: hardtanh takes two finite bounds, "
                                 f"low below high (relu a low bound of 0 alone)")
    spec = (SPEC_KINDS["relu6"]() if (low, high) == (0.0, 6.0)
            else SPEC_KINDS["hardtanh"](low=low, high=high))
    return Read(node.output[0], [node], [spec], [{}])


def _clip_bounds(node: onnx.NodeProto, r: Reading) -> tuple[float | None, float | None]:
    if r.view.opset < 11:
        a = r.view.attrs(node)
        bounds = [a.get("min"), a.get("max")]
        if any(b is not None and not isinstance(b, (int, float)) for b in bounds):
            raise r.unreadable(node, f"its min and max attributes must be numbers, received "
                                     f"{bounds}")
    else:
        bounds = [None, None]
        for k in (1, 2):
            if len(node.input) > k and node.input[k]:
                value = r.need_constant(node, k, ("min", "max")[k - 1])
                if value.size != 1:
                    raise r.unreadable(node, f"its bound (input {k}) must be one number, "
                                             f"received shape {value.shape}")
                bounds[k - 1] = float(value.reshape(-1)[0])
    low, high = (None if b is None or not np.isfinite(b) else _float32(b) for b in bounds)
    return low, high


@reads("PRelu")
def read_prelu(node: onnx.NodeProto, r: Reading) -> Read:
    """PRelu by a constant slope of one value, or one per channel lying along the channel axis
    ((C,) on a channels-last value, (C, 1, 1) on a channels-first image, PyTorch's) -> prelu."""
    slope = r.need_constant(node, 1, "slope")
    channel = 1 if r.order is Order.CHANNELS_FIRST and r.rank > 2 else r.rank - 1
    if slope.size == 1:
        return Read(node.output[0], [node], [SPEC_KINDS["prelu"]()],
                    [{"weight": slope.reshape(1).astype(np.float32)}])
    at = channel - (r.rank - slope.ndim)  # the slope's axis over the channels (right-aligned)
    if slope.ndim > r.rank or at < 0 or any(n != 1 for k, n in enumerate(slope.shape) if k != at):
        raise r.unreadable(node, f"a slope of shape {slope.shape}: prelu takes one value or one "
                                 f"per channel, along axis {channel} of this rank-{r.rank} value")
    dims = r.view.dims(r.value) or ()
    if channel < len(dims) and isinstance(dims[channel], int) and dims[channel] != slope.size:
        raise r.unreadable(node, f"{slope.size} slopes for {dims[channel]} channels")
    return Read(node.output[0], [node], [SPEC_KINDS["prelu"](per_channel=True)],
                [{"weight": slope.reshape(-1).astype(np.float32)}])


@reads("HardSigmoid")
def read_hard_sigmoid(node: onnx.NodeProto, r: Reading) -> Read:
    """HardSigmoid with alpha 1/6 and beta 1/2 (PyTorch's and Keras 3's) -> hard_sigmoid."""
    alpha, beta = _hard_sigmoid_constants(node, r)
    if not _pytorchs(alpha, beta):
        raise r.unreadable(node, f"HardSigmoid with alpha {float(alpha):.7g} and beta "
                                 f"{float(beta):.7g}: hard_sigmoid is PyTorch's (alpha 1/6, beta "
                                 f"1/2; Keras 2's 0.2 and 0.5 is not a layer here)")
    return Read(node.output[0], [node], [SPEC_KINDS["hard_sigmoid"]()], [{}])


def _hard_sigmoid_constants(node: onnx.NodeProto, r: Reading) -> tuple[float, float]:
    a = r.view.attrs(node)
    found = (a.get("alpha", 0.2), a.get("beta", 0.5))
    if not all(isinstance(v, (int, float)) for v in found):
        raise r.unreadable(node, f"its alpha and beta must be numbers, received {found}")
    return found


def _pytorchs(alpha: float, beta: float) -> bool:
    return np.float32(alpha) == np.float32(1 / 6) and np.float32(beta) == np.float32(0.5)


@reads_fork
def read_gated(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    """x * Tanh(Softplus(x)): a Mish; x * HardSigmoid(x) (alpha 1/6, beta 1/2): a HardSwish."""
    mul = next((n for n in nodes if n.op_type == "Mul"), None)
    first = next((n for n in nodes if n is not mul), None)
    if len(nodes) != 2 or mul is None or first is None:  # (a Mul listed twice: x * x)
        return None
    chain = [first]
    if first.op_type == "Softplus":
        tanh = r.view.open_consumers(first.output[0])
        if len(tanh) != 1 or tanh[0].op_type != "Tanh":
            return None
        chain.append(tanh[0])
        kind = "mish"
    elif first.op_type == "HardSigmoid":
        if not _pytorchs(*_hard_sigmoid_constants(first, r)):
            return None
        kind = "hard_swish"
    else:
        return None
    gate = chain[-1].output[0]
    if sorted(mul.input) != sorted([r.value, gate]) or r.view.open_consumers(gate) != [mul]:
        return None
    return Read(mul.output[0], [*chain, mul], [SPEC_KINDS[kind]()], [{}])


@reads_fork
def read_softplus_threshold(nodes: list[onnx.NodeProto], r: Reading) -> Read | None:
    """nn.Softplus(beta, threshold) as torch.export writes it: Where(Greater(x * beta, t), x,
    Softplus(x * beta) / beta) (at beta 1 without the Mul and the Div; at beta 1 and t >= 20 the
    normalising pass has made it one Softplus) -> softplus(beta, threshold)."""
    where = next((n for n in nodes if n.op_type == "Where" and len(n.input) == 3
                  and n.input[1] == r.value), None)
    back = producer(r, where.input[2]) if where is not None else None
    found = _softplus_of(r, back) if back is not None else None
    greater = producer(r, where.input[0], "Greater") if found is not None else None
    limit = scalar(r, greater.input[1]) if greater is not None and len(greater.input) > 1 else None
    if found is None or limit is None or greater.input[0] != found[1]:
        return None
    beta, _, chain = found
    taken = [*chain, greater, where]
    if any(id(n) not in {id(t) for t in taken} for n in nodes) or not _inside(r, taken, where):
        return None
    # beyond every float32 (inf), or NaN: the Where never picks x, no threshold
    threshold = _float32(limit) if limit <= np.finfo(np.float32).max else None
    spec = spec_of(where, r, "softplus", beta=beta, threshold=threshold)
    return Read(where.output[0], taken, [spec], [{}])


@reads_pattern("Mul")
def read_softplus_scaled(node: onnx.NodeProto, r: Reading) -> Read | None:
    """Softplus(x * beta) / beta, PyTorch's TorchScript form of nn.Softplus(beta) (it drops the
    threshold) -> softplus(beta, threshold=None)."""
    soft = r.view.open_consumers(node.output[0])
    back = r.view.open_consumers(soft[0].output[0]) if len(soft) == 1 else []
    if node.input[0] != r.value or len(soft) != 1 or soft[0].op_type != "Softplus" \
            or len(back) != 1 or back[0].op_type != "Div":
        return None
    found = _softplus_of(r, back[0])
    if found is None or found[1] != node.output[0]:
        return None
    return Read(back[0].output[0], found[2],
                [spec_of(node, r, "softplus", beta=found[0], threshold=None)], [{}])


def _softplus_of(r: Reading, back: onnx.NodeProto):
    """(beta, the value Softplus reads, the nodes from the Mul to `back`) when `back` is
    Softplus(x * beta) / beta of r.value (or Softplus(x) itself: beta 1), else None."""
    if back.op_type == "Softplus" and back.input[0] == r.value:
        return 1.0, r.value, [back]
    soft = producer(r, back.input[0], "Softplus") if back.op_type == "Div" \
        and len(back.input) == 2 else None
    scaled = producer(r, soft.input[0], "Mul") if soft is not None else None
    if scaled is None or r.value not in scaled.input:
        return None
    beta, divisor = scalar(r, other_input(scaled, r.value)), scalar(r, back.input[1])
    if beta is None or divisor is None or np.float32(beta) != np.float32(divisor):
        return None
    return _float32(beta), scaled.output[0], [scaled, soft, back]


def _inside(r: Reading, nodes: list[onnx.NodeProto], last: onnx.NodeProto) -> bool:
    """Every value the nodes make but the last one's is read by these nodes alone."""
    ids = {id(n) for n in nodes}
    return all(id(c) in ids for n in nodes if n is not last for o in n.output
               for c in r.view.open_consumers(o))


def _float32(value: float) -> float:
    """An attribute float as the float32 ONNX stored, read back as the shortest decimal that
    names the same float32 (0.3, not 0.30000001192092896): re-exporting writes the same bits."""
    return float(str(np.float32(value)))
