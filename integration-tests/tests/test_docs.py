"""The documentation's tutorials run as written: every ```python block of each page under
docs/tutorials, in order, in one namespace (as a reader pastes them into one session)."""

import re
from pathlib import Path

import pytest
import torch

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text())


@pytest.mark.parametrize("page", sorted((DOCS / "tutorials").glob("*.md")), ids=lambda p: p.stem)
def test_tutorial_runs(page, capsys):
    code = blocks(page)
    assert code, f"{page} has no python block"
    threads = torch.get_num_threads()
    namespace: dict = {"__name__": f"tutorial_{page.stem}"}
    try:
        for number, block in enumerate(code, 1):
            exec(compile(block, f"{page.name}[block {number}]", "exec"), namespace)
    finally:
        torch.set_num_threads(threads)
    assert capsys.readouterr().out  # each tutorial shows its results
    if page.stem == "getting-started":
        # what the page says its loop does: the policy learns (a return several times the first)
        assert namespace["last"] > 2 * namespace["first"], (namespace["first"], namespace["last"])


def test_blocks_are_found():
    page = DOCS / "tutorials" / "getting-started.md"
    assert len(blocks(page)) == page.read_text().count("```python")
