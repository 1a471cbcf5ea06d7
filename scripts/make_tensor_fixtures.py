"""Make tests/fixtures/tensors_torch.npz: PyTorch's answers for the tensor vocabulary.

For each call of tests/support/parity_cases.py: its inputs (random, float32 unless integer or
bool), PyTorch's outputs, a random upstream gradient for each float output, and the gradients
PyTorch gives every float input for them. PyTorch is needed only to run this script, never by the
tests.

    .venv/bin/pip install torch==2.13.0 && .venv/bin/python scripts/make_tensor_fixtures.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.parity_cases import CASES, call, outputs_of  # noqa: E402

OUT = ROOT / "tests" / "fixtures" / "tensors_torch.npz"


def namespace(owner: str, name: str):
    return getattr(torch.nn.functional if owner == "F" else torch, name)


def _backward(total) -> bool:
    """Whether PyTorch gives the gradients: it has no derivative of floor_divide nor of a number
    % tensor, and raises; deepsharp gives theirs (docs/tensors.md), held to finite differences
    by the tests instead."""
    try:
        total.backward()
    except RuntimeError as error:
        if "is not implemented" not in str(error):
            raise
        return False
    return True


def main() -> None:
    torch.manual_seed(0)
    generator = np.random.default_rng(0)
    arrays: dict[str, np.ndarray] = {}
    for case in CASES:
        inputs = [spec.make(generator) for spec in case.inputs]
        tensors = [torch.tensor(a, requires_grad=spec.is_float)
                   for a, spec in zip(inputs, case.inputs)]
        outputs = outputs_of(call(case, namespace, tensors))
        total = None
        for k, out in enumerate(outputs):
            arrays[f"{case.id}/out{k}"] = out.detach().numpy().copy()
            if out.requires_grad:
                up = generator.standard_normal(tuple(out.shape)).astype(np.float32)
                arrays[f"{case.id}/up{k}"] = up
                term = (out * torch.from_numpy(up)).sum()
                total = term if total is None else total + term
        differentiated = total is None or _backward(total)
        for k, (a, t) in enumerate(zip(inputs, tensors)):
            arrays[f"{case.id}/in{k}"] = a
            if t.requires_grad and differentiated:
                grad = t.grad if t.grad is not None else torch.zeros_like(t)
                arrays[f"{case.id}/grad{k}"] = grad.numpy().copy()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(arrays)} arrays for {len(CASES)} calls to {OUT} "
          f"({OUT.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
