"""Drops every entry of a batch but some: :class:`SelectKeys`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensordict import TensorDictBase

from rl_objectives.trainers.hooks.common import TrainerHookBase


class SelectKeys(TrainerHookBase):
    """Keeps only ``keys`` in each collected batch (at ``"batch_process"``).

    Useful before storing batches in a replay buffer: entries the loss never reads (pixels
    kept for videos, recurrent states, ...) take no memory.

    Args:
        keys: the (nested) keys to keep.

    Raises:
        TypeError: ``keys`` is a string or holds something that is not a key.
        ValueError: ``keys`` is empty.
        KeyError: (when called) the batch lacks one of the keys.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import SelectKeys
        >>> batch = TensorDict(a=torch.zeros(2), b=torch.ones(2), batch_size=[2])
        >>> print(sorted(SelectKeys(["a"])(batch).keys()))
        ['a']
    """

    def __init__(self, keys: Sequence[str | tuple[str, ...]]) -> None:
        if isinstance(keys, str | tuple) or not isinstance(keys, Sequence):
            raise TypeError(
                f"SelectKeys: keys must be a list of keys, got {keys!r}; wrap one key in a "
                f"list: SelectKeys([key])."
            )
        keys = list(keys)
        if not keys:
            raise ValueError("SelectKeys: keys is empty; give at least one key to keep.")
        for key in keys:
            if not (
                isinstance(key, str)
                or (isinstance(key, tuple) and all(isinstance(k, str) for k in key))
            ):
                raise TypeError(
                    f"SelectKeys: each key must be a str or a tuple of str, got {key!r}."
                )
        self.keys = keys

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        """Returns ``batch`` with only the selected keys."""
        present = set(batch.keys(include_nested=True))
        missing = [key for key in self.keys if key not in present]
        if missing:
            raise KeyError(
                f"SelectKeys: the batch lacks {missing}; it holds {sorted(map(str, present))}."
            )
        return batch.select(*self.keys)

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers at ``"batch_process"`` (stateless: ``name`` is not used)."""
        trainer.register_op("batch_process", self)
