"""Every ```python block of the user documentation runs, page by page, in one namespace per page
(a block fenced as ```python no-run is shown, not run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_examples_run(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page}"}
    for index, block in enumerate(BLOCK.findall((DOCS / page).read_text())):
        try:
            exec(compile(block, f"{page} block {index + 1}", "exec"), namespace)
        except Exception as error:
            raise AssertionError(f"{page}, example {index + 1} fails: {error!r}\n{block}") from error
