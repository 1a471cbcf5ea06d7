"""Functions over tensors for networks written as code: each is one primitive (or a short
composition), so autograd and the tracer see the same record a layer would leave."""

from __future__ import annotations

import builtins
import functools
import inspect
from typing import Any, Sequence

import numpy as np

from deepsharp.errors import OpError, SpecError
from deepsharp.run import current_run
from deepsharp.tensors import Tensor, apply
from deepsharp.tensors.tensor import as_tensor
from deepsharp.tensors import keywords as kw
# the tensor vocabulary (PyTorch's torch.* functions of the same names): docs/tensors.md
from deepsharp.tensors.api.activations import (  # noqa: F401
    elu, gelu, hardsigmoid, hardswish, hardtanh, leaky_relu, log_softmax, mish, prelu, relu,
    relu6, sigmoid, silu, softmax, softplus, tanh,
)
from deepsharp.tensors.api.arithmetic import (  # noqa: F401
    add, addmm, bmm, cross, div, dot, erf, isfinite, lerp, matmul, mm, nan_to_num, norm,
    normalize, reciprocal, round, sub, vector_norm,
)
from deepsharp.tensors.api.build import (  # noqa: F401
    arange, full, full_like, ones, ones_like, zeros, zeros_like,
)
from deepsharp.tensors.api.einsum import einsum  # noqa: F401
from deepsharp.tensors.api.elementwise import bitwise, clamp  # noqa: F401
from deepsharp.tensors.api.join import (  # noqa: F401
    cat, chunk, concat, concatenate, repeat_interleave, roll, split, stack, tile, unbind,
)
from deepsharp.tensors.api.reduce import (  # noqa: F401
    all, amax, amin, any, argmax, argmin, cumprod, cumsum, logsumexp, max, mean, min, prod,
    std, sum, var,
)
from deepsharp.tensors.api.scatter import (  # noqa: F401
    index_add, index_copy, index_fill, index_put, scatter, scatter_add, scatter_reduce,
)
from deepsharp.tensors.api.select import (  # noqa: F401
    argsort, argwhere, diag, diagonal, gather, index_select, masked_fill, masked_select, nonzero,
    one_hot, sort, take_along_axis, topk, tril, triu, unique, where,
)
from deepsharp.tensors.api.shape import (  # noqa: F401
    flatten, movedim, narrow, permute, squeeze, transpose, unflatten, unsqueeze,
)

clip = clamp
take_along_dim = take_along_axis
moveaxis = movedim


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T (+ bias), weight (out, in) as PyTorch's F.linear (a `dense` layer keeps its
    kernel (in, out): pass `layer.weight.T`)."""
    if not isinstance(weight, Tensor) or not (bias is None or isinstance(bias, Tensor)):
        raise OpError("linear: weight and bias must be tensors")
    if weight.ndim != 2 or x.shape[-1:] != weight.shape[1:]:
        raise OpError(f"linear: the weight {weight.shape} must be (out, in) with in = the input's "
                      f"last axis {x.shape[-1:]} (PyTorch's layout)")
    return apply("linear", x, weight, *(() if bias is None else (bias,)))


def _primitive(name: str, doc: str):
    def function(*tensors):
        return apply(name, *tensors)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


# one primitive each, PyTorch's torch.<name> (numpy broadcasting between two operands)
maximum = _primitive("maximum", "The elementwise maximum (float, int64 or bool); a tie halves "
                                "the gradient.")
minimum = _primitive("minimum", "The elementwise minimum.")
pow = _primitive("pow", "a ** b, b a number or a tensor.")
logical_and = _primitive("logical_and", "a and b, non-zero read as True.")
logical_or = _primitive("logical_or", "a or b, non-zero read as True.")
logical_xor = _primitive("logical_xor", "a xor b, non-zero read as True.")
logical_not = _primitive("logical_not", "not a, non-zero read as True.")


def bitwise_and(a: Any, b: Any) -> Tensor:
    """PyTorch's torch.bitwise_and (`a & b`): bitwise on integers, logical on bools."""
    return bitwise("&", a, b)


def bitwise_or(a: Any, b: Any) -> Tensor:
    """PyTorch's torch.bitwise_or (`a | b`)."""
    return bitwise("|", a, b)


def bitwise_xor(a: Any, b: Any) -> Tensor:
    """PyTorch's torch.bitwise_xor (`a ^ b`)."""
    return bitwise("^", a, b)


def bitwise_not(a: Any) -> Tensor:
    """PyTorch's torch.bitwise_not (`~a`): -a - 1 on integers, not on bools."""
    return bitwise("~", a)

remainder = _primitive("remainder", "a % b as Python's and PyTorch's (the sign of b).")
fmod = _primitive("fmod", "C's fmod(a, b) (the sign of a).")
floor_divide = _primitive("floor_divide", "a // b, rounded down (a zero gradient).")
floor, ceil, trunc, isnan, isinf = (
    _primitive(n, f"{n}(x), elementwise.") for n in ("floor", "ceil", "trunc", "isnan", "isinf"))
fix = trunc
tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh = (
    _primitive(n, f"{n}(x), elementwise.") for n in
    ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"))
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
mul = multiply = _primitive("mul", "a * b.")
neg = negative = _primitive("neg", "-a.")
subtract, divide = sub, div


def square(x: Tensor) -> Tensor:
    return as_tensor(x).square()
abs, sign, exp, log, log1p, sqrt, rsqrt, sin, cos = (
    _primitive(n, f"{n}(x), elementwise.") for n in
    ("abs", "sign", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos"))


def dropout(x: Tensor, rate: float, training: bool, purpose: str = "dropout") -> Tensor:
    """Zero each value with probability `rate` and scale the rest by 1/(1-rate), in training only.

    The mask is drawn from the run's stream under `purpose` (a layer passes `dropout:{path}`), so
    the same step of the same run always draws the same mask.
    """
    if not training or rate == 0.0:
        return x
    keep = current_run().draw(purpose, x.shape) >= rate
    return apply("dropout", x, Tensor(keep), rate=float(rate))


# -- series, images and volumes, held channels-last: x (N, *places, C) ---------------------------
# Each is the primitive the layer of the same name applies (see deepsharp.layers.conv, .pool,
# .resample, .norm); padding, stride, dilation and window arguments are taken as those layers take
# them. Kernels keep the window's places, then input channels, then output channels.
def _window(value, places: int) -> tuple[int, ...]:
    from deepsharp.layers.windows import per_axis

    return tuple(int(v) for v in per_axis(value, places))


def _border(padding, kernel, dilations):
    from deepsharp.layers.windows import pads_of

    return pads_of(padding, kernel, dilations)


def conv(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding="valid",
         dilation=1, groups: int = 1) -> Tensor:
    """The convolution of conv1d/2d/3d: weight (*kernel, C_in / groups, C_out)."""
    nd = weight.ndim - 2
    kernel, dilations = tuple(weight.shape[:nd]), _window(dilation, nd)
    pads, auto_pad = _border(padding, kernel, dilations)
    inputs = (x, weight) if bias is None else (x, weight, bias)
    return apply("conv", *inputs, strides=_window(stride, nd), dilations=dilations, pads=pads,
                 groups=int(groups), auto_pad=auto_pad)


def conv_transpose(x: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                   output_padding=0, dilation=1) -> Tensor:
    """The transposed convolution of conv_transpose1d/2d/3d: weight (*kernel, C_in, C_out);
    padding an integer, one per axis, or (before, after) pairs cut from the full output."""
    nd = weight.ndim - 2
    kernel, dilations = tuple(weight.shape[:nd]), _window(dilation, nd)
    pads, _ = _border(padding, kernel, dilations)
    inputs = (x, weight) if bias is None else (x, weight, bias)
    return apply("conv_transpose", *inputs, strides=_window(stride, nd), dilations=dilations,
                 pads=pads, output_padding=_window(output_padding, nd))


def max_pool(x: Tensor, window, stride=None, padding="valid", dilation=1,
             ceil_mode: bool = False) -> Tensor:
    nd = x.ndim - 2
    kernel, dilations = _window(window, nd), _window(dilation, nd)
    pads, auto_pad = _border(padding, kernel, dilations)
    return apply("max_pool", x, kernel=kernel, strides=_window(stride or window, nd), pads=pads,
                 dilations=dilations, auto_pad=auto_pad, **_ceil(ceil_mode))


def avg_pool(x: Tensor, window, stride=None, padding="valid",
             count_include_pad: bool = False, ceil_mode: bool = False) -> Tensor:
    nd = x.ndim - 2
    kernel = _window(window, nd)
    pads, auto_pad = _border(padding, kernel, (1,) * nd)
    return apply("avg_pool", x, kernel=kernel, strides=_window(stride or window, nd), pads=pads,
                 auto_pad=auto_pad, count_include_pad=int(count_include_pad),
                 **_ceil(ceil_mode))


def _ceil(ceil_mode: Any) -> dict:
    """PyTorch's ceil_mode (windows past the end while they start inside); the pool refuses it
    with padding="same"."""
    return {"ceil_mode": 1} if kw.flag("pool", "ceil_mode", ceil_mode) else {}


def adaptive_avg_pool(x: Tensor, size) -> Tensor:
    return apply("adaptive_avg_pool", x, sizes=_window(size, x.ndim - 2))


def adaptive_max_pool(x: Tensor, size) -> Tensor:
    return apply("adaptive_max_pool", x, sizes=_window(size, x.ndim - 2))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "edge": "edge"}


def pad(x: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """PyTorch's `F.pad`: `pad` holds (before, after) pairs from the last axis backwards,
    `(left, right)` for the last, then `(top, bottom)` for the one before it, ...; axes it does
    not reach are left as they are. `mode` "constant" (with `value`, 0 when None), "reflect"
    (mirrors without repeating the edge) or "replicate" (repeats it; "edge", ONNX's name, too).
    PyTorch's "circular" and negative widths (which crop there) are refused by name. The
    tensor's own axes are meant: a channels-last series (batch, steps, channels) pads its steps
    with `pad=(0, 0, before, after)`."""
    if isinstance(pad, (int, np.integer)) or not isinstance(pad, Sequence) or not builtins.all(
            isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in pad):
        raise SpecError(f"pad: pad must be a sequence of integers, (before, after) pairs from "
                        f"the last axis, received {pad!r}")
    widths = [int(p) for p in pad]
    if len(widths) % 2 or len(widths) > 2 * x.ndim:
        raise SpecError(f"pad: pad must hold (before, after) pairs for at most the {x.ndim} axes "
                        f"of x {tuple(x.shape)}, from the last one, received {len(widths)} numbers")
    if builtins.any(w < 0 for w in widths):
        raise SpecError(f"pad: negative widths (which crop in PyTorch) are not supported, "
                        f"received {tuple(widths)}; slice the tensor instead")
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise SpecError(f"pad: mode must be one of 'constant', 'reflect', 'replicate' ('edge'), "
                        f"received {mode!r}" + (" (PyTorch's 'circular' is not supported)"
                                                if isinstance(mode, str) and mode == "circular"
                                                else ""))
    if value is not None and mode != "constant":
        raise SpecError(f"pad: a value pads only in mode 'constant', received value={value!r} "
                        f"with mode {mode!r}")
    begins, ends = [0] * x.ndim, [0] * x.ndim
    for pair in range(len(widths) // 2):
        axis = x.ndim - 1 - pair
        begins[axis], ends[axis] = widths[2 * pair], widths[2 * pair + 1]
    return apply("pad", x, pads=(*begins, *ends), mode=_PAD_MODES[mode],
                 value=0.0 if value is None else kw.number("pad", "value", value))


def interpolate(x: Tensor, size=None, scale=None, mode: str = "nearest",
                align_corners: bool = False) -> Tensor:
    """The places resized to `size`, or multiplied by an integer `scale`, as `upsample`
    ("nearest" or "bilinear")."""
    nd = x.ndim - 2
    if (size is None) == (scale is None):
        raise SpecError("interpolate: give exactly one of size and scale")
    sizes = (_window(size, nd) if size is not None else
             tuple(n * s for n, s in zip(x._data.shape[1:-1], _window(scale, nd))))
    return apply("resize", x, sizes=sizes, mode="nearest" if mode == "nearest" else "linear",
                 align_corners=int(align_corners))


def layer_norm(x: Tensor, *args: Any, eps: float = 1e-5, **named: Any) -> Tensor:
    """Layer normalisation over the last axis. PyTorch's form `layer_norm(x, normalized_shape,
    weight=None, bias=None, eps=1e-5)` (the shape the last axis only: `(x.shape[-1],)`; no
    weight means ones, no bias zeros), or this library's `layer_norm(x, weight, bias, eps)`."""
    (weight, bias), eps = _norm_arguments("layer_norm", x, args, named, ("weight", "bias"), eps)
    return apply("layer_norm", x, weight, bias, eps=kw.number("layer_norm", "eps", eps))


def rms_norm(x: Tensor, *args: Any, eps: float | None = None, **named: Any) -> Tensor:
    """RMS normalisation over the last axis: PyTorch's `rms_norm(x, normalized_shape,
    weight=None, eps=None)` (no weight means ones; no eps, as there, the machine epsilon of x's
    type), or this library's `rms_norm(x, weight, eps=1e-5)`."""
    pytorch = bool(args and isinstance(args[0], (int, np.integer, tuple, list))) \
        or "normalized_shape" in named
    (weight,), eps = _norm_arguments("rms_norm", x, args, named, ("weight",), eps)
    if eps is None:
        eps = float(np.finfo(x.dtype).eps) if pytorch else 1e-5
    return apply("rms_norm", x, weight, eps=kw.number("rms_norm", "eps", eps))


def _norm_arguments(name: str, x: Tensor, args: tuple, named: dict, slots: tuple[str, ...],
                    eps: float) -> tuple[tuple[Tensor, ...], float]:
    """(the slots' tensors, eps) from either form (see layer_norm)."""
    shape = named.pop("normalized_shape", None)
    if shape is None and args and (isinstance(args[0], (int, np.integer, tuple, list))):
        shape, args = args[0], args[1:]
    if len(args) > len(slots) + 1:
        raise SpecError(f"{name}: too many arguments ({len(args)} after x)")
    given = dict(zip(slots, args[:len(slots)]))
    if len(args) > len(slots):
        eps = args[len(slots)]
    for key, value in named.items():
        if key not in slots or key in given:
            raise SpecError(f"{name}: unexpected or repeated argument {key!r}")
        given[key] = value
    width = x.shape[-1]
    if shape is not None:
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if not builtins.all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                            for d in dims):
            raise SpecError(f"{name}: normalized_shape must be integers, received {shape!r}")
        if tuple(int(d) for d in dims) != (width,):
            raise SpecError(f"{name}: normalized_shape must be the last axis, ({width},), for x of "
                            f"shape {tuple(x.shape)}; over several axes is not supported, "
                            f"received {dims}")
        fill = {"weight": np.ones, "bias": np.zeros}
        given = {k: given.get(k) if given.get(k) is not None else
                 Tensor(fill[k](width, np.float32).astype(x.dtype)) for k in slots}
    missing = [k for k in slots if given.get(k) is None]
    if missing:
        raise SpecError(f"{name}: give {', '.join(missing)} (or PyTorch's normalized_shape, "
                        f"({width},), for ones and zeros)")
    for key in slots:
        if not isinstance(given[key], Tensor):
            raise SpecError(f"{name}: {key} must be a tensor, received {given[key]!r}")
    return tuple(given[k] for k in slots), eps


def group_norm(x: Tensor, groups: int, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    return apply("group_norm", x, weight, bias, groups=int(groups), eps=float(eps))


def batch_norm(x: Tensor, running_mean: Tensor, running_var: Tensor, weight: Tensor, bias: Tensor,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """PyTorch's F.batch_norm over the last axis: in training, by the batch's statistics, the
    running ones updated in place (unbiased variance); else by the running statistics."""
    if not training:
        return apply("batch_norm_eval", x, weight, bias, running_mean, running_var, eps=float(eps))
    y, mean, var = apply("batch_norm", x, weight, bias, eps=float(eps))
    count = x._data.size // x._data.shape[-1]
    unbiased = var._data * (count / (count - 1))
    for running, batch in ((running_mean, mean._data), (running_var, unbiased)):
        running._data *= 1.0 - momentum
        running._data += (momentum * batch).astype(running._data.dtype)
    return y


# -- series: x (N, steps, C) -----------------------------------------------------------------------
# Each is the primitive the layer of the same name applies (see deepsharp.layers.embedding,
# .attention, .recurrent), with its weights as that layer holds them.
def embedding(ids: Tensor, weight: Tensor, padding_index: int | None = None) -> Tensor:
    """weight[ids]: int64 ids of any shape give ids.shape + (width,); the row `padding_index`
    gets no gradient (PyTorch's padding_idx)."""
    return apply("embedding", weight, ids,
                 padding_index=-1 if padding_index is None else int(padding_index))


def attention(q: Tensor, k: Tensor, v: Tensor, key_mask: Tensor | None = None,
              causal: bool = False, scale: float | None = None) -> Tensor:
    """softmax(q k^T * scale) v over q (..., Tq, d), k (..., Tk, d), v (..., Tk, dv), scale
    1 / sqrt(d) unless given; `key_mask` (batch, Tk) bool leaves keys out, `causal` lets query i
    see keys j <= i only; a query with no key left gives zeros."""
    scale = 1.0 / float(np.sqrt(q.shape[-1])) if scale is None else float(scale)
    extra = () if key_mask is None else (key_mask,)
    return apply("attention", q, k, v, *extra, scale=scale, causal=int(causal))


def lstm(x: Tensor, weight_ih: Tensor, weight_hh: Tensor, bias_ih: Tensor, bias_hh: Tensor,
         lengths: Tensor | None = None, reverse: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    """One LSTM layer over x (batch, steps, in), PyTorch's gates (i, f, g, o), kernels (in, 4H)
    and (H, 4H): (y (batch, steps, H), last state (batch, H), last cell (batch, H)). `lengths`
    (batch,) int64: each series' real steps (outputs beyond are zero)."""
    extra = () if lengths is None else (lengths,)
    return apply("lstm", x, weight_ih, weight_hh, bias_ih, bias_hh, *extra, reverse=int(reverse))


def gru(x: Tensor, weight_ih: Tensor, weight_hh: Tensor, bias_ih: Tensor, bias_hh: Tensor,
        lengths: Tensor | None = None, reverse: bool = False) -> tuple[Tensor, Tensor]:
    """One GRU layer (PyTorch's gates r, z, n; kernels (in, 3H) and (H, 3H)): (y, last state)."""
    extra = () if lengths is None else (lengths,)
    return apply("gru", x, weight_ih, weight_hh, bias_ih, bias_hh, *extra, reverse=int(reverse))


# -- the tensor first ------------------------------------------------------------------------------
def _tensor_first(name: str, fn):
    """`fn` taking its first argument as PyTorch's functions do: a tensor (a numpy array or a
    number is made one); anything else (a list of tensors, a string) refused by name, where
    PyTorch raises a TypeError."""

    @functools.wraps(fn)
    def checked(x: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(x, Tensor):
            if not isinstance(x, (np.ndarray, np.generic, int, float, bool)):
                raise OpError(f"{name}: its first argument must be a tensor, received "
                              f"{type(x).__name__}")
            x = as_tensor(x)
        return fn(x, *args, **kwargs)

    return checked


for _name, _fn in list(globals().items()):
    if (not _name.startswith("_") and inspect.isfunction(_fn) and _fn.__code__.co_argcount
            and (_fn.__code__.co_varnames[0] in ("x", "a", "q", "ids") or _name == "lerp")):
        globals()[_name] = _tensor_first(_name, _fn)
