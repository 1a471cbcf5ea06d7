"""Recurrent primitives: one LSTM or GRU direction over a whole batch of series.

    y, h_last, c_last = apply("lstm", x, weight_ih, weight_hh, bias_ih, bias_hh[, lengths],
                              reverse=0)
    y, h_last = apply("gru", x, weight_ih, weight_hh, bias_ih, bias_hh[, lengths], reverse=0)

x is (batch, steps, in); kernels are kept as a dense layer's, inputs by outputs: weight_ih (in, G*H)
and weight_hh (H, G*H), the G gate blocks side by side in PyTorch's order (LSTM i, f, g, o; GRU
r, z, n); biases (G*H,). Initial states are zero.

The input's share of every gate, for every step, is one product made before the loop; each step
then makes one product h @ weight_hh for all its gates. The pass back through time is fused the
same way: per step one product by weight_hh's transpose; the kernels' gradients are one product
each over all steps.

`lengths` (int64, (batch,)) says how many leading steps of each series are real: beyond them the
output is zero and the state is carried unchanged, so `h_last` is the state after the last real
step (for `reverse=1`, the series is read from its last real step back to its first, and `h_last`
is the state after step 0), as ONNX's `sequence_lens` and PyTorch's packed series have it.
"""

from __future__ import annotations

import numpy as np

from deepsharp.compiled import kernel
from deepsharp.errors import OpError
from deepsharp.tensors.primitives import grad_out, needs_input_grad, primitive

# Inside the LSTM kernel the gates are held (o, i, f, g): the three sigmoid gates are one
# contiguous block, and the three gates the cell's gradient reaches (i, f, g) another.
_LSTM_INSIDE = np.array([3, 0, 1, 2])  # ours (i, f, g, o) -> inside (o, i, f, g), by block
_LSTM_OUTSIDE = np.argsort(_LSTM_INSIDE)

# sigmoid(z) = (1 + tanh(z / 2)) / 2: one tanh over every gate of a step is several times faster
# than scipy's expit, and halving the sigmoid gates' columns of the kernels and biases is exact.


def _halved(array: np.ndarray, sigmoid_blocks: int, gates: int) -> np.ndarray:
    """`array` with its first `sigmoid_blocks` gate blocks (last axis) halved."""
    out = array.copy()
    out[..., :sigmoid_blocks * (array.shape[-1] // gates)] *= 0.5
    return out


def _sigmoid_from_tanh(block: np.ndarray) -> None:
    block *= 0.5
    block += 0.5


def _blocks(array: np.ndarray, order: np.ndarray, gates: int,
            out: np.ndarray | None = None) -> np.ndarray:
    """The gate blocks of the last axis of `array` taken in `order` (written into `out` when
    given: a gradient's place in its optimizer's buffer, `grad_out`)."""
    size = array.shape[-1] // gates
    shaped = array.reshape(*array.shape[:-1], gates, size)
    if out is not None:
        np.take(shaped, order, axis=-2, out=out.reshape(shaped.shape))
        return out
    return np.ascontiguousarray(shaped[..., order, :]).reshape(array.shape)


def _check(name: str, x, weight_ih, weight_hh, bias_ih, bias_hh, gates: int, lengths) -> int:
    if x.ndim != 3:
        raise OpError(f"{name}: x must be (batch, steps, in), received shape {x.shape}")
    hidden = weight_hh.shape[0]
    expected = {"weight_ih": (x.shape[2], gates * hidden), "weight_hh": (hidden, gates * hidden),
                "bias_ih": (gates * hidden,), "bias_hh": (gates * hidden,)}
    for label, array in zip(expected, (weight_ih, weight_hh, bias_ih, bias_hh)):
        if array.shape != expected[label]:
            raise OpError(f"{name}: {label} must have shape {expected[label]}, received "
                          f"{array.shape}")
    if lengths is not None:
        if lengths.shape != (x.shape[0],) or lengths.dtype.kind not in "iu":
            raise OpError(f"{name}: lengths must be integers of shape ({x.shape[0]},), received "
                          f"{lengths.dtype} {lengths.shape}")
        if lengths.size and (lengths.min() < 0 or lengths.max() > x.shape[1]):
            raise OpError(f"{name}: lengths must lie in 0..{x.shape[1]}, received "
                          f"{lengths.min()}..{lengths.max()}")
    return hidden


def _active(lengths, steps: int, dtype) -> np.ndarray | None:
    """(steps, batch, 1): 1 where a step is real, else 0; None when every step is."""
    if lengths is None or (lengths.size and lengths.min() >= steps):
        return None
    return (np.arange(steps)[:, None] < lengths[None, :]).astype(dtype)[:, :, None]


def _order(steps: int, reverse: int) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _time_major(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x.transpose(1, 0, 2))


def _previous(states: np.ndarray, t: int, reverse: int, zero: np.ndarray) -> np.ndarray:
    """The state step t started from: the one the step before it in reading order left."""
    before = t + 1 if reverse else t - 1
    return states[before] if 0 <= before < len(states) else zero


def _state_product(states: np.ndarray, grads: np.ndarray, reverse: int,
                   out: np.ndarray | None = None) -> np.ndarray:
    """sum over steps of (state each step started from)^T @ (the step's gate gradients): one
    product over the steps that started from a state that was not the zero one (written into
    `out` when given)."""
    hidden, width = states.shape[-1], grads.shape[-1]
    if reverse:
        before, after = states[1:], grads[:-1]
    else:
        before, after = states[:-1], grads[1:]
    return np.matmul(before.reshape(-1, hidden).T, after.reshape(-1, width), out=out)


def _gradient_of_outputs(dy: np.ndarray, active) -> np.ndarray | None:
    """dy time-major (masked), or None when nothing used the outputs (autograd gave zeros)."""
    if not dy.any():
        return None
    dy_t = _time_major(dy)
    return dy_t if active is None else dy_t * active


def _whole_sequence(name: str, dtype, batch: int, hidden: int):
    """The compiled kernel running a whole sequence's steps in one call (deepsharp.compiled), or
    None: it makes each step's product by numpy's BLAS matrix product as numpy's matmul does for
    float32 where no side of the product is 1 (numpy takes a matrix-vector routine for a single
    row or column, rounding otherwise: one series, or a state of one value)."""
    if batch < 2 or hidden < 2 or dtype != np.float32:
        return None
    return kernel(name)


def _all_steps(active, batch: int, dtype) -> np.ndarray:
    """`active` for a whole-sequence kernel: no steps when every step is real."""
    return np.empty((0, batch, 1), dtype) if active is None else active


def _lstm_through_time(acts, cs, tcs, dy_t, active, dh, dc, w_hh_t, reverse) -> np.ndarray:
    """The gradients of every step's gate pre-activations (steps, batch, 4, H), inside order
    o, i, f, g, walking the steps back from the last one read. `acts` holds each step's gates
    gate by gate (steps, 4, batch, H): every gate is one contiguous block, so each elementwise
    call is one pass over it (numpy runs a slice of rows, (batch, H) of a (batch, 4H), as a loop
    per row, several times slower at these sizes); the step's four gradients are then put side
    by side for the product by weight_hh's transpose, in one copy."""
    steps, batch, hidden = cs.shape
    dgates = np.empty((steps, batch, 4, hidden), cs.dtype)
    loop = _whole_sequence("lstm_backward_steps", cs.dtype, batch, hidden)
    if loop is not None:  # the same operations, every step in one compiled call without the GIL
        dy_steps = np.empty((0, batch, hidden), cs.dtype) if dy_t is None else dy_t
        loop(acts, cs, tcs, dy_steps, dh, dc, w_hh_t, dgates, _all_steps(active, batch, cs.dtype),
             reverse)
        return dgates
    zero = np.zeros((batch, hidden), cs.dtype)
    compiled = kernel("lstm_step_grad")
    carried = None if active is None else np.empty((batch, hidden), cs.dtype)
    local = np.empty((4, batch, hidden), cs.dtype)    # this step's gradients, gate by gate
    sq = np.empty((4, batch, hidden), cs.dtype)       # becomes s - s^2 (o, i, f), (1 - g^2) i
    cell = np.empty((batch, hidden), cs.dtype)
    # the loop's fixed views, made once (a view costs as much Python time as a small pass)
    d_o, d_i, d_f, d_g = local
    by_row = local.transpose(1, 0, 2)
    sig, (sig_o, sig_i, sig_f, tg) = sq[:3], sq
    one = cs.dtype.type(1)  # the same float32 1 as a Python 1 here, converted once
    rows = dgates.reshape(steps, batch, 4 * hidden)
    for t in reversed(_order(steps, reverse)):
        a = acts[t]
        o, i, f, g = a
        tc = tcs[t]
        if dy_t is not None:
            dh += dy_t[t]
        if compiled is not None:  # the same operations in one compiled pass (deepsharp.compiled)
            if active is None:  # in place: the kernel reads each value of dc before it writes it
                compiled(a, tc, _previous(cs, t, reverse, zero), dh, dc, dgates[t], dc)
                np.matmul(rows[t], w_hh_t, dh)
                continue
            compiled(a, tc, _previous(cs, t, reverse, zero), dh, dc, dgates[t], carried)
            dc, dh = _skip_masked(active[t], dgates[t], carried, dc, rows[t], w_hh_t, dh)
            continue
        np.multiply(a, a, sq)
        np.subtract(a[:3], sig, sig)                        # sigmoid' = s - s^2 (o, i, f)
        np.subtract(one, tg, tg)                            # tanh' = 1 - g^2, times i
        np.multiply(tg, i, tg)
        np.multiply(dh, tc, d_o)
        np.multiply(d_o, sig_o, d_o)
        np.multiply(tc, tc, cell)                           # dc += dh o (1 - tanh(c)^2)
        np.subtract(one, cell, cell)
        np.multiply(cell, o, cell)
        np.multiply(cell, dh, cell)
        total = np.add(dc, cell, cell)
        np.multiply(total, g, d_i)
        np.multiply(d_i, sig_i, d_i)
        np.multiply(total, _previous(cs, t, reverse, zero), d_f)
        np.multiply(d_f, sig_f, d_f)
        np.multiply(total, tg, d_g)
        np.copyto(dgates[t], by_row)
        if active is None:  # dc and dh are this loop's own buffers (copies the caller made)
            np.multiply(total, f, dc)
            np.matmul(rows[t], w_hh_t, dh)
            continue
        dc, dh = _skip_masked(active[t], dgates[t], total * f, dc, rows[t], w_hh_t, dh)
    return dgates


def _skip_masked(active, dgates, carried, dc, row, w_hh_t, dh):
    """A masked LSTM step back: a skipped step (active 0) makes no gates and passes the state's
    gradients on; a real one carries dc (f times the total) and dh (through W_hh) back."""
    dgates *= active[:, :, None]
    return np.where(active > 0, carried, dc), np.where(active > 0, row @ w_hh_t, dh)


@primitive("lstm", outputs=3, fresh=True)
class Lstm:
    def forward(x, weight_ih, weight_hh, bias_ih, bias_hh, lengths=None, *, reverse):
        hidden = _check("lstm", x, weight_ih, weight_hh, bias_ih, bias_hh, 4, lengths)
        batch, steps, _ = x.shape
        w_ih = _halved(_blocks(weight_ih, _LSTM_INSIDE, 4), 3, 4)
        w_hh = _halved(_blocks(weight_hh, _LSTM_INSIDE, 4), 3, 4)
        xt = _time_major(x)
        gates = (xt.reshape(steps * batch, -1) @ w_ih).reshape(steps, batch, 4 * hidden)
        gates += _halved(_blocks(bias_ih + bias_hh, _LSTM_INSIDE, 4), 3, 4)
        active = _active(lengths, steps, x.dtype)
        real = None if active is None else active > 0
        acts = np.empty((steps, 4, batch, hidden), x.dtype)  # each step's gates, gate by gate
        hs = np.empty((steps, batch, hidden), x.dtype)   # the state after each step
        cs = np.empty((steps, batch, hidden), x.dtype)
        tcs = np.empty((steps, batch, hidden), x.dtype)  # tanh of each step's new cell
        h = np.zeros((batch, hidden), x.dtype)
        c = np.zeros((batch, hidden), x.dtype)
        # a whole step in one pass (deepsharp.compiled; its tanh is float32 numpy's)
        whole = kernel("lstm_step_forward") if x.dtype == np.float32 else None
        compiled = kernel("lstm_step_cell") if whole is None else None
        loop = _whole_sequence("lstm_forward_steps", x.dtype, batch, hidden)
        product = np.empty((batch, 4 * hidden), x.dtype)
        ig = np.empty((batch, hidden), x.dtype)
        half = x.dtype.type(0.5)  # the same float32 0.5 as a Python 0.5 here, converted once
        by_gate = gates.reshape(steps, batch, 4, hidden).transpose(0, 2, 1, 3)
        sigmoids = acts[:, :3]
        if loop is not None:  # the same operations, every step in one call without the GIL
            loop(gates, w_hh, acts, hs, cs, tcs, _all_steps(active, batch, x.dtype), reverse)
            if steps:
                h, c = hs[0 if reverse else -1], cs[0 if reverse else -1]
        for t in _order(steps, reverse) if loop is None else ():
            g = gates[t]   # the step's pre-activations, then their tanh
            np.matmul(h, w_hh, product)
            a = acts[t]    # o, i, f (sigmoid) and g (tanh), gate by gate (see _lstm_through_time)
            c_new, tc, h_new = cs[t], tcs[t], hs[t]
            if whole is not None:  # the same operations, numpy's tanh included, in one pass
                whole(g, product, c, a, c_new, tc, h_new)
            else:
                np.add(g, product, g)
                np.tanh(g, g)
                if compiled is not None:  # the same operations in one pass (deepsharp.compiled)
                    compiled(g, c, a, c_new)
                else:  # gate by gate (one copy), then the sigmoid gates t / 2 + 1 / 2
                    s = sigmoids[t]
                    np.copyto(a, by_gate[t])
                    np.multiply(s, half, s)
                    np.add(s, half, s)
                    np.multiply(a[2], c, c_new)
                    np.multiply(a[1], a[3], ig)
                    np.add(c_new, ig, c_new)
                np.tanh(c_new, tc)
                np.multiply(a[0], tc, h_new)
            if real is not None:  # a step beyond the series' length leaves the state as it is
                np.copyto(h_new, h, where=~real[t])
                np.copyto(c_new, c, where=~real[t])
            h, c = h_new, c_new
        y = hs.transpose(1, 0, 2) if active is None else (hs * active).transpose(1, 0, 2)
        saved = (xt, acts, hs, cs, tcs, active)
        return (y, h.copy(), c.copy()), saved

    def backward(grads, saved, x, weight_ih, weight_hh, bias_ih, bias_hh, lengths=None, *,
                 reverse):
        dy, dh_last, dc_last = grads
        xt, acts, hs, cs, tcs, active = saved
        steps, batch, hidden = hs.shape
        w_hh_t = np.ascontiguousarray(_blocks(weight_hh, _LSTM_INSIDE, 4).T)
        dgates = _lstm_through_time(acts, cs, tcs, _gradient_of_outputs(dy, active), active,
                                    dh_last.astype(x.dtype, copy=True),
                                    dc_last.astype(x.dtype, copy=True), w_hh_t, reverse)
        flat = dgates.reshape(steps * batch, 4 * hidden)
        # dgates is the gradient of the true pre-activations: it goes back through the kernels
        # as they are, not as halved for the forward's tanh
        dx = None
        if needs_input_grad(0):  # a network's input needs none: PyTorch skips it too
            w_ih = _blocks(weight_ih, _LSTM_INSIDE, 4)
            dx = (flat @ w_ih.T).reshape(steps, batch, -1).transpose(1, 0, 2)
        dw_ih = _blocks(xt.reshape(steps * batch, -1).T @ flat, _LSTM_OUTSIDE, 4, grad_out(1))
        dw_hh = _blocks(_state_product(hs, dgates.reshape(steps, batch, -1), reverse),
                        _LSTM_OUTSIDE, 4, grad_out(2))
        db = _blocks(flat.sum(axis=0), _LSTM_OUTSIDE, 4, grad_out(3))
        db_hh = grad_out(4)
        if db_hh is None:
            db_hh = db.copy()
        else:
            np.copyto(db_hh, db)
        return (dx, dw_ih, dw_hh, db, db_hh) + ((None,) if lengths is not None else ())


def _gru_through_time(rzn, hn, hs, dy_t, active, dh, w_hh_t, reverse):
    """The gradients of every step's input products (x W_ih + b_ih) and state products
    (h W_hh + b_hh), (steps, batch, 3H) each, walking the steps back from the last one read."""
    steps, batch, hidden = hs.shape
    two = 2 * hidden
    zero = np.zeros((batch, hidden), hs.dtype)
    dx_gates = np.empty((steps, batch, 3 * hidden), hs.dtype)
    dh_gates = np.empty((steps, batch, 3 * hidden), hs.dtype)
    sig = np.empty((batch, two), hs.dtype)
    tn = np.empty((batch, hidden), hs.dtype)
    dz = np.empty((batch, hidden), hs.dtype)
    loop = _whole_sequence("gru_backward_steps", hs.dtype, batch, hidden)
    if loop is not None:  # the same operations, every step in one compiled call without the GIL
        dy_steps = np.empty((0, batch, hidden), hs.dtype) if dy_t is None else dy_t
        loop(rzn, hn, hs, dy_steps, dh, w_hh_t, dx_gates, dh_gates,
             _all_steps(active, batch, hs.dtype), reverse)
        return dx_gates, dh_gates
    compiled = kernel("gru_step_grad")
    for t in reversed(_order(steps, reverse)):
        a = rzn[t]
        r, z, n = a[:, :hidden], a[:, hidden:two], a[:, two:]
        if dy_t is not None:
            dh += dy_t[t]
        if compiled is not None:  # the same operations in one pass (deepsharp.compiled)
            compiled(a, hn[t], _previous(hs, t, reverse, zero), dh, dx_gates[t], dh_gates[t], dz)
            back = dh_gates[t] @ w_hh_t
            back += dz
            dh = back if active is None else _gru_skip_masked(active[t], dx_gates[t],
                                                               dh_gates[t], back, dh)
            continue
        np.multiply(a[:, :two], a[:, :two], out=sig)      # sigmoid' = s - s^2 (r, z)
        np.subtract(a[:, :two], sig, out=sig)
        np.multiply(n, n, out=tn)                         # dn = dh (1 - z) (1 - n^2)
        np.subtract(1, tn, out=tn)
        dn = np.subtract(dh, dh * z, out=dx_gates[t, :, two:])
        dn *= tn
        np.multiply(dn, hn[t], out=dx_gates[t, :, :hidden])  # dr = dn (h W_hn + b_hn) r'
        dx_gates[t, :, :hidden] *= sig[:, :hidden]
        np.subtract(_previous(hs, t, reverse, zero), n, out=dz)  # dz = dh (h - n) z'
        dz *= dh
        np.multiply(dz, sig[:, hidden:], out=dx_gates[t, :, hidden:two])
        dh_gates[t, :, :two] = dx_gates[t, :, :two]
        np.multiply(dn, r, out=dh_gates[t, :, two:])
        back = dh_gates[t] @ w_hh_t
        back += dh * z
        dh = back if active is None else _gru_skip_masked(active[t], dx_gates[t], dh_gates[t],
                                                           back, dh)
    return dx_gates, dh_gates


def _gru_skip_masked(active, dx_gates, dh_gates, back, dh):
    """A masked GRU step back: a skipped step makes no gates and passes the state's gradient on."""
    dx_gates *= active
    dh_gates *= active
    return np.where(active > 0, back, dh)


@primitive("gru", outputs=2, fresh=True)
class Gru:
    """PyTorch's GRU (ONNX's with linear_before_reset=1): r and z from the input's and the state's
    products, n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = (1 - z) n + z h."""

    def forward(x, weight_ih, weight_hh, bias_ih, bias_hh, lengths=None, *, reverse):
        hidden = _check("gru", x, weight_ih, weight_hh, bias_ih, bias_hh, 3, lengths)
        batch, steps, _ = x.shape
        two = 2 * hidden
        w_ih = _halved(weight_ih, 2, 3)
        w_hh = _halved(weight_hh, 2, 3)
        b_hh = _halved(bias_hh, 2, 3)
        xt = _time_major(x)
        xg = (xt.reshape(steps * batch, -1) @ w_ih).reshape(steps, batch, 3 * hidden)
        xg += _halved(bias_ih, 2, 3)
        active = _active(lengths, steps, x.dtype)
        real = None if active is None else active > 0
        hs = np.empty((steps, batch, hidden), x.dtype)
        hn = np.empty((steps, batch, hidden), x.dtype)   # h W_hn + b_hn of each step
        h = np.zeros((batch, hidden), x.dtype)
        kernels = [kernel(name) for name in ("gru_step_inputs", "gru_step_candidate",
                                             "gru_step_state")]
        loop = _whole_sequence("gru_forward_steps", x.dtype, batch, hidden)
        if loop is not None:  # the same operations, every step in one call without the GIL
            loop(xg, w_hh, b_hh, hs, hn, _all_steps(active, batch, x.dtype), reverse)
            if steps:
                h = hs[0 if reverse else -1]
        for t in _order(steps, reverse) if loop is None else ():
            gh = h @ w_hh
            a = xg[t]   # becomes the step's r, z (sigmoid) and n (tanh)
            n = a[:, two:]
            if kernels[0] is not None:  # the same operations in fewer passes (deepsharp.compiled)
                kernels[0](a, gh, b_hh)
                np.tanh(a[:, :two], out=a[:, :two])
                kernels[1](a, gh, hn[t])
                np.tanh(n, out=n)
                h_new = hs[t]
                kernels[2](h, a, h_new)
            else:
                gh += b_hh
                a[:, :two] += gh[:, :two]
                np.tanh(a[:, :two], out=a[:, :two])
                _sigmoid_from_tanh(a[:, :two])
                hn[t] = gh[:, two:]
                n += a[:, :hidden] * gh[:, two:]
                np.tanh(n, out=n)
                h_new = np.subtract(h, n, out=hs[t])
                h_new *= a[:, hidden:two]
                h_new += n
            if real is not None:
                np.copyto(h_new, h, where=~real[t])
            h = h_new
        y = hs.transpose(1, 0, 2) if active is None else (hs * active).transpose(1, 0, 2)
        saved = (xt, xg, hn, hs, active)
        return (y, h.copy()), saved

    def backward(grads, saved, x, weight_ih, weight_hh, bias_ih, bias_hh, lengths=None, *,
                 reverse):
        dy, dh_last = grads
        xt, rzn, hn, hs, active = saved
        steps, batch, hidden = hs.shape
        dx_gates, dh_gates = _gru_through_time(rzn, hn, hs, _gradient_of_outputs(dy, active),
                                               active, dh_last.astype(x.dtype, copy=True),
                                               np.ascontiguousarray(weight_hh.T), reverse)
        fx = dx_gates.reshape(steps * batch, 3 * hidden)
        fh = dh_gates.reshape(steps * batch, 3 * hidden)
        dx = None
        if needs_input_grad(0):  # as the LSTM's
            dx = (fx @ weight_ih.T).reshape(steps, batch, -1).transpose(1, 0, 2)
        # the kernels' and biases' gradients in their places in Adam's buffer where it offers them
        dw_ih = np.matmul(xt.reshape(steps * batch, -1).T, fx, out=grad_out(1))
        dw_hh = _state_product(hs, dh_gates, reverse, grad_out(2))
        db_ih, db_hh = fx.sum(axis=0, out=grad_out(3)), fh.sum(axis=0, out=grad_out(4))
        return (dx, dw_ih, dw_hh, db_ih, db_hh) + \
            ((None,) if lengths is not None else ())
