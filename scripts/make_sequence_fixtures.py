"""Make tests/fixtures/sequences_torch.npz: PyTorch's answers for LSTM, GRU and multi-head
attention on fixed weights and inputs, for the parity tests in tests/deepsharp/test_seq_torch.py.

    .venv/bin/pip install torch==2.13.0 && .venv/bin/python scripts/make_sequence_fixtures.py

Weights are stored in PyTorch's layout under their PyTorch names (prefixed by the case); the tests
turn them into ours through `layout`. torch is needed only to run this script.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sequences_torch.npz"


def recurrent(kind: str, arrays: dict) -> None:
    torch.manual_seed(1 if kind == "lstm" else 2)
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    module = cls(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    x = torch.randn(3, 6, 3)
    lengths = torch.tensor([6, 2, 4])
    packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                     enforce_sorted=False)
    with torch.no_grad():
        out, state = module(packed)
    y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=6)
    h_n = state[0] if kind == "lstm" else state
    arrays[f"{kind}.x"] = x.numpy()
    arrays[f"{kind}.lengths"] = lengths.numpy()
    arrays[f"{kind}.y"] = y.numpy()
    arrays[f"{kind}.h_n"] = h_n.numpy()
    for name, value in module.state_dict().items():
        arrays[f"{kind}.{name}"] = value.numpy()


def attention(label: str, causal: bool, arrays: dict) -> None:
    torch.manual_seed(3)
    module = torch.nn.MultiheadAttention(6, 2, batch_first=True)
    x = torch.randn(2, 5, 6)
    pad = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
    mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1) if causal else None
    with torch.no_grad():
        y, _ = module(x, x, x, key_padding_mask=pad, attn_mask=mask, need_weights=False)
    arrays[f"{label}.x"] = x.numpy()
    arrays[f"{label}.real"] = (~pad).numpy()
    arrays[f"{label}.y"] = y.numpy()
    for name, value in module.state_dict().items():
        arrays[f"{label}.{name}"] = value.numpy()


def main() -> None:
    arrays: dict[str, np.ndarray] = {}
    recurrent("lstm", arrays)
    recurrent("gru", arrays)
    attention("mha", False, arrays)
    attention("mha_causal", True, arrays)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez(OUT, **arrays)
    print(f"wrote {OUT} ({len(arrays)} arrays)")


if __name__ == "__main__":
    main()
