"""load_dataset and register_dataset: offline datasets named ``"<source>:<dataset id>"``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["load_dataset", "register_dataset"]

_REGISTRY: dict[str, Callable[..., Any] | str] = {
    "atari_dqn": "rl_buffers.datasets.atari_dqn:AtariDQNExperienceReplay",
    "d4rl": "rl_buffers.datasets.d4rl:D4RLExperienceReplay",
    "gen_dgrl": "rl_buffers.datasets.gen_dgrl:GenDGRLExperienceReplay",
    "lerobot": "rl_buffers.datasets.lerobot:LeRobotExperienceReplay",
    "minari": "rl_buffers.datasets.minari_data:MinariExperienceReplay",
    "roboset": "rl_buffers.datasets.roboset:RobosetExperienceReplay",
    "vd4rl": "rl_buffers.datasets.vd4rl:VD4RLExperienceReplay",
}


def _prefix(prefix: Any) -> str:
    if not isinstance(prefix, str) or not prefix.strip() or ":" in prefix:
        raise ValueError(
            f"register_dataset: expected prefix to be a non-empty str without ':', got {prefix!r}."
        )
    return prefix.strip().lower()


def register_dataset(
    prefix: str, dataset: Callable[..., Any] | str, *, replace: bool = False
) -> None:
    """Names a dataset source for :func:`load_dataset` (``"<prefix>:<dataset id>"``).

    Args:
        prefix: the source's name (case-insensitive, no ``":"``).
        dataset: called as ``dataset(dataset_id, **kwargs)``, or a ``"module:attribute"``
            string resolved when the prefix is first used.

    Keyword Args:
        replace: whether an existing prefix may be replaced. Defaults to False.

    Raises:
        ValueError: a malformed prefix or ``"module:attribute"`` string.
        TypeError: ``dataset`` is neither callable nor a string.
        KeyError: the prefix is taken and ``replace`` is False.

    Examples:
        >>> from rl_buffers.datasets import load_dataset, register_dataset
        >>> class Toy:
        ...     def __init__(self, dataset_id, **kwargs):
        ...         self.dataset_id, self.kwargs = dataset_id, kwargs
        >>> register_dataset("toy", Toy, replace=True)
        >>> toy = load_dataset("toy:demo-v0", batch_size=4)
        >>> toy.dataset_id, toy.kwargs
        ('demo-v0', {'batch_size': 4})
    """
    key = _prefix(prefix)
    if isinstance(dataset, str):
        module, _, attribute = dataset.partition(":")
        if not module or not attribute:
            raise ValueError(
                f"register_dataset: expected a 'module:attribute' string, got {dataset!r}."
            )
    elif not callable(dataset):
        raise TypeError(
            f"register_dataset: expected dataset to be callable or a 'module:attribute' string, "
            f"got {type(dataset).__name__}."
        )
    if key in _REGISTRY and not replace:
        raise KeyError(
            f"register_dataset: the source {key!r} is registered already; pass replace=True "
            f"to replace it."
        )
    _REGISTRY[key] = dataset


def load_dataset(dataset_id: str, **kwargs: Any) -> Any:
    """The dataset ``"<source>:<dataset id>"``: its registered factory called with the id
    and ``kwargs`` (``load_dataset("d4rl:hopper-medium-v2", root=...)``).

    Built-in sources: ``"atari_dqn"``, ``"d4rl"``, ``"gen_dgrl"``, ``"lerobot"``,
    ``"minari"``, ``"roboset"``, ``"vd4rl"``; add others with :func:`register_dataset`.

    Raises:
        ValueError: no ``"<source>:"`` part, or an unknown source (the known ones listed).
    """
    if not isinstance(dataset_id, str) or ":" not in dataset_id:
        raise ValueError(
            f"load_dataset: expected '<source>:<dataset id>' such as 'd4rl:hopper-medium-v2', "
            f"got {dataset_id!r}."
        )
    prefix, _, name = dataset_id.partition(":")
    key = prefix.strip().lower()
    factory = _REGISTRY.get(key)
    if factory is None:
        raise ValueError(
            f"load_dataset: unknown dataset source {prefix!r} in {dataset_id!r}; known: "
            f"{sorted(_REGISTRY)}. Add one with register_dataset."
        )
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        factory = getattr(importlib.import_module(module), attribute)
    return factory(name, **kwargs)
