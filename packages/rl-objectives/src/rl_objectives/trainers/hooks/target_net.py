"""Updates target networks after each optimisation step: :class:`TargetNetUpdaterHook`."""

from __future__ import annotations

from typing import Any

from rl_objectives import TargetNetUpdater
from rl_objectives.trainers.hooks.common import TrainerHookBase


class TargetNetUpdaterHook(TrainerHookBase):
    """Calls ``updater.step()`` after every optimisation step (``post_optim``).

    The target parameters live in the loss module, so the trainer saves them with it; this
    hook saves the updater's step counter (:class:`~rl_objectives.HardUpdate` copies on
    every ``N``-th step) so a resumed run copies at the same steps.

    Args:
        target_params_updater: a :class:`~rl_objectives.SoftUpdate` or
            :class:`~rl_objectives.HardUpdate` of the trained loss.

    Raises:
        TypeError: the updater is not a ``TargetNetUpdater``.
    """

    def __init__(self, target_params_updater: TargetNetUpdater) -> None:
        if not isinstance(target_params_updater, TargetNetUpdater):
            raise TypeError(
                f"TargetNetUpdaterHook: expected an rl_objectives.TargetNetUpdater "
                f"(SoftUpdate, HardUpdate), got {type(target_params_updater).__name__}."
            )
        self.target_params_updater = target_params_updater

    def __call__(self) -> None:
        """Updates the targets once."""
        self.target_params_updater.step()

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the update at ``post_optim`` and the updater's counter under ``name``."""
        trainer.register_op("post_optim", self)
        trainer.register_module(name or "target_net_updater", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"counter": steps}`` for an updater that counts steps, else ``{}``."""
        if hasattr(self.target_params_updater, "counter"):
            return {"counter": self.target_params_updater.counter}
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the updater's counter, if it has one."""
        if hasattr(self.target_params_updater, "counter"):
            if "counter" not in state_dict:
                raise KeyError(
                    f"TargetNetUpdaterHook.load_state_dict: the state lacks 'counter'; it "
                    f"holds {sorted(state_dict)}."
                )
            self.target_params_updater.counter = int(state_dict["counter"])
