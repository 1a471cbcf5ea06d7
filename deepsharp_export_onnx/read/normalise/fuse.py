"""Decompositions put back together, so a reader meets one node whatever the operator set:

- GELU below operator set 20: x * 0.5 * (1 + Erf(x / sqrt 2)), its products in any order and
  association (Div by sqrt 2 or Mul by 1/sqrt 2) -> Gelu;
- LayerNorm below 17: Sub(x, ReduceMean(x)), its square (Pow 2 or Mul by itself), ReduceMean,
  Add epsilon, Sqrt, Div (or Mul by the Reciprocal), then Mul by a scale and Add of a bias (each
  optional) -> LayerNormalization over the axes reduced, ending on the last.

A fused node is named after the first node of its pattern and gives the last one's output name;
every value inside the pattern must be read only inside it.
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
def _gelu_at(g: Graph, erf: onnx.NodeProto) -> tuple[str, list[onnx.NodeProto], str] | None:
    """(x, the pattern's nodes, its output) for the GELU around this Erf."""
    scaled = g.producer(erf.input[0])
    if scaled is None or scaled.op_type not in ("Div", "Mul") or len(scaled.input) != 2:
        return None
    if scaled.op_type == "Div":
        x, ok = scaled.input[0], _near(_scalar(g, scaled.input[1]), math.sqrt(2.0))
    else:
        x = next((i for i in scaled.input if g.constant(i) is None), "")
        ok = _near(_scalar(g, _other(scaled, x)), 1.0 / math.sqrt(2.0))
    plus = g.only_reader(erf.output[0], "Add")
    if not ok or not x or plus is None or not _near(_scalar(g, _other(plus, erf.output[0])), 1.0):
        return None
    first = g.only_reader(plus.output[0], "Mul")
    if first is None:
        return None
    factor = _other(first, plus.output[0])
    nodes = [scaled, erf, plus, first]
    if factor == x or _near(_scalar(g, factor), 0.5):  # then one more Mul by the other factor
        last = g.only_reader(first.output[0], "Mul")
        wanted = 0.5 if factor == x else None
        other = _other(last, first.output[0]) if last is not None else ""
        if last is None or (other != x if wanted is None else not _near(_scalar(g, other), 0.5)):
            return None
        return x, nodes + [last], last.output[0]
    half = g.producer(factor)  # Mul(x, 0.5) made first
    if half is None or half.op_type != "Mul" or x not in half.input or \
            not _near(_scalar(g, _other(half, x)), 0.5) or len(g.consumers(factor)) != 1:
        return None
    return x, nodes + [half], first.output[0]


def fuse_gelu(g: Graph) -> bool:
    changed = False
    for erf in [n for n in g.nodes if n.op_type == "Erf"]:
        found = _gelu_at(g, erf)
        if found is None or not _inside(g, found[1], found[2]):
            continue
        x, nodes, out = found
        fused = helper.make_node("Gelu", [x], [out], name=nodes[0].name, approximate="none")
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


FUSIONS: list[Callable[[Graph], bool]] = [fuse_gelu, fuse_layer_norm]
