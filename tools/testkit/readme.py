"""Runs the ``## Example`` block of a package README and checks what it prints.

Each ``print(...)`` call of the example sits on one line ending with a comment giving the
expected output (``print(x)  # torch.Size([4, 100])``); the printed line must equal it.
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
        ValueError: a ``print`` call has no expected-output comment on its line.
        AssertionError: a printed line differs from the comment on its ``print`` call.
    """
    code = readme_example(readme)
    expected = []
    for line in code.splitlines():
        if not line.lstrip().startswith("print("):
            continue
        match = _EXPECTED.match(line)
        if match is None:
            raise ValueError(
                f"{readme}: expected each print call on one line ending with '# <expected "
                f"output>', got {line.strip()!r}. Shorten the line (the formatter splits long ones)."
            )
        expected.append(match.group(1))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(readme), "exec"), {"__name__": "__readme__"})
    printed = out.getvalue().splitlines()
    if printed != expected:
        raise AssertionError(
            f"{readme}: the example printed {printed}, the README says {expected}."
        )
    return printed


__all__ = ["readme_example", "run_readme_example"]
