"""The numba kernels of `deepsharp.compiled` (imported only when it is on).

Every kernel repeats a numpy path's float32 operations in the same order, with float32 constants
(a Python literal would make numba compute in float64), so the results are bit-identical.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from deepsharp._blas import sgemm
from deepsharp._kernels_pool import (  # noqa: F401 (deepsharp.compiled finds them here)
    pool_of_four,
    route_by_first,
    route_to_first_max,
    winograd_output_pool,
    winograd_routed_grad,
)
from deepsharp._kernels_rows import (  # noqa: F401 (deepsharp.compiled finds them here)
    layer_norm_backward,
    layer_norm_forward,
    softmax_divide,
    softmax_grad,
    softmax_shift,
)
from deepsharp._kernels_winograd import (  # noqa: F401 (deepsharp.compiled finds them here)
    winograd_input,
    winograd_input_scatter,
    winograd_output_grad,
)
from deepsharp._tanh32 import tanh_into as _tanh_into  # out[:n] = numpy's float32 tanh
from deepsharp.tensors.ops.activations import _ERF_DENOMINATOR, _ERF_NUMERATOR

_JIT = {"cache": True, "error_model": "numpy", "nogil": True}
_ONE = np.float32(1.0)
_HALF = np.float32(0.5)


@njit(**_JIT)
def _adam_place(g, m, v, i, c1, c2, b2, root, eps, step_size):
    """Adam at place i of the flat buffers: m += c1 (g - m); v = v b2 + (c2 g) g; the update
    step_size (m / (sqrt(v) / root + eps)) returned."""
    gi = g[i]
    mi = m[i] + (gi - m[i]) * c1
    vi = v[i] * b2 + (c2 * gi) * gi
    m[i] = mi
    v[i] = vi
    return (mi / (np.sqrt(vi) / root + eps)) * step_size


@njit(**_JIT)
def adam_flat(g, m, v, work, c1, c2, b2, root, eps, step_size):
    """Adam over flat buffers (`Adam._flat_step`), the update into `work`."""
    for i in range(g.size):
        work[i] = _adam_place(g, m, v, i, c1, c2, b2, root, eps, step_size)


@njit(**_JIT)
def adam_apply(g, m, v, p, c1, c2, b2, root, eps, step_size):
    """`adam_flat` over one parameter's places, its update subtracted from the parameter's
    values p (flat, contiguous) in the same pass: p -= work, without the work buffer."""
    for i in range(g.size):
        p[i] = p[i] - _adam_place(g, m, v, i, c1, c2, b2, root, eps, step_size)


@njit(**_JIT)
def lstm_step_grad(a, tc, c_prev, dh, dc, d, dc_out):
    """One LSTM step back through time (`_lstm_through_time`), its gates a (4, batch, H) held
    (o, i, f, g) gate by gate: d (batch, 4, H) the gates' gradients, dc_out the cell's for the
    step before."""
    batch, hidden = tc.shape
    for b in range(batch):
        for j in range(hidden):
            o = a[0, b, j]
            i = a[1, b, j]
            f = a[2, b, j]
            g = a[3, b, j]
            t = tc[b, j]
            h_grad = dh[b, j]
            d[b, 0, j] = (h_grad * t) * (o - o * o)
            total = dc[b, j] + ((_ONE - t * t) * o) * h_grad
            d[b, 1, j] = (total * g) * (i - i * i)
            d[b, 2, j] = (total * c_prev[b, j]) * (f - f * f)
            d[b, 3, j] = total * ((_ONE - g * g) * i)
            dc_out[b, j] = total * f


@njit(**_JIT)
def lstm_step_cell(g, c, a, c_out):
    """One LSTM step forward (`Lstm.forward`), after the tanh of its gates g (batch, 4H) held
    (o, i, f, g): the gates gate by gate into a (4, batch, H), the sigmoid ones from their tanh
    (t / 2 + 1 / 2), then the new cell c_out = f c + i g."""
    batch, hidden = c.shape
    for b in range(batch):
        for k in range(3):
            for j in range(hidden):
                a[k, b, j] = g[b, k * hidden + j] * _HALF + _HALF
        for j in range(hidden):
            a[3, b, j] = g[b, 3 * hidden + j]
        for j in range(hidden):
            c_out[b, j] = a[2, b, j] * c[b, j] + a[1, b, j] * a[3, b, j]


_INV_SQRT_2 = np.float32(1.0 / np.sqrt(2.0))
_FOUR = np.float32(4.0)


def _make_gelu_erf32(numerator, denominator):
    """The GELU kernel with erf32's coefficients as compile-time constants: no inner loop, so the
    loop over values vectorises."""
    a0, a1, a2, a3, a4, a5, a6 = (np.float32(c) for c in numerator)
    b0, b1, b2, b3, b4 = (np.float32(c) for c in denominator)

    @njit(**_JIT)
    def gelu_erf32(x, cdf, out):
        """GELU by erf32 (`activations.Gelu`, float32) in one pass: cdf = (erf32(x / sqrt 2) + 1)
        / 2, out = x cdf; erf32's clip, Horner steps and division in its order."""
        for i in range(x.size):
            xi = x[i]
            v = xi * _INV_SQRT_2
            if v < -_FOUR:
                v = -_FOUR
            elif v > _FOUR:
                v = _FOUR
            z = v * v
            p = ((((((z * a0 + a1) * z + a2) * z + a3) * z + a4) * z + a5) * z) + a6
            q = ((((z * b0 + b1) * z + b2) * z + b3) * z) + b4
            c = ((p * v) / q + _ONE) * _HALF
            cdf[i] = c
            out[i] = xi * c

    return gelu_erf32


gelu_erf32 = _make_gelu_erf32(_ERF_NUMERATOR, _ERF_DENOMINATOR)
_MINUS_HALF = np.float32(-0.5)
_INV_SQRT_2PI = np.float32(1.0 / np.sqrt(2.0 * np.pi))


@njit(**_JIT)
def gelu_grad_exponent(x, b):
    """GELU's backward pass (`activations.Gelu`, float32), before numpy's exp: b = x x (-1/2)."""
    for i in range(x.size):
        xi = x[i]
        b[i] = (xi * xi) * _MINUS_HALF


@njit(**_JIT)
def gelu_grad_finish(x, cdf, g, b):
    """After numpy's exp: b = ((b x) / sqrt(2 pi) + Phi) g, numpy's four passes in their order."""
    for i in range(x.size):
        b[i] = ((b[i] * x[i]) * _INV_SQRT_2PI + cdf[i]) * g[i]


@njit(**_JIT)
def gru_step_inputs(a, gh, b_hh):
    """One GRU step forward (`Gru.forward`), before the tanh: gh += b_hh, and the state's share
    added to the r and z gates' inputs a[:, :2H]."""
    batch, width = gh.shape
    two = 2 * (width // 3)
    for b in range(batch):
        for k in range(width):
            gh[b, k] = gh[b, k] + b_hh[k]
        for k in range(two):
            a[b, k] = a[b, k] + gh[b, k]


@njit(**_JIT)
def gru_step_candidate(a, gh, hn_t):
    """After the tanh of r and z: the sigmoid gates from their tanh, hn_t = h W_hn + b_hn, and the
    candidate's input n + r (h W_hn + b_hn) (its tanh follows in numpy)."""
    batch, width = gh.shape
    hidden = width // 3
    for b in range(batch):
        for k in range(2 * hidden):
            a[b, k] = a[b, k] * _HALF + _HALF
        for j in range(hidden):
            hn_t[b, j] = gh[b, 2 * hidden + j]
            a[b, 2 * hidden + j] = a[b, 2 * hidden + j] + a[b, j] * gh[b, 2 * hidden + j]


@njit(**_JIT)
def gru_step_state(h, a, h_new):
    """h' = (h - n) z + n, gates (r, z, n) in a."""
    batch, hidden = h.shape
    for b in range(batch):
        for j in range(hidden):
            n = a[b, 2 * hidden + j]
            h_new[b, j] = (h[b, j] - n) * a[b, hidden + j] + n


@njit(**_JIT)
def gru_step_grad(a, hn_t, prev, dh, dx_t, dh_t, carry):
    """One GRU step back through time (`_gru_through_time`): the gradients of the step's input
    products dx_t and state products dh_t (batch, 3H), and carry = dh z (added to the product
    back through W_hh)."""
    batch, hidden = dh.shape
    for b in range(batch):
        for j in range(hidden):
            r = a[b, j]
            z = a[b, hidden + j]
            n = a[b, 2 * hidden + j]
            h_grad = dh[b, j]
            dn = (h_grad - h_grad * z) * (_ONE - n * n)
            dr = (dn * hn_t[b, j]) * (r - r * r)
            dz = ((prev[b, j] - n) * h_grad) * (z - z * z)
            dx_t[b, j] = dr
            dx_t[b, hidden + j] = dz
            dx_t[b, 2 * hidden + j] = dn
            dh_t[b, j] = dr
            dh_t[b, hidden + j] = dz
            dh_t[b, 2 * hidden + j] = dn * r
            carry[b, j] = h_grad * z



@njit(**_JIT)
def gru_forward_steps(blas, xg, w_hh, b_hh, hs, hn, active, reverse):
    """A whole GRU sequence forward (`Gru.forward`'s compiled steps) in one call without the
    GIL: per step, in reading order, gh = h @ w_hh by numpy's BLAS at `blas`, then
    `gru_step_inputs`, numpy's float32 tanh of r and z (tanh32), `gru_step_candidate`, tanh32 of
    n and `gru_step_state` into hs[t]; where `active` (steps, batch, 1; no steps when every step
    is real) is 0 the row keeps the state it had (numpy's copyto where)."""
    steps, batch, width = xg.shape
    hidden = width // 3
    two = 2 * hidden
    gh = np.empty((batch, width), xg.dtype)
    h = np.zeros((batch, hidden), xg.dtype)
    values = np.empty(2 * width, xg.dtype)
    for n in range(steps):
        t = steps - 1 - n if reverse else n
        sgemm(blas, h, w_hh, gh)
        a = xg[t]
        gru_step_inputs(a, gh, b_hh)
        _rows_tanh(a, 0, two, values)
        gru_step_candidate(a, gh, hn[t])
        _rows_tanh(a, two, width, values)
        gru_step_state(h, a, hs[t])
        if active.shape[0]:
            for b in range(batch):
                if not active[t, b, 0] > 0:
                    hs[t, b] = h[b]
        h = hs[t]


@njit(**_JIT)
def _rows_tanh(a, start, stop, values):
    """a[:, start:stop] = tanh32 of itself, row by row, through the two halves of `values`:
    contiguous, and apart (the loop vectorises only when its source is not its output: in place
    it ran 1.9x slower)."""
    count = stop - start
    source, out = values[:count], values[count:2 * count]
    for b in range(a.shape[0]):
        row = a[b]
        for k in range(count):
            source[k] = row[start + k]
        _tanh_into(source, out, count)
        for k in range(count):
            row[start + k] = out[k]


@njit(**_JIT)
def gru_backward_steps(blas, rzn, hn, hs, dy_t, dh, w_hh_t, dx_gates, dh_gates, active,
                       reverse):
    """A whole GRU sequence back through time (`_gru_through_time`'s compiled steps) in one
    call without the GIL: per step, from the last one read, dh += dy_t[t] (when dy_t has
    steps), `gru_step_grad`, then dh = dh_gates[t] @ w_hh_t (numpy's BLAS) + dh z. With
    `active` (no steps when every step is real), as `_gru_skip_masked`: the step's gates times
    active, and dh carried back only where active is above 0."""
    steps, batch, hidden = hs.shape
    zero = np.zeros((batch, hidden), hs.dtype)
    carry = np.empty((batch, hidden), hs.dtype)
    back = np.empty((batch, hidden), hs.dtype)
    masked = active.shape[0] > 0
    for n in range(steps):
        t = n if reverse else steps - 1 - n
        _add_output_grad(dh, dy_t, t)
        prev = _state_before(hs, t, reverse, zero)
        gru_step_grad(rzn[t], hn[t], prev, dh, dx_gates[t], dh_gates[t], carry)
        sgemm(blas, dh_gates[t], w_hh_t, back)
        for b in range(batch):
            for j in range(hidden):
                back[b, j] = back[b, j] + carry[b, j]
        if masked:
            for b in range(batch):
                m = active[t, b, 0]
                for k in range(3 * hidden):
                    dx_gates[t, b, k] = dx_gates[t, b, k] * m
                    dh_gates[t, b, k] = dh_gates[t, b, k] * m
                if not m > 0:
                    continue
                for j in range(hidden):
                    dh[b, j] = back[b, j]
        else:
            dh[:] = back


@njit(**_JIT)
def lstm_step_forward(g, product, c, a, c_out, tc, h_out):
    """One whole LSTM step forward (`Lstm.forward`) after its product h @ weight_hh, row by row:
    the gates' pre-activations g + product (batch, 4H, held o, i, f, g) through numpy's float32
    tanh (`tanh32`), gate by gate into a (4, batch, H), the sigmoid ones t / 2 + 1 / 2; the new
    cell c_out = f c + i g, tc = tanh(c_out) and the new state h_out = o tc. Each pass is a
    loop over one row's contiguous values (the tanh over a scratch row), so each vectorises."""
    batch, hidden = c.shape
    width = 4 * hidden
    pre = np.empty(width, g.dtype)
    gates = np.empty(width, g.dtype)
    cell_tanh = np.empty(hidden, g.dtype)
    for b in range(batch):
        g_row, p_row = g[b], product[b]
        for k in range(width):
            pre[k] = g_row[k] + p_row[k]
        _tanh_into(pre, gates, width)
        for k in range(3):
            gate = a[k, b]
            for j in range(hidden):
                gate[j] = gates[k * hidden + j] * _HALF + _HALF
        o, i, f, gg = a[0, b], a[1, b], a[2, b], a[3, b]
        for j in range(hidden):
            gg[j] = gates[3 * hidden + j]
        c_row, cell = c[b], c_out[b]
        for j in range(hidden):
            cell[j] = f[j] * c_row[j] + i[j] * gg[j]
        _tanh_into(cell, cell_tanh, hidden)
        tc_row, h_row = tc[b], h_out[b]
        for j in range(hidden):
            tc_row[j] = cell_tanh[j]
            h_row[j] = o[j] * cell_tanh[j]


@njit(**_JIT)
def _add_output_grad(dh, dy_t, t):
    """dh += dy_t[t], the outputs' gradient reaching step t (dy_t has no steps when none does)."""
    if dy_t.shape[0]:
        step_grad = dy_t[t]
        for b in range(dh.shape[0]):
            for j in range(dh.shape[1]):
                dh[b, j] = dh[b, j] + step_grad[b, j]


@njit(**_JIT)
def _state_before(states, t, reverse, zero):
    """The state step t started from: the one the step before it in reading order left."""
    before = t + 1 if reverse else t - 1
    return states[before] if 0 <= before < states.shape[0] else zero


@njit(**_JIT)
def lstm_forward_steps(blas, gates, w_hh, acts, hs, cs, tcs, active, reverse):
    """A whole LSTM sequence forward (`Lstm.forward`) in one call without the GIL: per step, in
    reading order, product = h @ w_hh by numpy's BLAS at `blas` (deepsharp._blas), then
    `lstm_step_forward` into the step's acts, cs, tcs and hs; where `active` (steps, batch, 1)
    is 0 (a step beyond the series' length) the row keeps the state it had (numpy's copyto
    where). `active` has no steps when every step is real."""
    steps, batch, width = gates.shape
    product = np.empty((batch, width), gates.dtype)
    h = np.zeros((batch, width // 4), gates.dtype)
    c = np.zeros((batch, width // 4), gates.dtype)
    for n in range(steps):
        t = steps - 1 - n if reverse else n
        sgemm(blas, h, w_hh, product)
        lstm_step_forward(gates[t], product, c, acts[t], cs[t], tcs[t], hs[t])
        if active.shape[0]:
            for b in range(batch):
                if not active[t, b, 0] > 0:
                    hs[t, b] = h[b]
                    cs[t, b] = c[b]
        h = hs[t]
        c = cs[t]


@njit(**_JIT)
def lstm_backward_steps(blas, acts, cs, tcs, dy_t, dh, dc, w_hh_t, dgates, active, reverse):
    """A whole LSTM sequence back through time (`_lstm_through_time`) in one call without the
    GIL: per step, from the last one read, dh += dy_t[t] (when dy_t has steps),
    `lstm_step_grad` into dgates[t] and dc, then dh = dgates[t] @ w_hh_t by numpy's BLAS. With
    `active` (steps, batch, 1; no steps when every step is real), as `_skip_masked`: the step's
    gates times active, and dc and dh carried back only where active is above 0."""
    steps, batch, hidden = cs.shape
    zero = np.zeros((batch, hidden), cs.dtype)
    rows = dgates.reshape(steps, batch, 4 * hidden)
    masked = active.shape[0] > 0
    carried = np.empty((batch, hidden), cs.dtype)
    product = np.empty((batch, hidden), cs.dtype)
    for n in range(steps):
        t = n if reverse else steps - 1 - n
        _add_output_grad(dh, dy_t, t)
        c_prev = _state_before(cs, t, reverse, zero)
        if not masked:
            lstm_step_grad(acts[t], tcs[t], c_prev, dh, dc, dgates[t], dc)
            sgemm(blas, rows[t], w_hh_t, dh)
            continue
        lstm_step_grad(acts[t], tcs[t], c_prev, dh, dc, dgates[t], carried)
        step = rows[t]
        for b in range(batch):
            for k in range(4 * hidden):
                step[b, k] = step[b, k] * active[t, b, 0]
        sgemm(blas, step, w_hh_t, product)
        for b in range(batch):
            if active[t, b, 0] > 0:
                dc[b] = carried[b]
                dh[b] = product[b]
