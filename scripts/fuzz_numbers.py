"""The long fuzz of numbers: random layer stacks and modules held to their references, each
case rebuilt from its seed, every fault printed with the seed that replays it.

- the cases of tests/support/random_networks.py: `export`, `paths`, `recurrent`, `trace` (the
  suite runs a few of each: tests/fuzz/test_numbers.py);
- here, needing torch as the benchmarks do: `gradients` (the `trace` chains on PyTorch's tensors
  too, outputs and gradients held to PyTorch's), `pytorch` and `pytorch-series` (random PyTorch
  image models, and recurrent or attention series models, exported by torch.onnx with dynamic
  axes, read by OnnxFile, held to PyTorch's own answer within 1e-5), `pytorch-encoder`,
  `pytorch-mlp`, `pytorch-text`, `pytorch-mobile` and `pytorch-crnn` (encoder stacks, MLPs with
  norms, branches and fifteen activations, embedding text models, MobileNetV3-like blocks,
  convolutional front ends into recurrent layers), each family also as `<family>-dynamo`
  (PyTorch's default exporter, torch.export's graphs; odd seeds at its default operator set).

    .venv/bin/python scripts/fuzz_numbers.py [--cases export=200,paths=100,recurrent=500,trace=500,
                                               pytorch=100,pytorch-series=100,gradients=500]
                                              [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


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


def gradients_case(seed: int) -> list[str]:
    """The chain of a `trace` case (tests/support/random_networks.py), the same code run on
    deepsharp's tensors and on PyTorch's (F as torch's functions), in half the cases one
    operation on an input in steps of 0.5 (ties, zeros, the clamp's bounds): the output and the
    gradients of the input and both weights against PyTorch's, within 1e-4 of their size
    (float32)."""
    import types

    import numpy as np
    import torch
    import torch.nn.functional as tF

    from deepsharp import functional as F
    from deepsharp.tensors import Tensor
    from tests.support.random_networks import _C, _CHAIN

    g = np.random.default_rng(seed)
    names = [list(_CHAIN)[i] for i in g.integers(0, len(_CHAIN), int(g.integers(1, 6)))]
    arrays = [g.standard_normal(s).astype(np.float32) * k
              for s, k in (((3, 7, _C), 1.0), ((_C, _C), 0.5), ((2 * _C, _C), 0.5))]
    if g.random() < 0.5:
        # ties and zeros on one operation's input (relu and abs at 0, clamp at its bounds, amax
        # and where): its own rule at the kink. Not after other operations, whose rounding may
        # land a value a hair either side of a kink, nor topk and sort, whose choice among ties
        # PyTorch leaves unspecified (docs/tensors.md)
        names = [n for n in names if n not in ("topk", "sort")][:1] or ["relu"]
        arrays[0] = np.round(arrays[0] * 2) / 2
    weights = g.standard_normal((3, _C)).astype(np.float32)
    torch_f = types.SimpleNamespace(gelu=tF.gelu, cat=torch.cat, where=torch.where,
                                    layer_norm=tF.layer_norm, rms_norm=tF.rms_norm, pad=tF.pad,
                                    einsum=torch.einsum, normalize=tF.normalize)

    def run(make, functions):
        x, w, w2 = (make(a) for a in arrays)
        module = types.SimpleNamespace(w=w, w2=w2)
        y = x
        for name in names:
            y = _CHAIN[name](module, y, functions)
        y = y.mean(dim=1)
        (y * make(weights, False)).sum().backward()
        return [v.detach().numpy() if hasattr(v, "detach") else v._data for v in (y,)] + \
            [t.grad.numpy() if hasattr(t.grad, "numpy") and not isinstance(t.grad, np.ndarray)
             else t.grad for t in (x, w, w2)]

    ours = run(lambda a, grad=True: Tensor(a, requires_grad=grad), F)
    theirs = run(lambda a, grad=True: torch.tensor(a, requires_grad=grad), torch_f)
    exact = None  # PyTorch in float64, made only where the two float32 answers part
    faults = []
    for index, what in enumerate(("output", "x's gradient", "w's gradient", "w2's gradient")):
        a, b = ours[index], theirs[index]
        if a is None and b is None:  # a weight the chain does not use
            continue
        a = np.zeros_like(b) if a is None else np.asarray(a)
        b = np.zeros_like(a) if b is None else np.asarray(b)
        gap = float(np.abs(a - b).max()) if a.shape == b.shape else np.inf
        if gap <= 1e-4 * max(1.0, float(np.abs(b).max())):
            continue
        # a chain may amplify float32 rounding (a layer norm of a row that relu made constant
        # divides by sqrt(eps)): ours passes where it is no farther from PyTorch's float64
        # answer than PyTorch's own float32 one is
        if exact is None:
            exact = run(lambda v, grad=True: torch.tensor(v.astype(np.float64),
                                                          requires_grad=grad), torch_f)
        truth = np.zeros_like(a, np.float64) if exact[index] is None else np.asarray(exact[index])
        if a.shape == truth.shape and np.abs(a - truth).max() <= np.abs(b - truth).max():
            continue
        faults.append(f"seed {seed}: {names}: {what} {gap} from PyTorch's")
    return faults


def _answers(call, lib: str):
    """(outputs as numpy arrays, whether each needs a gradient, the inputs' gradients for a random
    upstream gradient, the error raised); lib is "torch" or "ours"."""
    import numpy as np

    from tests.support.parity_cases import outputs_of

    if lib == "torch":
        import torch
        namespace, make = torch, (lambda a, grad: torch.tensor(a, requires_grad=grad))
    else:
        from deepsharp import functional as namespace
        from deepsharp.tensors import Tensor
        make = (lambda a, grad: Tensor(a, requires_grad=grad))
    tensors = [make(a.copy(), grad) for a, grad in zip(call.arrays, call.grads)]
    try:
        outputs = outputs_of(call.run(namespace, tensors))
    except Exception as error:  # noqa: BLE001 (what either side raises is the answer)
        return None, None, None, error
    arrays = [np.asarray(o.detach().numpy() if lib == "torch" else o.numpy()) for o in outputs]
    needs = [bool(o.requires_grad) for o in outputs]
    g = np.random.default_rng(len(arrays))
    total = None
    for out, array, need in zip(outputs, arrays, needs):
        if need:
            up = g.standard_normal(array.shape).astype(array.dtype)
            term = (out * (torch.from_numpy(up) if lib == "torch" else up)).sum()
            total = term if total is None else total + term
    grads = None
    if total is not None:
        try:
            total.backward()
        except Exception as error:  # noqa: BLE001
            if lib == "torch":  # PyTorch has no derivative here: ours is held to finite
                return arrays, needs, None, None  # differences by the suite instead
            return arrays, needs, None, error
        grads = [None if t.grad is None else np.asarray(t.grad.numpy() if lib == "torch"
                                                         else t.grad)
                 for t in tensors]
    return arrays, needs, grads, None


def _differs(a, b, tolerance: float) -> str:
    """Why array a is not b (shape, dtype, NaN or inf places, or the largest gap), or ''."""
    import numpy as np

    if a.shape != b.shape:
        return f"shape {a.shape} against {b.shape}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} against {b.dtype}"
    if a.dtype.kind not in "fc":
        return "" if np.array_equal(a, b) else f"values {a.ravel()[:6]} against {b.ravel()[:6]}"
    if not np.array_equal(np.isnan(a), np.isnan(b)) or \
            not np.array_equal(np.where(np.isinf(a), a, 0), np.where(np.isinf(b), b, 0)):
        return "NaN or inf in other places"
    finite = np.isfinite(b)
    gap = float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0
    scale = max(1.0, float(np.abs(b[finite]).max())) if finite.any() else 1.0
    return "" if gap <= tolerance * scale else f"{gap:.3g} from PyTorch's"


def tensors_case(seed: int) -> list[str]:
    """A random call of the tensor vocabulary (tests/support/random_calls.py) on PyTorch's
    tensors and on ours: the same outputs, dtypes and gradients, or an error. Neither our
    refusal of a call PyTorch answers (when it is the project's error) nor our answer to a call
    PyTorch refuses is a fault: both are listed, to be read."""
    from deepsharp.errors import DeepsharpError
    from tests.support.random_calls import random_call

    call = random_call(seed)
    theirs, ours = _answers(call, "torch"), _answers(call, "ours")
    label = f"seed {seed}: {call.text}"
    if ours[3] is not None and not isinstance(ours[3], DeepsharpError):
        return [f"{label}: raised {type(ours[3]).__name__}: {str(ours[3])[:160]}"
                + ("" if theirs[3] is None else f" (PyTorch too: {str(theirs[3])[:80]})")]
    if theirs[3] is not None:
        if ours[3] is None and "ZeroDivisionError" in str(theirs[3]):
            # PyTorch refuses these values (an integer quotient by zero), not the call: a number
            # in its place is a silent difference
            return [f"{label}: answered where PyTorch raised {str(theirs[3])[:80]}"]
        if ours[3] is None:
            WIDER.append(f"{label}: PyTorch raised {str(theirs[3])[:120]}")
        return []
    if ours[3] is not None:
        REFUSED.append(f"{label}: {str(ours[3])[:160]}")
        return []
    import numpy as np

    faults = []
    if len(ours[0]) != len(theirs[0]):
        return [f"{label}: {len(ours[0])} outputs, PyTorch {len(theirs[0])}"]
    for k, (a, b, need, their_need) in enumerate(zip(ours[0], theirs[0], ours[1], theirs[1])):
        why = _differs(a, b, 1e-5) or ("" if need == their_need else
                                        f"requires_grad {need}, PyTorch's {their_need}")
        if why:
            faults.append(f"{label}: output {k}: {why}")
    finite = all(np.isfinite(a).all() for a in call.arrays + theirs[0] if a.dtype.kind == "f")
    for k, (a, b) in enumerate(zip(ours[2] or [], theirs[2] or [])):
        # gradients are held where the inputs and outputs are finite and PyTorch's gradient is a
        # number (at inf or NaN each framework's rule reaches its own NaN, inf or number: a
        # division by zero's gradient, prod's where an entry is inf; docs/tensors.md)
        if a is None and b is None or not finite:
            continue
        a = np.zeros_like(b) if a is None else a
        b = np.zeros_like(a) if b is None else b
        a, b = a.astype(b.dtype), b.copy()
        a[~np.isfinite(b)] = b[~np.isfinite(b)]
        why = _differs(a, b, 1e-4)
        if why:
            faults.append(f"{label}: gradient {k}: {why}")
    return faults


REFUSED: list[str] = []
WIDER: list[str] = []
SKIPPED: list[str] = []


def main() -> int:
    from tests.support.random_networks import CASES as SUITE_CASES

    CASES = {**SUITE_CASES, "pytorch": pytorch_case, "pytorch-series": pytorch_series_case,
             "pytorch-dynamo": lambda seed: pytorch_case(seed, dynamo=True),
             "pytorch-series-dynamo": lambda seed: pytorch_series_case(seed, dynamo=True),
             "pytorch-mlp": pytorch_mlp_case,
             "pytorch-mlp-dynamo": lambda seed: pytorch_mlp_case(seed, dynamo=True),
             "pytorch-text": pytorch_text_case,
             "pytorch-text-dynamo": lambda seed: pytorch_text_case(seed, dynamo=True),
             "pytorch-mobile": pytorch_mobile_case,
             "pytorch-mobile-dynamo": lambda seed: pytorch_mobile_case(seed, dynamo=True),
             "pytorch-crnn": pytorch_crnn_case,
             "pytorch-crnn-dynamo": lambda seed: pytorch_crnn_case(seed, dynamo=True),
             "pytorch-encoder": pytorch_encoder_case,
             "pytorch-encoder-dynamo": lambda seed: pytorch_encoder_case(seed, dynamo=True),
             "gradients": gradients_case, "tensors": tensors_case}

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases",
                        default="export=200,paths=100,recurrent=500,trace=500,pytorch=100,"
                                "pytorch-series=100,gradients=500,tensors=3000")
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed")
    args = parser.parse_args()
    try:
        counts = {name: int(count) for name, count in
                  (part.split("=") for part in args.cases.split(",") if part)}
    except ValueError:
        parser.error(f"--cases takes name=count pairs, received {args.cases!r}")
    unknown = sorted(set(counts) - set(CASES))
    if unknown:
        parser.error(f"no such cases {unknown}; known: {sorted(CASES)}")
    found = 0
    for name, count in counts.items():
        started, faults = time.perf_counter(), []
        for seed in range(args.seed, args.seed + count):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                faults += CASES[name](seed)
        found += len(faults)
        print(f"{name:10s} {count:6d} cases  {len(faults):3d} faults  "
              f"{time.perf_counter() - started:7.1f} s")
        for fault in faults:
            print("   ", fault)
        for what, listed in (("refused (our error, where PyTorch answers)", REFUSED),
                             ("answered where PyTorch raised", WIDER)):
            if name == "tensors" and listed:
                print(f"    {what}: {len(listed)}")
                for line in listed:
                    print("     ", line)
        if SKIPPED:  # PyTorch's own exporter refused these models: listed, to be read
            print(f"    not exported by PyTorch: {len(SKIPPED)}")
            for line in SKIPPED:
                print("     ", line)
            SKIPPED.clear()
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
