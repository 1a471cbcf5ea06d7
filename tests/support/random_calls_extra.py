"""The rest of the random calls (tests/support/random_calls.py): the trigonometric and
hyperbolic functions, pow and lerp, the linear-algebra methods, the indexed reads and writes
(index_add, index_copy, index_fill, index_put, masked_select, nonzero, unique, scatter_reduce,
select), and in-place methods applied through views of a clone, as a PyTorch user writes them.
"""

from __future__ import annotations

import numpy as np

from tests.support.random_calls import (Call, _array, _broadcast_partner, _dim, _kind, _method,
                                        _shape, _text)

MORE_UNARY = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
              "arcsin", "arccos", "arctan", "fix", "negative", "sign", "clip", "pow", "lerp"]


def more_elementwise(g) -> Call:
    """A trigonometric or hyperbolic function (out of place or in place on a clone), clip, pow
    by a number or a tensor, lerp by a number or a tensor weight."""
    name = MORE_UNARY[int(g.integers(0, len(MORE_UNARY)))]
    shape = _shape(g)
    kind = _kind(g, 0.8 if name not in ("sign", "negative", "fix") else 0.6, bools=False)
    if name in ("acosh",) and kind != "int":
        kind = "positive" if g.random() < 0.5 else kind  # acosh's domain starts at 1
    x = _array(g, shape, kind)
    if name == "acosh" and kind == "positive":
        x = x + np.float32(0.9)
    if name == "clip":
        low, high = [(-0.5, 0.5), (None, 1.0), (0.0, None), (1.0, -1.0)][int(g.integers(0, 4))]
        kwargs = {k: v for k, v in (("min", low), ("max", high)) if v is not None}
        return _method(name, [x], **kwargs)
    if name == "pow":
        if g.random() < 0.5:
            exponent = [2, 3, 0.5, -1.0, 0, 1.5][int(g.integers(0, 6))]
            if x.dtype.kind != "f" and exponent in (0.5, 1.5):
                x = np.abs(x)
            if x.dtype.kind != "f" and isinstance(exponent, float) and exponent < 0:
                exponent = 2
            return _method(name, [np.abs(x) if g.random() < 0.5 and x.dtype.kind == "f"
                                  else x], exponent)
        base = np.abs(_array(g, shape, "normal")) + np.float32(0.1)
        e = _array(g, _broadcast_partner(g, shape), "normal")
        return Call(_text(name, ("e",), {}, [base, e]), [base, e],
                    lambda ns, t: t[0].pow(t[1]))
    if name == "lerp":
        x = _array(g, shape, "normal")
        end = _array(g, _broadcast_partner(g, shape), "normal")
        if g.random() < 0.5:
            weight = [0.25, 0.75, -0.5, 1.5][int(g.integers(0, 4))]
            return Call(_text(name, ("end", weight), {}, [x, end]), [x, end],
                        lambda ns, t: t[0].lerp(t[1], weight))
        w = _array(g, _broadcast_partner(g, shape), "normal")
        return Call(_text(name, ("end", "w"), {}, [x, end, w]), [x, end, w],
                    lambda ns, t: t[0].lerp(t[1], t[2]))
    if g.random() < 0.3 and x.dtype.kind == "f" and name not in ("negative", "fix", "sign"):
        def in_place(ns, t):
            y = t[0].clone()
            getattr(y, name.replace("arc", "a") + "_")()
            return y
        return Call(f"y = x.clone(); y.{name}_() on {x.dtype}{x.shape}", [x], in_place)
    return _method(name, [x])


def linear_algebra(g) -> Call:
    """mm, bmm, dot, addmm (beta, alpha), cross (dim), diag (offsets, both ways)."""
    name = ["mm", "bmm", "dot", "addmm", "cross", "diag"][int(g.integers(0, 6))]
    n, k, m = (int(v) for v in g.integers(1, 5, 3))
    if name == "mm":
        arrays = [_array(g, (n, k), "normal"), _array(g, (k, m), "normal")]
        return Call(f"a{(n, k)}.mm(b{(k, m)})", arrays, lambda ns, t: t[0].mm(t[1]))
    if name == "bmm":
        b = int(g.integers(1, 4))
        arrays = [_array(g, (b, n, k), "normal"), _array(g, (b, k, m), "normal")]
        return Call(f"a{(b, n, k)}.bmm(b{(b, k, m)})", arrays, lambda ns, t: t[0].bmm(t[1]))
    if name == "dot":
        kind = "int" if g.random() < 0.2 else "normal"
        arrays = [_array(g, (k,), kind), _array(g, (k,), kind)]
        return Call(f"a{(k,)}.dot(b) of {kind}", arrays, lambda ns, t: t[0].dot(t[1]))
    if name == "addmm":
        bias = _array(g, [(n, m), (m,), (1, m), (n, 1), ()][int(g.integers(0, 5))], "normal")
        arrays = [bias, _array(g, (n, k), "normal"), _array(g, (k, m), "normal")]
        kwargs = {}
        if g.random() < 0.5:
            kwargs = {"beta": [0.5, 0.0, 2.0][int(g.integers(0, 3))],
                      "alpha": [1.0, -1.5][int(g.integers(0, 2))]}
        return Call(_text("addmm", ("m1", "m2"), kwargs, arrays), arrays,
                    lambda ns, t: t[0].addmm(t[1], t[2], **kwargs))
    if name == "cross":
        shape = list(_shape(g, 1, 3))
        d = _dim(g, len(shape))
        shape[d] = 3
        other = [1 if g.random() < 0.3 else s for s in shape]
        other[d] = 3
        arrays = [_array(g, tuple(shape), "normal"), _array(g, tuple(other), "normal")]
        return Call(f"a{tuple(shape)}.cross(b{tuple(other)}, dim={d})", arrays,
                    lambda ns, t: t[0].cross(t[1], dim=d))
    offset = int(g.integers(-2, 3))
    x = _array(g, (n,) if g.random() < 0.5 else (n, m), _kind(g, 0.8, bools=False))
    return _method("diag", [x], offset)


def indexed(g) -> Call:
    """Indexed reads and writes along one dim, as methods and in place on a clone."""
    shape = _shape(g, 1)
    rank, d = len(shape), _dim(g, len(shape))
    size = shape[d]
    x = _array(g, shape, "distinct" if g.random() < 0.7 else _kind(g, 0.5))
    name = ["index_add", "index_copy", "index_fill", "index_put", "masked_select", "nonzero",
            "argwhere", "unique", "scatter_reduce", "select"][int(g.integers(0, 10))]
    if name in ("index_add", "index_copy", "index_fill") and size:
        count = int(g.integers(0, size + 1))
        index = (g.permutation(size)[:count] if name == "index_copy" else
                 g.integers(-size if name == "index_fill" else 0, size, count)).astype(np.int64)
        source_shape = shape[:d % rank] + (count,) + shape[d % rank + 1:]
        source = _array(g, source_shape, "normal").astype(x.dtype)
        in_place = g.random() < 0.4
        if name == "index_fill":
            value = [-1.5, 2, True][int(g.integers(0, 3))]
            args, arrays = (d, "index", value), [x, index]
        else:
            args, arrays = (d, "index", "src"), [x, index, source]
        kwargs = {"alpha": 2} if name == "index_add" and g.random() < 0.3 else {}

        def run(ns, t):
            target = t[0].clone() if in_place else t[0]
            method = getattr(target, name + ("_" if in_place else ""))
            out = method(d, t[1], *(t[2:] if name != "index_fill" else (value,)), **kwargs)
            return target if in_place else out
        return Call(_text(name + ("_" if in_place else ""), args, kwargs, arrays), arrays, run)
    if name == "index_put" and size:
        accumulate = bool(g.random() < 0.5)
        count = int(g.integers(0, size + 1))
        index = (g.integers(0, size, count) if accumulate else
                 g.permutation(size)[:count]).astype(np.int64)
        values = _array(g, _broadcast_partner(g, (count,) + shape[1:]), "normal").astype(x.dtype)
        if x.dtype == np.bool_:
            accumulate = False
        return Call(f"x.index_put((i,), v, accumulate={accumulate}) on {x.dtype}{x.shape}, "
                    f"i {index.shape}, v {values.shape}",
                    [x, _first_axis(index, shape), values],
                    lambda ns, t: t[0].index_put((t[1],), t[2], accumulate=accumulate))
    if name == "masked_select":
        mask = _array(g, _broadcast_partner(g, shape), "bool")
        return Call(f"x.masked_select(mask{mask.shape}) on {x.dtype}{x.shape}", [x, mask],
                    lambda ns, t: t[0].masked_select(t[1]))
    if name in ("nonzero", "argwhere"):
        y = _array(g, shape, _kind(g, 0.3))
        return _method(name, [y])
    if name == "unique":
        y = _array(g, shape, "ties" if g.random() < 0.6 else "int")
        kwargs = {"sorted": True, "return_inverse": bool(g.random() < 0.5),
                  "return_counts": bool(g.random() < 0.5)}
        if g.random() < 0.3:
            kwargs["dim"] = d
        return _method(name, [y], **kwargs)
    if name == "scatter_reduce" and size:
        reduce = ["sum", "prod", "mean", "amax", "amin"][int(g.integers(0, 5))]
        sizes = tuple(int(g.integers(1, s + 1)) if s else 0 for s in shape)
        sizes = sizes[:d % rank] + (int(g.integers(1, 4)),) + sizes[d % rank + 1:]
        index = g.integers(0, size, sizes).astype(np.int64)
        src = _array(g, index.shape, "distinct")
        base = _array(g, shape, "distinct")
        include = bool(g.random() < 0.5)
        return Call(f"x.scatter_reduce({d}, index, src, {reduce!r}, include_self={include}) on "
                    f"{shape}, index {index.shape}", [base, index, src],
                    lambda ns, t: t[0].scatter_reduce(d, t[1], t[2], reduce,
                                                      include_self=include))
    if size:
        k = int(g.integers(-size, size))
        return _method("select", [x], d, k)
    return _method("sum", [x])


def _first_axis(index: np.ndarray, shape) -> np.ndarray:
    """index_put's indices address the first axis: index is drawn within shape[0] here."""
    return index % shape[0] if shape[0] else index[:0]


IN_PLACE = ["add_", "sub_", "mul_", "div_", "clamp_", "fill_", "zero_", "copy_", "masked_fill_",
            "pow_", "exp_", "relu_", "neg_", "sigmoid_", "tanh_", "sqrt_", "__ifloordiv__",
            "__imod__", "__ipow__"]


def through_views(g) -> Call:
    """An in-place method applied through a view of a clone (a basic index, a transpose, a
    narrow, a view, an unsqueeze): the base and the view both answer, and x's gradient flows
    through the write."""
    shape = _shape(g, 1, 3)
    x = _array(g, shape, "normal" if g.random() < 0.8 else "positive")
    rank = len(shape)
    view = ["index", "transpose", "narrow", "view", "unsqueeze", "diagonal"][int(g.integers(0, 6))]
    if view == "diagonal" and rank < 2:
        view = "index"
    d = _dim(g, rank)
    start = int(g.integers(0, shape[d] + 1)) if shape[d] else 0
    length = int(g.integers(0, shape[d] - start + 1)) if shape[d] else 0
    step = int(g.integers(1, 3))
    views = {"index": lambda y: y[(slice(None),) * (d % rank) + (slice(start, None, step),)],
             "transpose": lambda y: y.transpose(0, -1),
             "narrow": lambda y: y.narrow(d, start, length),
             "view": lambda y: y.view(-1),
             "unsqueeze": lambda y: y.unsqueeze(0),
             "diagonal": lambda y: y.diagonal(0, 0, -1)}
    name = IN_PLACE[int(g.integers(0, len(IN_PLACE)))]
    args = {"add_": (1.5,), "sub_": (0.25,), "mul_": (-2.0,), "div_": (4.0,),
            "clamp_": (-0.5, 0.5), "fill_": (0.75,), "pow_": (2,), "__ifloordiv__": (0.5,),
            "__imod__": (0.75,), "__ipow__": (3,)}.get(name, ())
    arrays = [x]
    partner = None
    if name in ("add_", "mul_", "copy_", "masked_fill_") and g.random() < 0.6 or \
            name in ("copy_", "masked_fill_"):
        from deepsharp.tensors import Tensor  # (the view's shape, as either library makes it)

        partner_shape = _broadcast_partner(g, views[view](Tensor(x)).shape)
        partner = _array(g, partner_shape, "bool" if name == "masked_fill_" else "normal")
        arrays.append(partner)
    if name == "sqrt_":
        arrays[0] = np.abs(x) + np.float32(0.1)

    def run(ns, t):
        y = t[0].clone()
        v = views[view](y)
        method = getattr(v, name)
        if name == "masked_fill_":
            method(t[1], -1.0)
        elif partner is not None:
            method(t[1])
        else:
            method(*args)
        return y, v
    text = f"y = x.clone(); y.{view}(...).{name}({'p' if partner is not None else args})"
    return Call(f"{text} on {x.dtype}{x.shape}" + (f", p {partner.shape}" if partner is not None
                                                  else ""), arrays, run)


EXTRA = (more_elementwise, linear_algebra, indexed, through_views)
