"""pytest fixtures for users' tests (importing this module needs pytest).

Use one in a test module or a conftest by importing it: ``from rl_envs.testing.fixtures import
dtype_fixture``.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

try:
    import pytest
except ImportError as err:  # pragma: no cover - pytest is where fixtures are used
    raise ImportError(
        "rl_envs.testing.fixtures holds pytest fixtures and needs pytest: pip install pytest"
    ) from err


@pytest.fixture
def dtype_fixture() -> Iterator[torch.dtype]:
    """Runs the test with ``torch.float64`` as the default dtype; yields the previous one,
    which is restored after the test."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield previous
    finally:
        torch.set_default_dtype(previous)


__all__ = ["dtype_fixture"]
