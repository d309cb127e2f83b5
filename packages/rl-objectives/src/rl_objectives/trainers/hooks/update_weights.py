"""Pushes the trained weights to the collector's policy: :class:`UpdateWeights`."""

from __future__ import annotations

from typing import Any

from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.hooks.common import TrainerHookBase


class UpdateWeights(TrainerHookBase):
    """Calls ``collector.update_policy_weights_()`` every ``update_weights_interval`` batches.

    Registered at ``post_steps``. Collectors whose workers hold their own copy of the policy
    (other processes, other devices) need it to act with the trained weights. The collector
    is duck-typed: anything with ``update_policy_weights_()``.

    Args:
        collector: the collector.
        update_weights_interval: batches between two updates. Defaults to 1.

    Raises:
        TypeError: the collector has no ``update_policy_weights_`` method.
        ValueError: the interval is not a positive int.

    Examples:
        >>> from rl_objectives.trainers import UpdateWeights
        >>> class Collector:
        ...     updates = 0
        ...     def update_policy_weights_(self):
        ...         self.updates += 1
        >>> collector = Collector()
        >>> hook = UpdateWeights(collector, update_weights_interval=2)
        >>> for _ in range(5):
        ...     hook()
        >>> print(collector.updates)
        2
    """

    def __init__(self, collector: Any, update_weights_interval: int = 1) -> None:
        if not callable(getattr(collector, "update_policy_weights_", None)):
            raise TypeError(
                f"UpdateWeights: the collector must have an update_policy_weights_() method, "
                f"got {type(collector).__name__}."
            )
        self.collector = collector
        self.update_weights_interval = check_positive_int(
            "UpdateWeights", "update_weights_interval", update_weights_interval
        )
        self.counter = 0

    def __call__(self) -> None:
        """Counts one batch; updates the weights on every ``interval``-th."""
        self.counter += 1
        if self.counter % self.update_weights_interval == 0:
            self.collector.update_policy_weights_()

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the update at ``post_steps`` and the counter under ``name``."""
        trainer.register_op("post_steps", self)
        trainer.register_module(name or "update_weights", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"counter": batches seen}``."""
        return {"counter": self.counter}
