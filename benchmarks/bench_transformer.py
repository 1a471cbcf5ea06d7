"""Transformer block benchmark: 64 tokens of a 1000-word vocabulary, width 128, a pre-norm encoder
block (layer norm, 4-head self-attention, residual; layer norm, feed-forward 512 GELU, residual),
mean pool over the tokens, dense 2, cross-entropy, Adam, batches of 32: deepsharp and PyTorch
(CPU, 2 threads) trained side by side in one run.

    .venv/bin/python benchmarks/bench_transformer.py

deepsharp's model is the layer stack

    embedding(1000, 128)
      .residual(Sequential().layer_norm().multi_head_attention(4, 128))
      .residual(Sequential().layer_norm().dense(512).gelu().dense(128))
      .global_avg_pool().dense(2)

and PyTorch's is `nn.TransformerEncoderLayer(norm_first=True, activation="gelu", dropout=0)`
between the same embedding and head.
"""

from __future__ import annotations

import numpy as np

from side_by_side import deepsharp_trainer, factories, report, torch_data, torch_trainer

TOKENS, VOCABULARY, WIDTH, HEADS, FEED, CLASSES, BATCH, BATCHES = 64, 1000, 128, 4, 512, 2, 32, 16


def _data() -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(0)
    ids = generator.integers(0, VOCABULARY, (BATCH * BATCHES, TOKENS))
    return ids, (ids[:, :8].sum(axis=1) % CLASSES).astype(np.int64)


def deepsharp_model():
    from deepsharp import RandomStream, Sequential, Shape

    spec = (Sequential().embedding(VOCABULARY, WIDTH)
            .residual(Sequential().layer_norm().multi_head_attention(HEADS, WIDTH))
            .residual(Sequential().layer_norm().dense(FEED).gelu().dense(WIDTH))
            .global_avg_pool().dense(CLASSES))
    return spec.lower(Shape(TOKENS), RandomStream(0))


def deepsharp_epoch(threads: int = 1):
    from deepsharp import CrossEntropy

    return deepsharp_trainer(deepsharp_model(), CrossEntropy(), *_data(), BATCH, threads)


def torch_epoch(best: bool = False):
    torch, x, y = torch_data(_data())

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(VOCABULARY, WIDTH)
            self.block = torch.nn.TransformerEncoderLayer(
                WIDTH, HEADS, FEED, dropout=0.0, activation="gelu", batch_first=True,
                norm_first=True)
            self.head = torch.nn.Linear(WIDTH, CLASSES)

        def forward(self, ids):
            return self.head(self.block(self.embed(ids)).mean(dim=1))

    return torch_trainer(Model(), torch.nn.CrossEntropyLoss(), x, y, BATCH, best)


def main() -> list[dict]:
    return report("transformer", factories(deepsharp_epoch, torch_epoch), BATCHES)


if __name__ == "__main__":
    main()
