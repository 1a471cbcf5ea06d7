"""The examples of the spatial sections of the docs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def spatial_examples() -> list[tuple[str, str]]:
    examples = []
    for page in ("networks.md", "exporting.md"):
        text = (DOCS / page).read_text()
        section = text.split("<!-- section: spatial -->", 1)[1].split("<!-- section:", 1)[0]
        blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
        examples += [(f"{page}[{i}]", block) for i, block in enumerate(blocks)]
    return examples


@pytest.mark.parametrize("code", [c for _, c in spatial_examples()],
                         ids=[i for i, _ in spatial_examples()])
def test_example_runs(code, capsys):
    exec(compile(code, "<docs>", "exec"), {})
