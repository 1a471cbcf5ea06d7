"""Every ```python block of docs/tracing.md runs, in one namespace (```python no-run blocks are
shown, not run)."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tracing.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def test_tracing_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "docs_tracing"}
    blocks = BLOCK.findall(PAGE.read_text())
    assert len(blocks) >= 4
    for index, block in enumerate(blocks):
        exec(compile(block, f"tracing.md block {index + 1}", "exec"), namespace)
