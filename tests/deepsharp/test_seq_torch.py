"""Our LSTM, GRU and multi-head attention against PyTorch's answers on the same weights
(tests/fixtures/sequences_torch.npz, made by scripts/make_sequence_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deepsharp import Sequential, Shape
from deepsharp.layers.base import Flow
from deepsharp.tensors import Tensor, no_grad
from layout import torch_in_projection_to_kernels, torch_to_dense_kernel, torch_to_recurrent_kernel

FIXTURE = np.load(Path(__file__).resolve().parent.parent / "fixtures" / "sequences_torch.npz")


def _case(label: str) -> dict[str, np.ndarray]:
    return {k[len(label) + 1:]: FIXTURE[k] for k in FIXTURE.files if k.startswith(label + ".")}


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_two_layer_bidirectional_packed_series_match_pytorch(kind):
    case = _case(kind)
    network = getattr(Sequential(), kind)(4, return_sequences=True, bidirectional=True, layers=2)
    network = network.lower(Shape(6, 3))
    state = {f"0.{name}": torch_to_recurrent_kernel(case[name]) if name.startswith("weight")
             else case[name] for name in case if name.startswith(("weight", "bias"))}
    network.load_state_dict(state)
    step = network.steps[0]
    mask = np.arange(6)[None, :] < case["lengths"][:, None]
    with no_grad():
        y = step.call(Flow(Tensor(case["x"]), Tensor(mask))).value._data
    np.testing.assert_allclose(y, case["y"], atol=2e-6)
    # the last states of the top layer: forward after the last real step, reverse after step 0
    last = getattr(Sequential(), kind)(4, bidirectional=True, layers=2).lower(Shape(6, 3))
    last.load_state_dict(state)
    with no_grad():
        h = last.steps[0].call(Flow(Tensor(case["x"]), Tensor(mask))).value._data
    np.testing.assert_allclose(h, np.concatenate([case["h_n"][2], case["h_n"][3]], axis=1),
                               atol=2e-6)


@pytest.mark.parametrize("label, causal", [("mha", False), ("mha_causal", True)])
def test_multi_head_attention_matches_pytorch(label, causal):
    case = _case(label)
    network = Sequential().multi_head_attention(2, 6, causal=causal).lower(Shape(5, 6))
    q, k, v = torch_in_projection_to_kernels(case["in_proj_weight"])
    bq, bk, bv = np.split(case["in_proj_bias"], 3)
    network.load_state_dict({
        "0.query_weight": q, "0.key_weight": k, "0.value_weight": v,
        "0.query_bias": bq, "0.key_bias": bk, "0.value_bias": bv,
        "0.output_weight": torch_to_dense_kernel(case["out_proj.weight"]),
        "0.output_bias": case["out_proj.bias"]})
    with no_grad():
        y = network.steps[0].call(Flow(Tensor(case["x"]), Tensor(case["real"]))).value._data
    np.testing.assert_allclose(y, case["y"], atol=2e-6)
