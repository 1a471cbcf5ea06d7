"""The PyTorch models scripts/make_import_fixtures.py exports as the importer's fixtures, one
class each (the fixture names and inputs are its MODELS table)."""

from __future__ import annotations

import torch
from torch import nn


class Mlp(nn.Module):
    def __init__(self, last: nn.Module | None = None) -> None:
        super().__init__()
        layers = [nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3)]
        self.net = nn.Sequential(*layers, *([last] if last is not None else []))

    def forward(self, x):
        return self.net(x)


class GeluTanhMlp(nn.Module):
    """GELU's tanh form: one node from operator set 20, decomposed below it (Pow or two Muls for
    the cube, as the exporter writes it)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 10), nn.GELU(approximate="tanh"), nn.Linear(10, 3))

    def forward(self, x):
        return self.net(x)


class HardMlp(nn.Module):
    """The activations beyond the first set: ReLU6 and Hardtanh (Clip), Hardswish, Mish (one node
    from set 18 in the dynamo graphs, decomposed below it), Hardsigmoid."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 10), nn.ReLU6(), nn.Linear(10, 8), nn.Hardswish(),
                                 nn.Linear(8, 8), nn.Mish(), nn.Linear(8, 8), nn.Hardsigmoid(),
                                 nn.Linear(8, 8), nn.Hardtanh(-0.5, 0.75), nn.Linear(8, 3))
        with torch.no_grad():  # values past the kinks: ReLU6's 6, Hardswish's and Hardsigmoid's 3
            for k in (0, 2, 6):
                self.net[k].weight.mul_(4)

    def forward(self, x):
        return self.net(x)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, reduced: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.down, self.up = nn.Conv2d(channels, reduced, 1), nn.Conv2d(reduced, channels, 1)

    def forward(self, x):
        return x * nn.functional.hardsigmoid(self.up(torch.relu(self.down(self.pool(x)))))


class MobileBlock(nn.Module):
    """MobileNetV3's block: a convolution, Hardswish, a depthwise convolution, ReLU6, a
    squeeze-and-excitation gate (Hardsigmoid), a pointwise convolution; batch norms between."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.Hardswish(),
            nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.BatchNorm2d(8), nn.ReLU6(),
            SqueezeExcite(8, 4), nn.Conv2d(8, 6, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(6, 3))

    def forward(self, x):
        return self.net(x)


class PreluCnn(nn.Module):
    """nn.PReLU per channel on an image ((C, 1, 1) slopes) and on rows ((C,)), and shared."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(2, 4, 3), nn.PReLU(4), nn.Conv2d(4, 3, 3), nn.PReLU(),
                                 nn.Flatten(), nn.Linear(3 * 5 * 5, 6), nn.PReLU(6),
                                 nn.Linear(6, 2))
        with torch.no_grad():  # slopes apart from their common start
            for module in self.net:
                if isinstance(module, nn.PReLU):
                    module.weight.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.net(x)


class Crnn(nn.Module):
    """A convolutional front end on a channels-first series, pooled, turned batch-first for a
    bidirectional GRU (PyTorch folds `y.transpose(1, 2)` into the GRU's time-major turn), the
    mean over the steps, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.norm = nn.Conv1d(3, 8, 3, padding=1), nn.BatchNorm1d(8)
        self.pool = nn.MaxPool1d(2)
        self.rnn = nn.GRU(8, 6, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y = self.pool(torch.relu(self.norm(self.conv(x)))).transpose(1, 2)
        return self.fc(self.rnn(y)[0].mean(dim=1))


class GroupNormCnn(nn.Module):
    """nn.GroupNorm with and without its affine weights, which PyTorch writes below operator
    set 21 as an InstanceNormalization of the groups between two Reshapes."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU(),
                                 nn.Conv2d(8, 4, 1), nn.GroupNorm(4, 4, affine=False), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3))

    def forward(self, x):
        return self.net(x)


class SoftplusMlp(nn.Module):
    """nn.Softplus at other betas and thresholds: torch.export writes the threshold (Where),
    TorchScript drops it (its graphs answer as PyTorch only below the threshold: the values here
    stay below it)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.Softplus(beta=2.0), nn.Linear(8, 8),
                                 nn.Softplus(beta=0.5, threshold=15.0), nn.Linear(8, 3))

    def forward(self, x):
        return self.net(x)


class DropoutMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1),
                                 nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class NormMlp(nn.Module):
    """LayerNorm and the exact GELU (decomposed below opsets 17 and 20)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 12), nn.LayerNorm(12), nn.GELU(), nn.Linear(12, 2))

    def forward(self, x):
        return self.net(x)


class Cnn(nn.Module):
    """Conv, batch norm, max and average pools, an adaptive pool, then nn.Flatten."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(  # the first batch norm folds into its conv, the second not
            nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
            nn.BatchNorm2d(6), nn.Conv2d(6, 8, 3), nn.ReLU(), nn.AvgPool2d(2),
            nn.AdaptiveAvgPool2d((2, 2)))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32, 10), nn.Softmax(dim=1))

    def forward(self, x):
        return self.head(self.features(x))


class CnnCeil(nn.Module):
    """Pools with ceil_mode=True: windows past the end while they start inside the places or the
    begin padding (9 -> 5: the sixth window would start in the end padding and is dropped -> 3
    -> 2); the avg pools' divisors count their padding (PyTorch's default), not the room past it."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2, stride=2, padding=1, ceil_mode=True), nn.AvgPool2d(2, ceil_mode=True),
            nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))

    def forward(self, x):
        return self.head(self.features(x))


class CnnView(nn.Module):
    """The flatten written as `x.view(x.size(0), -1)`, a global average pool."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, stride=2, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.norm(self.conv(x))))
        return self.fc(x.view(x.size(0), -1))


class Conv1dText(nn.Module):
    """Embedding, turned channels-first for Conv1d, a max over time, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(30, 8)
        self.conv = nn.Conv1d(8, 12, 3, padding=1)
        self.pool = nn.AdaptiveMaxPool1d(1)
        self.fc = nn.Linear(12, 2)

    def forward(self, ids):
        x = self.embed(ids).transpose(1, 2)
        x = self.pool(torch.relu(self.conv(x))).squeeze(-1)
        return self.fc(x)


class Conv1dSeries(nn.Module):
    """A channels-first series (batch, channels, steps) in and out: Conv1d, pools, Conv1d."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(4, 8, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
                                 nn.Conv1d(8, 3, 3, padding=1))

    def forward(self, x):
        return self.net(x)


class LstmLast(nn.Module):
    """An LSTM (1 or 2 layers) read out by h_n[-1]; with batch_first=False (PyTorch's default) it
    takes series (steps, batch, channels), read with OnnxFile(loss, series="batch_first")."""

    def __init__(self, layers: int, batch_first: bool = True) -> None:
        super().__init__()
        self.rnn = nn.LSTM(5, 8, num_layers=layers, batch_first=batch_first)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        _, (h, _) = self.rnn(x)
        return self.fc(h[-1])


class LstmOutLast(nn.Module):
    """An LSTM read out by its output at the last step, out[:, -1]."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(5, 8, batch_first=True)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out[:, -1])


class BiGruTagger(nn.Module):
    """A bidirectional GRU over every step, a linear head per step."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(5, 6, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out)


class BiGruLast(nn.Module):
    """A bidirectional GRU read out by both directions' last states side by side."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(5, 6, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(12, 1)

    def forward(self, x):
        _, h = self.rnn(x)
        return torch.sigmoid(self.fc(torch.cat([h[-2], h[-1]], dim=1)))


class EmbeddingLstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 8)
        self.rnn = nn.LSTM(8, 10, batch_first=True)
        self.fc = nn.Linear(10, 4)

    def forward(self, ids):
        _, (h, _) = self.rnn(self.embed(ids))
        return self.fc(h[-1])


class Encoder(nn.Module):
    def __init__(self, activation: str = "relu") -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24, dropout=0.1,
                                                activation=activation, batch_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc(self.layer(x))


class EncoderStack(nn.Module):
    """A projection, two norm-first encoder layers (GELU) with a causal mask, the mean over the
    steps, a linear head: torch.export reads the batch and the steps once, at the projection,
    for both layers' reshapes."""

    def __init__(self) -> None:
        super().__init__()
        self.projection = nn.Linear(5, 16)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(16, 4, dim_feedforward=24, dropout=0.1, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(2))
        self.fc = nn.Linear(16, 3)

    def forward(self, x):
        y = self.projection(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        for layer in self.layers:
            y = layer(y, src_mask=mask, is_causal=True)
        return self.fc(y.mean(dim=1))


class SelfAttention(nn.Module):
    """nn.MultiheadAttention on its own (its averaged weights asked for, then unused), the mean
    over the steps, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(12, 3, batch_first=True)
        self.fc = nn.Linear(12, 2)

    def forward(self, x):
        y, _ = self.attention(x, x, x)
        return self.fc(y.mean(dim=1))


class ProjectedAttention(nn.Module):
    """A linear projection, then nn.MultiheadAttention without its weights (need_weights=False:
    PyTorch's scaled_dot_product_attention path, which torch.export writes with the shapes read
    from the projection's input), the mean over the steps, a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.projection = nn.Linear(5, 12)
        self.attention = nn.MultiheadAttention(12, 2, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        p = self.projection(x)
        y, _ = self.attention(p, p, p, need_weights=False)
        return self.fc(y.mean(dim=1))
