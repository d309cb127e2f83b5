"""Small private helpers shared by the modules of rl-llm."""

from __future__ import annotations

from typing import Any


def as_strings(value: Any) -> list[str]:
    """A list of python strings from a str, a list, a NonTensorStack or a LinkedList."""
    if isinstance(value, str):
        return [value]
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [v if isinstance(v, str) else str(v) for v in value]


def import_ray(where: str) -> Any:
    """The ``ray`` module, or an ImportError naming ``where`` and the extra that installs it."""
    try:
        import ray
    except ImportError as err:
        raise ImportError(f'{where} needs Ray: pip install "rl-llm[ray]"', name="ray") from err
    return ray
