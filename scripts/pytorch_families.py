"""The PyTorch model families of the fuzz (scripts/fuzz_numbers.py): random models a PyTorch user
writes, exported by torch.onnx (TorchScript at opset 17, or torch.export's at 18 or its default),
read by OnnxFile and held to PyTorch's own answer. Each family is `name_case(seed, dynamo)`,
returning its faults; models PyTorch's exporter itself refuses are listed in SKIPPED."""

from __future__ import annotations

SKIPPED: list[str] = []


def _exported(model, x, axes: dict, dynamo: bool, opset: int | None = 18) -> bytes:
    """`model` exported by torch.onnx with `axes` dynamic: its TorchScript exporter at opset 17,
    or (`dynamo`) its default since PyTorch 2.9, torch.export's, at `opset` (None: the
    exporter's own default, 20 in PyTorch 2.13)."""
    import io

    import torch

    if not dynamo:
        stream = io.BytesIO()
        torch.onnx.export(model, (x,), stream, input_names=["x"], output_names=["y"],
                          dynamic_axes=axes, dynamo=False, opset_version=17)
        return stream.getvalue()
    dims = {axis: torch.export.Dim(f"{symbol.lower()}{axis}", min=1 if axis == 0 else 2,
                                   max=4096) for axis, symbol in axes["x"].items()}
    program = torch.onnx.export(model, (x,), dynamo=True, opset_version=opset, input_names=["x"],
                                output_names=["y"], dynamic_shapes=(dims,), optimize=True,
                                verbose=False)
    return program.model_proto.SerializeToString()


def _read_as_pytorch_answers(seed: int, model, x, axes: dict, label: str,
                             dynamo: bool = False) -> list[str]:
    """`model` exported by torch.onnx (`_exported`), read by OnnxFile: its predictions on x
    against PyTorch's within 1e-5 of the answer's size, or (float32's own rounding) no farther
    from PyTorch's float64 answer than PyTorch's float32 one is."""
    import io

    import numpy as np

    from deepsharp import MeanSquaredError
    from deepsharp_export_onnx import OnnxFile
    from deepsharp_export_onnx.errors import OnnxError

    try:  # dynamo: odd seeds at the exporter's default operator set (what a user gets), even at 18
        data = _exported(model, x, axes, dynamo, None if seed % 2 else 18)
    except Exception as error:  # noqa: BLE001 (PyTorch's exporter refused: nothing to hold)
        SKIPPED.append(f"seed {seed}: {label}: the export raised {str(error)[:120]}")
        return []
    expected = model(x).detach().numpy()
    try:
        network = OnnxFile(MeanSquaredError()).read(io.BytesIO(data))
    except OnnxError as error:
        return [f"seed {seed}: {label} refused: {str(error)[:200]}"]
    ours = network.predict(x.numpy(), MeanSquaredError())
    gap, tolerance = float(np.abs(ours - expected).max()), 1e-5 * max(1.0, float(np.abs(expected).max()))
    if gap <= tolerance:
        return []
    # float32 itself: where PyTorch's answer is as far from the float64 one, ours may be as far
    # on the other side (a layer norm over two features, near-equal values): held to float64
    exact = _in_float64(model, x)
    theirs, mine = float(np.abs(expected - exact).max()), float(np.abs(ours - exact).max())
    if mine <= max(tolerance, theirs):
        return []
    return [f"seed {seed}: {label}: {gap} from PyTorch ({mine} from its float64 answer, "
            f"PyTorch's float32 {theirs})"]


def _in_float64(model, x):
    """`model`'s answer to x in float64 (a copy of it: the float32 model is left as it was)."""
    import copy

    import torch

    with torch.no_grad():
        return copy.deepcopy(model).double()(x.double() if x.is_floating_point() else x).numpy()


def pytorch_case(seed: int, dynamo: bool = False) -> list[str]:
    """A random PyTorch image or series model (convolutions with groups, dilations and strides,
    transposed convolutions, activations, pools, batch norm with trained statistics, upsampling,
    dropout, adaptive pooling, flatten, linear layers), exported by torch.onnx (opset 17, the
    batch dynamic and a series' steps too in half the cases), read by OnnxFile: its predictions
    against PyTorch's within 1e-5 of the answer's size."""

    import numpy as np
    import torch
    from torch import nn

    g = np.random.default_rng(seed)
    torch.manual_seed(seed)

    def n(low: int, high: int) -> int:
        return int(g.integers(low, high))

    def activation() -> list:
        r = g.random()
        for limit, layer in ((0.25, nn.ReLU), (0.35, nn.Tanh), (0.45, nn.Sigmoid),
                             (0.55, lambda: nn.LeakyReLU(0.1)), (0.62, nn.GELU), (0.68, nn.ELU),
                             (0.74, nn.SiLU)):
            if r < limit:
                return [layer()]
        return []

    series = g.random() < 0.4
    shape = (n(1, 4), n(6, 16)) if series else (n(1, 4), n(6, 16), n(6, 16))
    layers, channels = [], shape[0]
    for _ in range(n(1, 3) if series else n(1, 4)):
        groups = int(g.choice([1, 1, 2])) if channels % 2 == 0 else 1
        out, k = n(1, 6) * groups, int(g.choice([1, 2, 3]))
        if series:
            layers += [nn.Conv1d(channels, out, k, padding=n(0, k)), nn.ReLU()]
            layers += [nn.MaxPool1d(2)] if g.random() < 0.3 else []
        else:
            layers.append(nn.ConvTranspose2d(channels, out, k, stride=int(g.choice([1, 2])))
                          if g.random() < 0.15 else
                          nn.Conv2d(channels, out, k, padding=n(0, k), groups=groups,
                                    stride=int(g.choice([1, 1, 2])),
                                    dilation=int(g.choice([1, 1, 2]))))
            layers += activation()
            r = g.random()
            layers += ([nn.MaxPool2d(2)] if r < 0.25 else [nn.AvgPool2d(2)] if r < 0.35 else
                       [nn.MaxPool2d(3, stride=2, padding=1)] if r < 0.45 else
                       [nn.BatchNorm2d(out)] if r < 0.55 else
                       [nn.Upsample(scale_factor=2)] if r < 0.6 else
                       [nn.Dropout(0.2)] if r < 0.65 else [])
        channels = out
    if not series and g.random() < 0.4:
        layers.append(nn.AdaptiveAvgPool2d(1))
    model = nn.Sequential(*layers, nn.Flatten()).eval()  # the width probe's batch of one: eval,
    try:                                                  # or a batch norm at one place refuses
        with torch.no_grad():
            width = model(torch.zeros(1, *shape)).shape[1]
    except RuntimeError:  # too small for its windows: nothing to hold
        return []
    model.append(nn.Linear(width, 3))
    model.eval()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            with torch.no_grad():
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
                module.weight.uniform_(0.5, 2)
    x = torch.randn(5, *shape)
    axes = {"x": {0: "N", 2: "T"} if series and g.random() < 0.5 else {0: "N"}, "y": {0: "N"}}
    return _read_as_pytorch_answers(seed, model, x, axes, str(model), dynamo)


def pytorch_series_case(seed: int, dynamo: bool = False) -> list[str]:
    """A random PyTorch series model: an LSTM or GRU (batch first, bidirectional in a third of the
    cases), self-attention (nn.MultiheadAttention over a projection) or layer norm -> Linear ->
    GELU, then the mean over the steps (or, after a one-way recurrent layer, its last step) and a
    Linear; exported by torch.onnx with the batch (and in half the cases the steps) dynamic, read
    by OnnxFile, held to PyTorch's answer within 1e-5. (`y[:, -1]` of a bidirectional layer, or
    of a layer that is not recurrent, is refused by name: no layer of ours takes one step.)"""

    import numpy as np
    import torch
    from torch import nn

    g = np.random.default_rng(seed)
    torch.manual_seed(seed)
    channels, steps, hidden = int(g.integers(1, 5)), int(g.integers(3, 10)), int(g.integers(2, 9))
    kind = str(g.choice(["lstm", "gru", "attention", "layer norm"]))
    both = bool(g.random() < 0.3)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            width = hidden * (2 if both and kind in ("lstm", "gru") else 1)
            if kind in ("lstm", "gru"):
                self.core = (nn.LSTM if kind == "lstm" else nn.GRU)(
                    channels, hidden, batch_first=True, bidirectional=both)
            elif kind == "attention":
                width = 2 * hidden
                self.projection = nn.Linear(channels, width)
                self.core = nn.MultiheadAttention(width, int(g.choice([1, 2])), batch_first=True)
            else:
                self.core = nn.Sequential(nn.LayerNorm(channels), nn.Linear(channels, hidden),
                                          nn.GELU())
            self.last = kind in ("lstm", "gru") and not both and g.random() < 0.5
            self.head = nn.Linear(width, 3)

        def forward(self, x):
            if kind in ("lstm", "gru"):
                y = self.core(x)[0]
            elif kind == "attention":
                p = self.projection(x)
                y = self.core(p, p, p, need_weights=False)[0]
            else:
                y = self.core(x)
            return self.head(y[:, -1] if self.last else y.mean(dim=1))

    model = Model().eval()
    x = torch.randn(4, steps, channels)
    axes = {"x": {0: "N", 1: "T"} if g.random() < 0.5 else {0: "N"}, "y": {0: "N"}}
    return _read_as_pytorch_answers(seed, model, x, axes, kind, dynamo)


def pytorch_mlp_case(seed: int, dynamo: bool = False) -> list[str]:
    """A random PyTorch MLP over features: Linear layers with batch norm (its statistics
    trained), layer norm, dropout and fifteen activations between them (PReLU shared or per
    channel), in half the cases a
    residual block (x + f(x)) or two branches concatenated (torch.cat); exported by torch.onnx
    with the batch dynamic, read by OnnxFile, held to PyTorch's answer within 1e-5."""
    import numpy as np
    import torch
    from torch import nn

    g = np.random.default_rng(seed)
    torch.manual_seed(seed)
    kinds = [nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU, lambda: nn.GELU(approximate="tanh"), nn.SiLU,
             nn.ELU, lambda: nn.LeakyReLU(0.2), nn.Softplus, nn.Hardtanh, nn.Mish, nn.ReLU6,
             nn.Hardswish, nn.Hardsigmoid, nn.PReLU]

    def block(width: int, out: int) -> list:
        layers = [nn.Linear(width, out)]
        r = g.random()
        layers += ([nn.BatchNorm1d(out)] if r < 0.3 else [nn.LayerNorm(out)] if r < 0.5 else [])
        kind = kinds[int(g.integers(len(kinds)))]
        layers.append(nn.PReLU(out if g.random() < 0.5 else 1) if kind is nn.PReLU else kind())
        layers += [nn.Dropout(0.3)] if g.random() < 0.2 else []
        return layers

    class Residual(nn.Module):
        def __init__(self, width: int):
            super().__init__()
            self.inner = nn.Sequential(*block(width, width))

        def forward(self, x):
            return x + self.inner(x)

    class Branches(nn.Module):
        def __init__(self, width: int, a: int, b: int):
            super().__init__()
            self.a, self.b = nn.Sequential(*block(width, a)), nn.Sequential(*block(width, b))

        def forward(self, x):
            return torch.cat([self.a(x), self.b(x)], dim=1)

    features = int(g.integers(2, 12))
    layers, width = [], features
    for _ in range(int(g.integers(1, 4))):
        r = g.random()
        if r < 0.25:
            layers.append(Residual(width))
        elif r < 0.45:
            a, b = int(g.integers(2, 9)), int(g.integers(2, 9))
            layers.append(Branches(width, a, b))
            width = a + b
        else:
            out = int(g.integers(2, 17))
            layers += block(width, out)
            width = out
    model = nn.Sequential(*layers, nn.Linear(width, int(g.integers(1, 5)))).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm1d):
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
            if isinstance(module, (nn.BatchNorm1d, nn.LayerNorm)):
                module.weight.uniform_(0.5, 2)
                module.bias.uniform_(-0.5, 0.5)
            if isinstance(module, nn.PReLU):
                module.weight.uniform_(-0.5, 0.5)
    x = torch.randn(6, features)
    return _read_as_pytorch_answers(seed, model, x, {"x": {0: "N"}, "y": {0: "N"}}, str(model),
                                    dynamo)


def pytorch_text_case(seed: int, dynamo: bool = False) -> list[str]:
    """A random PyTorch text model over token ids: nn.Embedding (a padding index in half the
    cases), then an LSTM or GRU (one or two layers, bidirectional in a third of the cases, its
    last state h_n[-1] (both directions' torch.cat((h_n[-2], h_n[-1]), 1): h_n[-1] alone is
    the reverse direction's, refused by name) or the mean of its series), a Conv1d over the
    embedding turned channels first (a max or a mean over the steps), or the mean of the
    embeddings alone; a Linear head.
    Exported by torch.onnx with the batch (and in half the cases the steps) dynamic, read by
    OnnxFile, held to PyTorch's answer within 1e-5."""
    import numpy as np
    import torch
    from torch import nn

    g = np.random.default_rng(seed)
    torch.manual_seed(seed)
    vocabulary, width, hidden = int(g.integers(5, 60)), int(g.integers(2, 10)), int(g.integers(2, 9))
    steps, kind = int(g.integers(3, 12)), str(g.choice(["lstm", "gru", "conv", "bag"]))
    padding = int(g.integers(0, vocabulary)) if g.random() < 0.5 else None
    both, layers, state = bool(g.random() < 1 / 3), int(g.integers(1, 3)), bool(g.random() < 0.5)
    kernel, pool = int(g.choice([1, 2, 3])), str(g.choice(["max", "mean"]))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocabulary, width, padding_idx=padding)
            out = width
            if kind in ("lstm", "gru"):
                self.core = (nn.LSTM if kind == "lstm" else nn.GRU)(
                    width, hidden, num_layers=layers, batch_first=True, bidirectional=both)
                out = hidden * (2 if both else 1)
            elif kind == "conv":
                self.core = nn.Conv1d(width, hidden, kernel, padding=kernel // 2)
                out = hidden
            self.head = nn.Linear(out, 3)

        def forward(self, ids):
            e = self.embed(ids)
            if kind in ("lstm", "gru"):
                y, h = self.core(e)
                h = h[0] if kind == "lstm" else h
                last = torch.cat((h[-2], h[-1]), dim=1) if both else h[-1]
                z = last if state else y.mean(dim=1)
            elif kind == "conv":
                c = torch.relu(self.core(e.transpose(1, 2)))
                z = c.amax(dim=2) if pool == "max" else c.mean(dim=2)
            else:
                z = e.mean(dim=1)
            return self.head(z)

    model = Model().eval()
    ids = torch.randint(0, vocabulary, (4, steps))
    axes = {"x": {0: "N", 1: "T"} if g.random() < 0.5 else {0: "N"}, "y": {0: "N"}}
    label = (f"text {kind} vocabulary {vocabulary} width {width} padding {padding} "
             f"hidden {hidden} layers {layers} both {both} state {state} kernel {kernel} {pool}")
    return _read_as_pytorch_answers(seed, model, ids, axes, label, dynamo)


def pytorch_mobile_case(seed: int, dynamo: bool = False) -> list[str]:
    """A random MobileNetV3-like PyTorch model: a stem convolution, then one to three inverted
    residual blocks (a 1x1 expansion, a depthwise 3x3 convolution, strided in some, batch norms
    with trained statistics, ReLU, ReLU6 or Hardswish, in half the blocks a squeeze-and-
    excitation gate with Hardsigmoid or Sigmoid, a 1x1 projection, the input added back where
    the shapes allow), a global pool, a Linear; exported by torch.onnx with the batch dynamic,
    read by OnnxFile, held to PyTorch's answer within 1e-5."""
    import numpy as np
    import torch
    from torch import nn

    g = np.random.default_rng(seed)
    torch.manual_seed(seed)

    def act():
        return [nn.ReLU, nn.ReLU6, nn.Hardswish][int(g.integers(3))]()

    class SqueezeExcite(nn.Module):
        def __init__(self, c: int, r: int, hard: bool):
            super().__init__()
            self.pool, self.hard = nn.AdaptiveAvgPool2d(1), hard
            self.down, self.up = nn.Conv2d(c, r, 1), nn.Conv2d(r, c, 1)

        def forward(self, x):
            w = self.up(torch.relu(self.down(self.pool(x))))
            return x * (nn.functional.hardsigmoid(w) if self.hard else torch.sigmoid(w))

    class Block(nn.Module):
        def __init__(self, c: int, out: int, stride: int):
            super().__init__()
            wide = c * int(g.integers(1, 4))
            layers = [nn.Conv2d(c, wide, 1), nn.BatchNorm2d(wide), act(),
                      nn.Conv2d(wide, wide, 3, stride=stride, padding=1, groups=wide),
                      nn.BatchNorm2d(wide), act()]
            if g.random() < 0.5:
                layers.append(SqueezeExcite(wide, max(1, wide // 4), bool(g.random() < 0.7)))
            layers += [nn.Conv2d(wide, out, 1), nn.BatchNorm2d(out)]
            self.body, self.skip = nn.Sequential(*layers), stride == 1 and c == out

        def forward(self, x):
            return x + self.body(x) if self.skip else self.body(x)

    c = int(g.integers(2, 9))
    layers = [nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), act()]
    for _ in range(int(g.integers(1, 4))):
        out = c if g.random() < 0.5 else int(g.integers(2, 9))
        layers.append(Block(c, out, int(g.choice([1, 1, 2]))))
        c = out
    model = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 3)).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
                module.weight.uniform_(0.5, 2)
                module.bias.uniform_(-0.5, 0.5)
    size = int(g.integers(6, 13))
    x = torch.randn(3, 3, size, size) * 2
    return _read_as_pytorch_answers(seed, model, x, {"x": {0: "N"}, "y": {0: "N"}}, str(model),
                                    dynamo)


def pytorch_crnn_case(seed: int, dynamo: bool = False) -> list[str]:
    """A random convolutional-recurrent PyTorch model over a channels-first series: one or two
    Conv1d layers, each with batch norm or group norm (its affine weights in half), ReLU, ReLU6 or
    SiLU, and in half a max or average pool, then `y.transpose(1, 2)` into an LSTM or GRU
    (bidirectional in a third), the mean over the steps or the last state, a Linear; exported by
    torch.onnx with the batch (and in half the cases the steps) dynamic, read by OnnxFile, held
    to PyTorch's answer."""
    import numpy as np
    import torch
    from torch import nn

    g = np.random.default_rng(seed)
    torch.manual_seed(seed)
    channels, steps = int(g.integers(1, 5)), int(g.integers(8, 17))
    layers, width = [], channels
    for _ in range(int(g.integers(1, 3))):
        out = int(g.choice([2, 4, 6, 8]))
        layers.append(nn.Conv1d(width, out, int(g.choice([1, 3])), padding="same"))
        layers.append(nn.BatchNorm1d(out) if g.random() < 0.5 else
                      nn.GroupNorm(int(g.choice([1, 2])), out, affine=bool(g.random() < 0.5)))
        layers.append([nn.ReLU, nn.ReLU6, nn.SiLU][int(g.integers(3))]())
        r = g.random()
        layers += [nn.MaxPool1d(2)] if r < 0.25 else [nn.AvgPool1d(2)] if r < 0.5 else []
        width = out
    kind, both, last = str(g.choice(["lstm", "gru"])), bool(g.random() < 1 / 3), bool(g.random() < 0.5)
    hidden = int(g.integers(2, 7))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.front = nn.Sequential(*layers)
            self.rnn = (nn.LSTM if kind == "lstm" else nn.GRU)(width, hidden, batch_first=True,
                                                               bidirectional=both)
            self.head = nn.Linear(hidden * (2 if both else 1), 3)

        def forward(self, x):
            y, h = self.rnn(self.front(x).transpose(1, 2))
            h = h[0] if kind == "lstm" else h
            z = (torch.cat((h[-2], h[-1]), dim=1) if both else h[-1]) if last else y.mean(dim=1)
            return self.head(z)

    model = Model().eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm1d):
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
            if isinstance(module, (nn.BatchNorm1d, nn.GroupNorm)) and module.weight is not None:
                module.weight.uniform_(0.5, 2)
                module.bias.uniform_(-0.5, 0.5)
    x = torch.randn(3, channels, steps)
    axes = {"x": {0: "N", 2: "T"} if g.random() < 0.5 else {0: "N"}, "y": {0: "N"}}
    return _read_as_pytorch_answers(seed, model, x, axes, str(model), dynamo)


def pytorch_encoder_case(seed: int, dynamo: bool = False) -> list[str]:
    """A random stack of one or two nn.TransformerEncoderLayer (1, 2 or 4 heads of 2 to 4
    channels, a feed-forward width of 4 to 16, ReLU or GELU, the norm first or last, layer
    norm's epsilon 1e-5 or 1e-6, in a third of the cases a causal mask) over a projection, then
    the mean over the steps and a Linear; exported by torch.onnx with the batch (and in half the
    cases the steps) dynamic, read by OnnxFile, held to PyTorch's answer within 1e-5."""
    import numpy as np
    import torch
    from torch import nn

    g = np.random.default_rng(seed)
    torch.manual_seed(seed)
    heads, size = int(g.choice([1, 2, 4])), int(g.integers(2, 5))
    width, channels, steps = heads * size, int(g.integers(1, 6)), int(g.integers(3, 9))
    causal = bool(g.random() < 1 / 3)
    options = dict(dim_feedforward=int(g.integers(4, 17)), dropout=0.0, batch_first=True,
                   activation=str(g.choice(["relu", "gelu"])), norm_first=bool(g.random() < 0.5),
                   layer_norm_eps=float(g.choice([1e-5, 1e-6])))
    layers = int(g.integers(1, 3))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.projection = nn.Linear(channels, width)
            self.layers = nn.ModuleList(nn.TransformerEncoderLayer(width, heads, **options)
                                        for _ in range(layers))
            self.head = nn.Linear(width, 3)

        def forward(self, x):
            y = self.projection(x)
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1]) if causal else None
            for layer in self.layers:
                y = layer(y, src_mask=mask, is_causal=causal)
            return self.head(y.mean(dim=1))

    model = Model().eval()
    with torch.no_grad():  # no norm at its initial unit scale and zero shift
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.add_(torch.randn(parameter.shape) * 0.2)
    x = torch.randn(4, steps, channels)
    axes = {"x": {0: "N", 1: "T"} if g.random() < 0.5 else {0: "N"}, "y": {0: "N"}}
    label = f"encoder x{layers} heads {heads} width {width} causal {causal} {options}"
    return _read_as_pytorch_answers(seed, model, x, axes, label, dynamo)
