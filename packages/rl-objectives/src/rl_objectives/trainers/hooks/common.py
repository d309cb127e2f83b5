"""The base of the trainer hooks: :class:`TrainerHookBase`."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any


class TrainerHookBase(abc.ABC):
    """A piece of training logic that attaches itself to a :class:`~rl_objectives.trainers.Trainer`.

    A hook writes :meth:`register`, which calls ``trainer.register_op(point, fn)`` for each
    hook point it uses and, if it has state, ``trainer.register_module(name, self)`` so that
    its :meth:`state_dict` is saved and restored with the trainer's.
    """

    @abc.abstractmethod
    def register(self, trainer: Any, name: str | None = None) -> None:
        """Attaches the hook to ``trainer`` (a :class:`~rl_objectives.trainers.Trainer`: the
        trainer imports the hooks, so they name it by duck type); ``name`` keys its state in
        the trainer's."""

    def state_dict(self) -> dict[str, Any]:
        """The hook's state; empty for a stateless hook."""
        return {}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restores a :meth:`state_dict`: sets each of its entries as an attribute.

        Raises:
            KeyError: ``state_dict`` lacks an entry of this hook's state.
        """
        keys = list(self.state_dict())
        for key in keys:
            if key not in state_dict:
                raise KeyError(
                    f"{type(self).__name__}.load_state_dict: the state lacks {key!r}; it holds "
                    f"{sorted(state_dict)}."
                )
        for key in keys:
            setattr(self, key, state_dict[key])
