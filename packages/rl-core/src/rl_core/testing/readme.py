"""Runs the ``## Example`` block of a package README and checks what it prints.

Each ``print(...)`` line of the example may end with a comment giving the expected output
(``print(x)  # torch.Size([4, 100])``); the printed line must equal it.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

_BLOCK = re.compile(r"## Example\s*\n+```python\n(.*?)```", re.DOTALL)
_EXPECTED = re.compile(r"^\s*print\(.*\)\s*#\s*(.+?)\s*$")


def readme_example(readme: Path) -> str:
    """The Python code of the README's ``## Example`` section.

    Raises:
        ValueError: the README has no such section.
    """
    match = _BLOCK.search(readme.read_text())
    if match is None:
        raise ValueError(
            f"{readme}: expected a '## Example' section with a python block, found none."
        )
    return match.group(1)


def run_readme_example(readme: Path) -> list[str]:
    """Executes the example; returns its printed lines after checking the expected ones.

    Raises:
        AssertionError: a printed line differs from the comment on its ``print`` call.
    """
    code = readme_example(readme)
    expected = [m.group(1) for line in code.splitlines() if (m := _EXPECTED.match(line))]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(readme), "exec"), {"__name__": "__readme__"})
    printed = out.getvalue().splitlines()
    if expected and printed != expected:
        raise AssertionError(
            f"{readme}: the example printed {printed}, the README says {expected}."
        )
    return printed


__all__ = ["readme_example", "run_readme_example"]
