"""Fixtures made by committed scripts (see scripts/)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@lru_cache(maxsize=None)
def torch_reference() -> dict:
    """What PyTorch computes for optimizers, schedules, losses, activations
    (scripts/make_torch_reference.py)."""
    return json.loads((FIXTURES / "torch_reference.json").read_text())
