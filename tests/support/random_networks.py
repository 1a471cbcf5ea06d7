"""Random layer stacks and the checks a fuzz of numbers holds them to (tests/fuzz/test_numbers.py,
a few cases; scripts/fuzz_numbers.py, the long run). Each check returns the faults it found (an
empty list: none); a case is rebuilt from its seed.

- `export_case`: a trained stack, written by OnnxExport, in ONNX Runtime against `predict` at
  several batch sizes and, where the graph says a series of any length, at other lengths; then
  read back by OnnxFile. (It found a series flatten written with symbolic steps, 2 December.)
- `paths_case`: `fit` by its replayed pass, its general pass, with `compiled()` and inside
  `data_parallel(2, split="kernels")`: the same weights bit for bit (BLAS at one thread).
- `recurrent_case`: the LSTM and GRU primitives with `compiled()` and without, any shapes and
  lengths: the same outputs and gradients bit for bit. (It found the whole-sequence kernels
  rounding a state of one value otherwise, 2 December.)
- `winograd_case`: a conv -> relu -> max pool block on the Winograd path (3x3, 24 or more
  input channels, a 2x2 pool), its forward and backward passes compiled or not in each
  combination, at one thread and inside `data_parallel(2, split="kernels")`, in runs of a few
  tiles or the default: numpy's numbers bit for bit wherever they are numbers (NaN where numpy
  has NaN: which NaN a sum of two keeps is the compiler's choice).
- `trace_case`: a module written as code, a random chain of tensor operations as a PyTorch user
  writes them, traced with its batch and steps symbolic, in ONNX Runtime at other sizes
  against `evaluate`. (It found `F.pad` taking ONNX's order, 2 December.)
"""

from __future__ import annotations

import io

import numpy as np

from deepsharp import Adam, CrossEntropy, RandomStream, Sequential, Shape
from deepsharp.errors import DeepsharpError, MaskRefused


VOCABULARY = 11  # of the series of ids: 0 is the padding where an embedding says so


def random_stack(g: np.random.Generator) -> tuple[Sequential, Shape]:
    """A stack over images (H x W x C), series (steps x channels) or series of ids (steps,
    int64), with its example shape."""
    def n(low: int, high: int) -> int:
        return int(g.integers(low, high))

    def pick(*choices):
        return choices[n(0, len(choices))]

    if g.random() < 0.4:
        shape, s = Shape(n(6, 14), n(6, 14), n(1, 4)), Sequential()
        for _ in range(n(1, 3)):
            padding = str(g.choice(["valid", "same"]))
            s = (s.conv_transpose2d(n(1, 8), n(1, 3), stride=n(1, 3)) if g.random() < 0.1 else
                 s.conv2d(n(1, 30), n(1, 4), padding=padding))
            s = pick(s.relu(), s.leaky_relu(0.1), s.silu(), s)
            r = g.random()
            s = (s.max_pool2d(2) if r < 0.4 else s.avg_pool2d(2) if r < 0.55 else
                 s.batch_norm() if r < 0.65 else s.group_norm(1) if r < 0.7 else
                 s.upsample(2) if r < 0.75 else s.spatial_dropout(0.2) if r < 0.8 else s)
        end = pick(s.global_avg_pool(), s.global_max_pool(), s.adaptive_max_pool(2).flatten(),
                   s.flatten(), s.flatten())
        return end.dense(n(2, 20)).relu().dense(3), shape
    ids = g.random() < 0.3
    shape = Shape(n(3, 9)) if ids else Shape(n(3, 9), n(1, 5))
    masked = g.random() < 0.3  # the series end in padding (_data), read by masking or the ids
    s = Sequential()
    if ids:
        s = s.embedding(VOCABULARY, n(2, 7), padding_index=0 if masked else None)
    elif masked:
        s = s.masking(0.0)
    for _ in range(n(1, 4)):
        s = pick(
            lambda: s.lstm(n(1, 9)), lambda: s.gru(n(1, 9)),
            lambda: s.conv1d(n(1, 9), n(1, 3), padding=str(g.choice(["valid", "same", "causal"])))
            .relu(),
            lambda: s.dense(n(1, 9)).tanh(), lambda: s.layer_norm(), lambda: s.rms_norm(),
            lambda: s.dense(n(2, 9)).gelu(), lambda: s.low_rank_dense(n(2, 9), 1).softplus(),
            lambda: s.residual(Sequential().dense(n(1, 9)).elu()),
            lambda: s.multi_head_attention(n(1, 3), 2 * n(1, 5)),
            lambda: s.sine_positions(), lambda: s.instance_norm(),
            lambda: s.avg_pool1d(2, padding="same"))()
    end = pick(s.global_avg_pool(), s.global_max_pool(), s.attention_pool(),
               s.global_avg_pool() if masked else s.flatten())
    return end.dense(3), shape


def _data(g: np.random.Generator, shape: Shape, count: int, ids: bool = False):
    """Examples (ids below VOCABULARY), some series ending in padding: zeros (which only
    `masking`, or an embedding's padding_index 0, reads as such)."""
    x = (g.integers(1, VOCABULARY, (count, *shape.dims)) if ids else
         g.standard_normal((count, *shape.dims)).astype(np.float32))
    if shape.rank == 2 or ids:
        for row in range(0, count, 2):
            x[row, int(g.integers(1, shape.dims[0] + 1)):] = 0
    return x, g.integers(0, 3, count)


def _takes_ids(spec: Sequential) -> bool:
    return bool(spec.layers) and spec.layers[0].input_dtype == "int64"


def _built(seed: int):
    g = np.random.default_rng(seed)
    while True:
        try:
            spec, shape = random_stack(g)
            return g, spec, shape, spec.lower(shape, RandomStream(seed))
        except DeepsharpError:  # a window that does not fit, heads that do not divide: again
            continue


def _refused_by_name(error: DeepsharpError) -> bool:
    """A refusal that names its reason and leaves no numbers to compare: a layer that cannot
    leave padding out, or a batch normalisation given one value per channel to train on (an
    epoch's last batch of one example pooled to one place; PyTorch refuses it too)."""
    return isinstance(error, MaskRefused) or "needs more than one value per channel" in str(error)


def export_case(seed: int) -> list[str]:
    import onnxruntime as ort

    from deepsharp_export_onnx import OnnxExport, OnnxFile
    from deepsharp_export_onnx.errors import OnnxError

    g, spec, shape, network = _built(seed)
    ids = _takes_ids(spec)
    x, y = _data(g, shape, int(g.integers(4, 30)), ids)
    loss = CrossEntropy()
    try:
        network.fit(x, y, loss=loss, optimizer=Adam(1e-2), batch_size=8, progress=False)
    except DeepsharpError as error:
        if _refused_by_name(error):
            return []
        raise
    data = OnnxExport(shape).to_bytes(network, loss)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    batches = [x, x[:1], x[:3]]
    if isinstance(session.get_inputs()[0].shape[1], str):  # the graph says any length
        batches += [_data(g, Shape(shape.dims[0] + k, *shape.dims[1:]), 3, ids)[0]
                    for k in (1, 3)]
    faults = []
    for batch in batches:
        try:
            got = session.run(None, {"input": batch})[0]
        except Exception as error:  # noqa: BLE001 (ONNX Runtime's own errors: the graph's fault)
            faults.append(f"seed {seed}: {spec} on {shape}: the graph fails at {batch.shape}, "
                          f"which its input annotation admits: {str(error)[:120]}")
            continue
        expected = network.predict(batch, loss)
        gap = float(np.abs(got - expected).max())
        if not gap <= 1e-5 and not _float_noise(data, batch, expected, got):
            faults.append(f"seed {seed}: {spec} on {shape}: the graph at {batch.shape} is {gap} "
                          f"from predict")
    try:
        back = OnnxFile(loss).read(io.BytesIO(data))
    except OnnxError as error:
        return faults + [f"seed {seed}: {spec} on {shape}: our own graph is refused on import: "
                         f"{str(error)[:160]}"]
    gap = float(np.abs(back.predict(x, loss) - network.predict(x, loss)).max())
    if not gap <= 1e-5:
        faults.append(f"seed {seed}: {spec}: read back, {gap} from predict")
    return faults


def paths_case(seed: int) -> list[str]:
    from threadpoolctl import threadpool_limits

    from deepsharp import training
    from deepsharp.compiled import compiled
    from deepsharp.parallel import data_parallel

    g, spec, shape, _ = _built(seed)
    count = int(g.integers(3, 30))
    x, y = _data(g, shape, count, _takes_ids(spec))
    batch = int(g.integers(1, count + 1))
    weights = {}
    lean = training.lean_pass
    for way in ("replayed", "general", "compiled", "kernels", "kernels, compiled"):
        network = spec.lower(shape, RandomStream(seed))
        threads = data_parallel(2, split="kernels") if way.startswith("kernels") \
            else threadpool_limits(1, user_api="blas")
        if way == "general":
            training.lean_pass = lambda run, batch, plans: None
        try:
            with threads, compiled("compiled" in way):
                network.fit(x, y, loss=CrossEntropy(), optimizer=Adam(1e-2), batch_size=batch,
                            epochs=2, progress=False, seed=3)
        except DeepsharpError as error:
            if _refused_by_name(error):
                return []
            raise
        finally:
            training.lean_pass = lean
        weights[way] = network.state_dict()
    return [f"seed {seed}: {spec} on {shape}, batch {batch}: {way} gives other bits in {name}"
            for way, state in weights.items() for name, value in state.items()
            if not np.array_equal(np.asarray(value).view(np.uint32),
                                  np.asarray(weights["replayed"][name]).view(np.uint32))]


def recurrent_case(seed: int) -> list[str]:
    from deepsharp.compiled import compiled
    from deepsharp.tensors import Tensor, apply

    g = np.random.default_rng(seed)
    kind, gates = ("lstm", 4) if g.random() < 0.5 else ("gru", 3)
    batch, steps, hidden, width = (int(g.integers(1, 12)), int(g.integers(1, 9)),
                                   int(g.integers(1, 40)), int(g.integers(1, 4)))
    arrays = [g.standard_normal(s).astype(np.float32) * 0.8
              for s in ((batch, steps, width), (width, gates * hidden),
                        (hidden, gates * hidden), (gates * hidden,), (gates * hidden,))]
    lengths = () if g.random() < 0.3 else (Tensor(g.integers(0, steps + 1, batch)),)
    reverse, used = int(g.integers(0, 2)), int(g.integers(0, 2))
    results = []
    for on in (True, False):
        tensors = [Tensor(a, requires_grad=True) for a in arrays]
        with compiled(on):
            y, *states = apply(kind, *tensors, *lengths, reverse=reverse)
            ((y * y).sum() if used else (states[-1] * 3).sum()).backward()
        results.append([y._data, *(s._data for s in states), *(t.grad for t in tensors)])
    return [f"seed {seed}: {kind} batch {batch}, {steps} steps, hidden {hidden}, lengths "
            f"{bool(lengths)}: value {i} differs compiled" for i, (a, b) in enumerate(zip(*results))
            if not np.array_equal(a.view(np.uint32), b.view(np.uint32))]


# a chain of tensor operations written as a PyTorch user writes them, over x (batch, steps, 4):
# the same code runs on PyTorch's tensors, F then torch's (scripts/fuzz_numbers.py, `gradients`)
_C = 4
_CHAIN = {
    "relu": lambda m, x, F: x.relu(), "sigmoid": lambda m, x, F: x.sigmoid(),
    "tanh": lambda m, x, F: x.tanh(), "abs": lambda m, x, F: x.abs(), "neg": lambda m, x, F: -x,
    "affine": lambda m, x, F: x * 0.5 + 1.0, "square": lambda m, x, F: x * x,
    "center": lambda m, x, F: x - x.mean(dim=-1, keepdim=True),
    "soft sign": lambda m, x, F: x / (x.abs() + 1), "clamp": lambda m, x, F: x.clamp(-1, 1),
    "gelu": lambda m, x, F: F.gelu(x), "softmax": lambda m, x, F: x.softmax(-1),
    "log_softmax": lambda m, x, F: x.log_softmax(-1), "cumsum": lambda m, x, F: x.cumsum(1),
    "matmul": lambda m, x, F: x @ m.w, "diff": lambda m, x, F: x[:, 1:] - x[:, :-1],
    "amax": lambda m, x, F: x + x.amax(dim=1, keepdim=True),
    "cat": lambda m, x, F: F.cat([x, x * 2], dim=-1) @ m.w2,
    "by steps": lambda m, x, F: x - x.sum(dim=1, keepdim=True) / x.shape[1],
    "where": lambda m, x, F: F.where(x > 0, x, x * 0.1),
    "sqrt": lambda m, x, F: (x.abs() + 1e-3).sqrt(), "pow": lambda m, x, F: x.pow(2),
    "transpose": lambda m, x, F: (x.transpose(1, 2) * 1.5).transpose(1, 2),
    "flip": lambda m, x, F: x.flip(1), "roll": lambda m, x, F: x.roll(1, 1),
    "std": lambda m, x, F: x / (x.std(dim=1, keepdim=True) + 1),
    "layer_norm": lambda m, x, F: F.layer_norm(x, (_C,)),
    "rms_norm": lambda m, x, F: F.rms_norm(x, (_C,)),
    "exp": lambda m, x, F: x.clamp(-3, 3).exp(),
    "pad": lambda m, x, F: F.pad(x, (0, 0, 1, 2), mode="replicate")[:, 1:-2],
    "unsqueeze": lambda m, x, F: x.unsqueeze(2).squeeze(2),
    "halves": lambda m, x, F: x[:, : x.shape[1] // 2].mean(dim=1, keepdim=True) + x,
    "topk": lambda m, x, F: x + x.topk(1, dim=1).values, "sort": lambda m, x, F: x.sort(dim=1).values,
    "repeat": lambda m, x, F: x.repeat(1, 2, 1)[:, ::2],
    "einsum": lambda m, x, F: F.einsum("btc,cd->btd", x, m.w),
    "normalize": lambda m, x, F: F.normalize(x, dim=-1),
    "logsumexp": lambda m, x, F: x - x.logsumexp(-1, keepdim=True),
}


def _float_noise(data: bytes, x: np.ndarray, ours: np.ndarray, theirs: np.ndarray) -> bool:
    """Where ONNX Runtime and `predict` part by more than 1e-5, the graph evaluated in float64
    judges (an ill-conditioned stack, a normalisation of a spread far below its mean, amplifies
    float32 rounding): ours passes within 1e-5 of that answer and no farther from it than ONNX
    Runtime's float32 one."""
    import onnx

    from tests.support.onnx_check import run_in_float64

    try:
        exact = run_in_float64(onnx.load_from_string(data), x)
    except Exception:  # noqa: BLE001 (no float64 evaluation of this graph: no judge)
        return False
    ours_off = float(np.abs(ours - exact).max())
    return ours_off <= 1e-5 and ours_off <= float(np.abs(theirs - exact).max())


def trace_case(seed: int) -> list[str]:
    """A Module whose forward is a random chain of _CHAIN, traced with its batch and steps
    symbolic: ONNX Runtime at other batch sizes and lengths against `evaluate`."""
    import onnxruntime as ort

    from deepsharp import Module, Parameter
    from deepsharp import functional as F

    g = np.random.default_rng(seed)
    names = [list(_CHAIN)[i] for i in g.integers(0, len(_CHAIN), int(g.integers(1, 6)))]

    class Chain(Module):
        def __init__(self):
            super().__init__()
            self.w = Parameter(g.standard_normal((_C, _C)).astype(np.float32) * 0.5)
            self.w2 = Parameter(g.standard_normal((2 * _C, _C)).astype(np.float32) * 0.5)

        def forward(self, x):
            for name in names:
                x = _CHAIN[name](self, x, F)
            return x.mean(dim=1)

    module = Chain()
    traced = module.trace(g.standard_normal((3, 7, _C)).astype(np.float32),
                          axis_names={0: "batch", 1: "steps"})
    session = ort.InferenceSession(traced.to_bytes(), providers=["CPUExecutionProvider"])
    faults = []
    for shape in ((3, 7, _C), (1, 7, _C), (5, 4, _C), (2, 12, _C)):
        x = g.standard_normal(shape).astype(np.float32)
        expected = module.evaluate(x)
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        gap = _gap(got, expected)
        # a chain can amplify rounding (a cumsum of centred steps ends at 0 +- rounding, then a
        # normalisation): the eager answer is known only to within what 1-2 ULPs of its input
        # move it, and the graph is held to that where it is above 1e-5 (NaN where NaN)
        noise = _gap(module.evaluate((x * np.float32(1 + 2e-7)).astype(np.float32)), expected)
        noise = noise if np.isfinite(noise) else 0.0  # (NaNs moved: no allowance, not all)
        size = float(np.abs(expected[np.isfinite(expected)]).max(initial=0))
        if not gap <= max(1e-5 * max(1.0, size), 4 * noise):
            faults.append(f"seed {seed}: {names} at {shape}: {gap} from evaluate")
    return faults


def _gap(got: np.ndarray, expected: np.ndarray) -> float:
    """The largest difference where `expected` is finite; inf where the shapes differ, or the
    places or values of the NaNs and infinities."""
    finite = np.isfinite(expected)
    if got.shape != expected.shape or not np.array_equal(np.isfinite(got), finite) \
            or not np.array_equal(got[~finite], expected[~finite], equal_nan=True):
        return np.inf
    return float(np.abs(got[finite] - expected[finite]).max(initial=0))


def pooled_conv(arrays, grad, forward_on: bool, backward_on: bool, split: bool):
    """conv_relu_max_pool's output and gradients for arrays (x, w[, bias]) under the output's
    gradient `grad`, its forward pass inside compiled() or not, its backward pass likewise
    (inside data_parallel(2, split="kernels") when `split`)."""
    from deepsharp.compiled import compiled
    from deepsharp.parallel import data_parallel
    from deepsharp.tensors import Tensor, apply

    tensors = [Tensor(a, requires_grad=True) for a in arrays]
    with data_parallel(2 if split else 1, split="kernels"):
        with compiled(forward_on):
            y = apply("conv_relu_max_pool", *tensors, pads=(0, 0, 0, 0), pool=(2, 2))
            loss = (y * Tensor(grad)).sum()
        with compiled(backward_on):
            loss.backward()
    return [y._data] + [t.grad for t in tensors]


def winograd_case(seed: int) -> list[str]:
    from deepsharp.tensors.ops import winograd

    g = np.random.default_rng(seed)
    n, h, w, c, o = (int(g.integers(1, 5)), int(g.integers(4, 16)), int(g.integers(4, 16)),
                     int(g.integers(24, 40)), int(g.integers(1, 20)))
    x = g.standard_normal((n, h, w, c)).astype(np.float32)
    x = np.round(x) if g.random() < 0.3 else np.ones_like(x) if g.random() < 0.2 else x  # ties
    arrays = [x, g.standard_normal((3, 3, c, o)).astype(np.float32)]
    if g.random() < 0.7:
        arrays.append(g.standard_normal(o).astype(np.float32) * (-0.0 if g.random() < 0.3 else 1))
    grad = g.standard_normal((n, (h - 2) // 2, (w - 2) // 2, o)).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45], np.float32)
    places = g.random(grad.shape) < 0.1
    grad[places] = special[g.integers(0, len(special), int(places.sum()))]
    split, chunk = bool(g.random() < 0.5), int(g.integers(1, 50)) if g.random() < 0.5 else None
    default = winograd.CHUNK_TILES

    winograd.CHUNK_TILES = chunk or default
    try:
        with np.errstate(all="ignore"):
            expected = pooled_conv(arrays, grad, False, False, split)
        faults = []
        for forward_on, backward_on in ((True, True), (True, False), (False, True)):
            with np.errstate(all="ignore"):
                got = pooled_conv(arrays, grad, forward_on, backward_on, split)
            for i, (a, b) in enumerate(zip(got, expected)):
                numbers = ~np.isnan(b)
                if not (np.array_equal(np.isnan(a), ~numbers) and np.array_equal(
                        a[numbers].view(np.uint32), b[numbers].view(np.uint32))):
                    faults.append(f"seed {seed}: {n}x{h}x{w}x{c} -> {o}, bias {len(arrays) > 2}, "
                                  f"split {split}, runs of {chunk or default} tiles: value {i} "
                                  f"differs (forward compiled {forward_on}, backward "
                                  f"{backward_on})")
    finally:
        winograd.CHUNK_TILES = default
    return faults


CASES = {"export": export_case, "paths": paths_case, "recurrent": recurrent_case,
         "trace": trace_case, "winograd": winograd_case}
