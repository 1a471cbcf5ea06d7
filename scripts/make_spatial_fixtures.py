"""Make tests/fixtures/spatial_torch.npz: PyTorch's answers for the spatial layers.

Each case holds an input (channels-last, as deepsharp takes it), the PyTorch module's weights (in
PyTorch's layout; the test turns them with `layout`) and PyTorch's output (channels-last).
PyTorch is needed only to run this script, never by the tests.

    .venv/bin/pip install torch==2.13.0 && .venv/bin/python scripts/make_spatial_fixtures.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "spatial_torch.npz"


def channels_first(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(np.moveaxis(x, -1, 1)))


def channels_last(t: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(t.detach().numpy(), 1, -1))


def main() -> None:
    torch.manual_seed(0)
    generator = np.random.default_rng(0)
    arrays: dict[str, np.ndarray] = {}

    def case(name: str, shape: tuple[int, ...], module: nn.Module, pre=None,
             last: bool = False) -> None:
        """`last`: the module works on the last axis, so it takes x channels-last as it is."""
        x = generator.standard_normal(shape).astype(np.float32)
        t = torch.from_numpy(x) if last else channels_first(x)
        with torch.no_grad():
            for p in module.parameters():  # weights away from the defaults
                p.copy_(torch.from_numpy(generator.standard_normal(tuple(p.shape)).astype(np.float32)))
            y = module(pre(t) if pre else t)
        arrays[f"{name}/x"] = x
        arrays[f"{name}/y"] = y.detach().numpy() if last else channels_last(y)
        for key, p in module.state_dict().items():
            arrays[f"{name}/{key}"] = p.detach().numpy().copy()

    case("conv1d", (3, 11, 2), nn.Conv1d(2, 4, 3, padding=2, dilation=2))
    case("conv1d_causal", (2, 9, 3), nn.Conv1d(3, 2, 3, dilation=2), pre=lambda t: F.pad(t, (4, 0)))
    case("conv2d", (2, 9, 8, 4), nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2))
    case("conv2d_same", (2, 7, 6, 3), nn.Conv2d(3, 5, 4, padding="same", bias=False))
    case("conv3d", (2, 5, 4, 6, 2), nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=(1, 0, 1)))
    case("conv_transpose1d", (2, 6, 3), nn.ConvTranspose1d(3, 2, 3, stride=3, dilation=2,
                                                            padding=1, output_padding=2))
    case("conv_transpose2d", (2, 5, 4, 3), nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1,
                                                              output_padding=1))
    case("conv_transpose3d", (1, 3, 2, 3, 2), nn.ConvTranspose3d(2, 3, (2, 3, 2), stride=(1, 2, 2),
                                                                padding=(0, 1, 0)))
    case("max_pool2d", (2, 9, 8, 3), nn.MaxPool2d(3, stride=2, padding=1))
    case("max_pool3d", (1, 5, 4, 6, 2), nn.MaxPool3d((2, 2, 3), stride=(1, 2, 2), padding=(1, 0, 1)))
    case("avg_pool1d", (2, 9, 3), nn.AvgPool1d(4, stride=2, padding=2, count_include_pad=False))
    case("max_pool1d", (2, 12, 3), nn.MaxPool1d(2, stride=1, dilation=3))
    case("avg_pool2d", (2, 9, 8, 3), nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False))
    case("avg_pool2d_including", (2, 9, 8, 3), nn.AvgPool2d(3, stride=2, padding=1))
    case("avg_pool3d", (1, 4, 6, 5, 2), nn.AvgPool3d(2))
    case("adaptive_avg_pool2d", (2, 7, 10, 3), nn.AdaptiveAvgPool2d((3, 4)))
    case("adaptive_max_pool2d", (2, 7, 10, 3), nn.AdaptiveMaxPool2d((3, 4)))
    case("adaptive_avg_pool1d", (2, 10, 3), nn.AdaptiveAvgPool1d(4))
    case("upsample_nearest", (2, 3, 4, 2), nn.Upsample(scale_factor=2, mode="nearest"))
    case("upsample_nearest_size", (2, 3, 4, 2), nn.Upsample(size=(7, 9), mode="nearest"))
    case("upsample_bilinear", (2, 3, 4, 2), nn.Upsample(size=(7, 9), mode="bilinear"))
    case("upsample_bilinear_corners", (2, 3, 4, 2), nn.Upsample(scale_factor=3, mode="bilinear",
                                                                align_corners=True))
    case("pad_reflect", (2, 4, 5, 2), nn.ReflectionPad2d((1, 2, 3, 0)))
    case("pad_edge", (2, 4, 5, 2), nn.ReplicationPad2d((2, 1, 0, 3)))
    case("layer_norm", (2, 4, 5, 6), nn.LayerNorm(6), last=True)
    case("rms_norm", (2, 4, 6), nn.RMSNorm(6, eps=1e-5), last=True)
    case("group_norm", (2, 4, 5, 6), nn.GroupNorm(3, 6))
    case("instance_norm", (2, 4, 5, 6), nn.InstanceNorm2d(6, affine=True))
    # ceil_mode: windows past the end while they start inside (9 -> 5: the sixth is dropped)
    case("max_pool2d_ceil", (2, 9, 8, 3), nn.MaxPool2d(2, stride=2, padding=1, ceil_mode=True))
    case("avg_pool2d_ceil", (2, 9, 7, 3), nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                                       count_include_pad=False))
    case("avg_pool2d_ceil_including", (2, 5, 7, 3), nn.AvgPool2d(2, ceil_mode=True))
    case("max_pool1d_ceil", (2, 10, 3), nn.MaxPool1d(3, stride=3, ceil_mode=True))

    # batch norm: two training steps (running statistics, unbiased) then an evaluation pass
    norm = nn.BatchNorm2d(3)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([0.5, 1.5, -1.0]))
        norm.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    norm.train()
    for step in range(2):
        x = generator.standard_normal((4, 3, 5, 3)).astype(np.float32) * (step + 1) + step
        arrays[f"batch_norm/x{step}"] = x
        arrays[f"batch_norm/y{step}"] = channels_last(norm(channels_first(x)))
    norm.eval()
    x = generator.standard_normal((2, 3, 5, 3)).astype(np.float32)
    arrays["batch_norm/x_eval"] = x
    arrays["batch_norm/y_eval"] = channels_last(norm(channels_first(x)))
    for key in ("weight", "bias", "running_mean", "running_var"):
        arrays[f"batch_norm/{key}"] = getattr(norm, key).detach().numpy().copy()

    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(arrays)} arrays to {OUT}")


if __name__ == "__main__":
    main()
