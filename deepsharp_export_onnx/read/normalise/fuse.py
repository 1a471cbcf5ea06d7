"""Decompositions put back together, so a reader meets one node whatever the operator set:

- GELU below operator set 20: x * 0.5 * (1 + Erf(x / sqrt 2)), its products in any order and
  association (Div by sqrt 2 or Mul by 1/sqrt 2) -> Gelu; and its tanh form,
  x * 0.5 * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), the cube as Pow or two Muls
  -> Gelu(approximate="tanh");
- LayerNorm below 17: Sub(x, ReduceMean(x)), its square (Pow 2 or Mul by itself), ReduceMean,
  Add epsilon, Sqrt, Div (or Mul by the Reciprocal), then Mul by a scale and Add of a bias (each
  optional) -> LayerNormalization over the axes reduced, ending on the last;
- a mean over axes of a free size, as deepsharp writes it (so that a mean over no values is
  NaN, 0 / 0, where ONNX Runtime's ReduceMean gives 0):
  Div(ReduceSum(x, axes), Cast(ReduceProd(Gather(Shape(x), axes)))) -> ReduceMean(x, axes);
- softplus with PyTorch's threshold as torch.export writes nn.Softplus():
  Where(Greater(x, t), x, Softplus(x)) -> Softplus(x) where t >= 20 (exact in float32).

A fused node is named after the first node of its pattern (the mean: after its Div, the node
the writer names after the layer) and gives the last one's output name; every value inside the
pattern must be read only inside it.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import onnx
from onnx import helper

from deepsharp_export_onnx.read.normalise.graph import Graph


def _scalar(g: Graph, name: str) -> float | None:
    array = g.constant(name)
    return float(array.reshape(-1)[0]) if array is not None and array.size == 1 else None


def _near(value: float | None, target: float) -> bool:
    return value is not None and abs(value - target) <= 1e-6 * max(1.0, abs(target))


def _other(node: onnx.NodeProto, value: str) -> str:
    return node.input[1] if node.input[0] == value else node.input[0]


# -- GELU -------------------------------------------------------------------------------------------
# the tanh form's constants, as PyTorch writes them (float32 of 0.044715 and of sqrt(2 / pi))
CUBIC, ROOT_TWO_OVER_PI = 0.044715, math.sqrt(2.0 / math.pi)


def _erf_head(g: Graph, erf: onnx.NodeProto) -> tuple[str, list[onnx.NodeProto]] | None:
    """(x, nodes) for Erf(x / sqrt 2) (or Erf(x * (1 / sqrt 2)))."""
    scaled = g.producer(erf.input[0])
    if scaled is None or scaled.op_type not in ("Div", "Mul") or len(scaled.input) != 2:
        return None
    if scaled.op_type == "Div":
        x, ok = scaled.input[0], _near(_scalar(g, scaled.input[1]), math.sqrt(2.0))
    else:
        x = next((i for i in scaled.input if g.constant(i) is None), "")
        ok = _near(_scalar(g, _other(scaled, x)), 1.0 / math.sqrt(2.0))
    return (x, [scaled, erf]) if ok and x else None


def _by_constant(g: Graph, node: onnx.NodeProto | None, value: float) -> str | None:
    """The operand of a Mul by the constant `value` (either side), else None."""
    if node is None or node.op_type != "Mul" or len(node.input) != 2:
        return None
    for i in (0, 1):
        if _near(_scalar(g, node.input[i]), value) and g.constant(node.input[1 - i]) is None:
            return node.input[1 - i]
    return None


def _cube_of(g: Graph, value: str) -> tuple[str, list[onnx.NodeProto]] | None:
    """(x, nodes) for Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x)."""
    node = g.producer(value)
    if node is None:
        return None
    if node.op_type == "Pow" and _near(_scalar(g, node.input[1]), 3.0):
        return node.input[0], [node]
    if node.op_type != "Mul" or len(node.input) != 2:
        return None
    for x, square_name in (node.input, node.input[::-1]):
        square = g.producer(square_name)
        if square is not None and square.op_type == "Mul" and list(square.input) == [x, x]:
            return x, [square, node]
    return None


def _tanh_head(g: Graph, tanh: onnx.NodeProto) -> tuple[str, list[onnx.NodeProto]] | None:
    """(x, nodes) for Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)), products either way round."""
    scaled = g.producer(tanh.input[0])
    inner = _by_constant(g, scaled, ROOT_TWO_OVER_PI)
    plus = g.producer(inner) if inner else None
    if plus is None or plus.op_type != "Add" or len(plus.input) != 2:
        return None
    for x, term in (plus.input, plus.input[::-1]):
        times = g.producer(term)
        cubed = _by_constant(g, times, CUBIC)
        cube = _cube_of(g, cubed) if cubed else None
        if cube is not None and cube[0] == x:
            return x, [*cube[1], times, plus, scaled, tanh]
    return None


def _gelu_tail(g: Graph, x: str, inner: onnx.NodeProto) -> tuple[list[onnx.NodeProto], str] | None:
    """(nodes, output) for 0.5 * x * (1 + inner), its products in any order and association."""
    plus = g.only_reader(inner.output[0], "Add")
    if plus is None or not _near(_scalar(g, _other(plus, inner.output[0])), 1.0):
        return None
    first = g.only_reader(plus.output[0], "Mul")
    if first is None:
        return None
    factor = _other(first, plus.output[0])
    nodes = [plus, first]
    if factor == x or _near(_scalar(g, factor), 0.5):  # then one more Mul by the other factor
        last = g.only_reader(first.output[0], "Mul")
        wanted = 0.5 if factor == x else None
        other = _other(last, first.output[0]) if last is not None else ""
        if last is None or (other != x if wanted is None else not _near(_scalar(g, other), 0.5)):
            return None
        return nodes + [last], last.output[0]
    half = g.producer(factor)  # Mul(x, 0.5) made first
    if half is None or half.op_type != "Mul" or x not in half.input or \
            not _near(_scalar(g, _other(half, x)), 0.5) or len(g.consumers(factor)) != 1:
        return None
    return nodes + [half], first.output[0]


def fuse_gelu(g: Graph) -> bool:
    """Both of PyTorch's decompositions: the Erf form -> Gelu, the tanh form -> Gelu(tanh)."""
    changed = False
    for node in [n for n in g.nodes if n.op_type in ("Erf", "Tanh")]:
        head = (_erf_head if node.op_type == "Erf" else _tanh_head)(g, node)
        tail = _gelu_tail(g, head[0], node) if head is not None else None
        if tail is None:
            continue
        (x, first), (rest, out) = head, tail
        nodes = first + rest
        if not _inside(g, nodes, out):
            continue
        fused = helper.make_node("Gelu", [x], [out], name=nodes[0].name,
                                 approximate="none" if node.op_type == "Erf" else "tanh")
        g.replace(nodes, fused)
        changed = True
    return changed


# -- LayerNorm ----------------------------------------------------------------------------------------
def _layer_norm_at(g: Graph, sub: onnx.NodeProto):
    """(x, axes, epsilon, nodes, scale, bias, output) for the LayerNorm starting at this Sub."""
    x = sub.input[0]
    mean = g.producer(sub.input[1])
    if mean is None or mean.op_type != "ReduceMean" or mean.input[0] != x:
        return None
    d = sub.output[0]
    readers = g.consumers(d)
    square = next((n for n in readers if n.op_type in ("Pow", "Mul") and n.input[0] == d), None)
    if square is None or (square.op_type == "Pow" and not _near(_scalar(g, square.input[1]), 2.0)) \
            or (square.op_type == "Mul" and list(square.input) != [d, d]):
        return None
    variance = g.only_reader(square.output[0], "ReduceMean")
    plus = g.only_reader(variance.output[0], "Add") if variance is not None else None
    eps = _scalar(g, _other(plus, variance.output[0])) if plus is not None else None
    root = g.only_reader(plus.output[0], "Sqrt") if plus is not None else None
    if eps is None or root is None or g.axes(variance) != g.axes(mean):
        return None
    nodes = [mean, sub, square, variance, plus, root]
    divide = next((n for n in readers if n is not square), None)
    if divide is None or len(readers) != 2:
        return None
    if divide.op_type == "Div" and list(divide.input) == [d, root.output[0]]:
        nodes.append(divide)
    else:
        inverse = g.only_reader(root.output[0], "Reciprocal")
        if inverse is None or divide.op_type != "Mul" or sorted(divide.input) != sorted([d, inverse.output[0]]):
            return None
        nodes += [inverse, divide]
    out, scale, bias = divide.output[0], None, None
    times = g.only_reader(out, "Mul")
    if times is not None and g.constant(_other(times, out)) is not None:
        scale, out = _other(times, out), times.output[0]
        nodes.append(times)
    plus_bias = g.only_reader(out, "Add")
    if plus_bias is not None and g.constant(_other(plus_bias, out)) is not None:
        bias, out = _other(plus_bias, out), plus_bias.output[0]
        nodes.append(plus_bias)
    return x, g.axes(mean), eps, nodes, scale, bias, out


def fuse_layer_norm(g: Graph) -> bool:
    changed = False
    for sub in [n for n in g.nodes if n.op_type == "Sub" and len(n.input) == 2]:
        found = _layer_norm_at(g, sub)
        if found is None:
            continue
        x, axes, eps, nodes, scale, bias, out = found
        dims = g.dims.get(x)
        if dims is None or axes is None or not _inside(g, nodes, out):
            continue
        rank = len(dims)
        axes = sorted(a % rank for a in axes)
        if axes != list(range(axes[0], rank)):
            continue
        width = tuple(dims[axes[0]:])
        if not all(isinstance(w, int) for w in width):
            continue
        scale = scale or g.add_constant(sub.name or out, np.ones(width, np.float32))
        bias = bias or g.add_constant(sub.name or out, np.zeros(width, np.float32))
        if g.constant(scale).shape != width or g.constant(bias).shape != width:
            continue  # a scale broadcast from fewer axes is not the layer's per-channel one
        fused = helper.make_node("LayerNormalization", [x, scale, bias], [out],
                                 name=nodes[0].name, axis=axes[0] - rank, epsilon=eps)
        g.replace(nodes, fused)
        changed = True
    return changed


# -- mean ---------------------------------------------------------------------------------------------
def _attr(node: onnx.NodeProto, name: str, default=None):
    found = [a for a in node.attribute if a.name == name]
    return helper.get_attribute_value(found[0]) if found else default


def _mean_at(g: Graph, div: onnx.NodeProto):
    """(x, axes, keepdims, nodes) where this Div is ReduceSum(x, axes) over the count of those
    axes read from x's shape, Cast(ReduceProd(Gather(Shape(x), axes), [0])), else None."""
    total, count = (g.producer(v) for v in div.input)
    if total is None or total.op_type != "ReduceSum" or count is None or count.op_type != "Cast":
        return None
    x, dims = total.input[0], g.dims.get(total.input[0])
    product = g.producer(count.input[0])
    if dims is None or _attr(count, "to") != g.elem_type(x) or product is None \
            or product.op_type != "ReduceProd" or _attr(product, "keepdims", 1) != 0 \
            or g.axes(product) not in ([0], [-1]):
        return None
    sizes = g.producer(product.input[0])
    shape = g.producer(sizes.input[0]) if sizes is not None and sizes.op_type == "Gather" else None
    picked = g.constant(sizes.input[1]) if shape is not None else None
    if picked is None or _attr(sizes, "axis", 0) != 0 or shape.op_type != "Shape" \
            or shape.input[0] != x or shape.attribute:  # (Shape's start and end: not written)
        return None
    rank, axes = len(dims), g.axes(total)
    counted = [int(a) % rank for a in picked.reshape(-1)]
    if axes is None or sorted(a % rank for a in axes) != sorted(set(counted)) \
            or len(counted) != len(set(counted)):
        return None
    return x, axes, _attr(total, "keepdims", 1), [total, shape, sizes, product, count, div]


def fuse_mean(g: Graph) -> bool:
    changed = False
    for div in [n for n in g.nodes if n.op_type == "Div" and len(n.input) == 2]:
        found = _mean_at(g, div)
        if found is None or not _inside(g, found[3], div.output[0]):
            continue
        x, axes, keep, nodes = found
        g.replace(nodes, g.make("ReduceMean", [x], [div.output[0]], div.name, axes=axes,
                                keepdims=keep))
        changed = True
    return changed


# -- softplus's threshold --------------------------------------------------------------------------------
SOFTPLUS_EXACT = 20.0  # float32: above it log(1 + e^x) rounds to x, so the Where changes nothing


def fuse_softplus_threshold(g: Graph) -> bool:
    """torch.export writes nn.Softplus() (beta 1) with its threshold: Where(Greater(x, t), x,
    Softplus(x)). At t >= 20 in float32 that is Softplus(x) exactly, the one form every reader
    meets (a Softplus inside a larger pattern too); a lower threshold or another beta is read
    by the activation readers as softplus(beta, threshold)."""
    changed = False
    for where in [n for n in g.nodes if n.op_type == "Where" and len(n.input) == 3]:
        greater, soft = g.producer(where.input[0]), g.producer(where.input[2])
        if greater is None or soft is None or greater.op_type != "Greater" \
                or soft.op_type != "Softplus" or len(greater.input) != 2:
            continue
        x = where.input[1]
        threshold = _scalar(g, greater.input[1])
        if greater.input[0] != x or soft.input[0] != x or threshold is None \
                or not threshold >= SOFTPLUS_EXACT or g.types.get(x) != onnx.TensorProto.FLOAT \
                or not _inside(g, [greater, soft, where], where.output[0]):
            continue
        g.replace([greater, soft, where], g.make("Softplus", [x], [where.output[0]], soft.name))
        changed = True
    return changed


def _inside(g: Graph, nodes: list[onnx.NodeProto], out: str) -> bool:
    """Every value the pattern makes, but its output, is read only by the pattern's nodes."""
    ids = {id(n) for n in nodes}
    for node in nodes:
        for value in node.output:
            if value == out or not value:
                continue
            if g.is_output(value) or any(id(r) not in ids for r in g.consumers(value)):
                return False
    return True


FUSIONS: list[Callable[[Graph], bool]] = [fuse_gelu, fuse_layer_norm, fuse_mean,
                                           fuse_softplus_threshold]
