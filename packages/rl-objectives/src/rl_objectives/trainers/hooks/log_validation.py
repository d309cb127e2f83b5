"""Evaluates the policy in an env every few batches: :class:`LogValidationReward`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.keys import NEXT, REWARD, NestedKey
from rl_objectives.trainers._utils import check_positive_int
from rl_objectives.trainers.hooks.common import TrainerHookBase


class LogValidationReward(TrainerHookBase):
    """Runs ``environment.rollout`` with the policy every ``record_interval`` batches.

    Registered at ``post_steps_log``: on the 1st, ``(1 + record_interval)``-th, ... call it
    rolls out ``record_frames`` steps (without stopping at episode ends) under
    ``set_exploration_type(exploration_type)`` and ``torch.no_grad()``, with the policy in
    eval mode (its mode is restored after), and logs the mean of each ``log_keys`` entry over
    the rollout. Deterministic exploration by default: the evaluation measures the policy,
    not its exploration noise.

    Keyword Args:
        record_interval: batches between two evaluations.
        record_frames: steps of each evaluation rollout.
        policy_exploration: the policy (a callable on TensorDicts, e.g. the actor).
        environment: an env with ``rollout(max_steps, policy, ...)`` (an rl-core ``EnvBase``).
        exploration_type: the exploration type of the rollout. Defaults to
            ``ExplorationType.DETERMINISTIC``.
        log_keys: entries to average. Defaults to ``[("next", "reward")]``.
        out_keys: logged name of each log key. Defaults to ``{("next", "reward"):
            "r_evaluation"}``, and the key joined with ``"_"`` for others.
        log_pbar: show the values on the progress bar. Defaults to ``False``.

    Raises:
        ValueError: a count that is not a positive int.
        TypeError: a policy that is not callable, or an env without ``rollout``.
    """

    def __init__(
        self,
        *,
        record_interval: int,
        record_frames: int,
        policy_exploration: Callable[[TensorDictBase], TensorDictBase],
        environment: Any,
        exploration_type: ExplorationType = ExplorationType.DETERMINISTIC,
        log_keys: Sequence[NestedKey] | None = None,
        out_keys: Mapping[NestedKey, str] | None = None,
        log_pbar: bool = False,
    ) -> None:
        owner = "LogValidationReward"
        self.record_interval = check_positive_int(owner, "record_interval", record_interval)
        self.record_frames = check_positive_int(owner, "record_frames", record_frames)
        if not callable(policy_exploration):
            raise TypeError(
                f"{owner}: policy_exploration must be callable, got "
                f"{type(policy_exploration).__name__}."
            )
        if not callable(getattr(environment, "rollout", None)):
            raise TypeError(
                f"{owner}: environment must have a rollout() method (an EnvBase), got "
                f"{type(environment).__name__}."
            )
        self.policy_exploration = policy_exploration
        self.environment = environment
        self.exploration_type = exploration_type
        self.log_keys = list(log_keys) if log_keys is not None else [(NEXT, REWARD)]
        names = {(NEXT, REWARD): "r_evaluation"}
        names.update(out_keys or {})
        self.out_keys = {
            key: names.get(key, "_".join((key,) if isinstance(key, str) else key))
            for key in self.log_keys
        }
        self.log_pbar = log_pbar
        self.count = 0

    @torch.no_grad()
    def __call__(self, batch: TensorDictBase | None = None) -> dict[str, Any] | None:
        """Evaluates on the due calls; returns the logged means, or ``None`` between them."""
        self.count += 1
        if (self.count - 1) % self.record_interval != 0:
            return None
        policy = self.policy_exploration
        was_training = policy.training if isinstance(policy, nn.Module) else None
        if isinstance(policy, nn.Module):
            policy.eval()
        try:
            with set_exploration_type(self.exploration_type):
                rollout = self.environment.rollout(
                    self.record_frames,
                    policy,
                    auto_cast_to_device=True,
                    break_when_any_done=False,
                )
        finally:
            if was_training is not None:
                policy.train(was_training)
        out: dict[str, Any] = {}
        for key in self.log_keys:
            values = rollout.get(key, None)
            if values is None:
                raise KeyError(
                    f"LogValidationReward: the rollout has no entry {key!r}. Check log_keys."
                )
            out[self.out_keys[key]] = values.detach().to(torch.float64).mean().item()
        out["log_pbar"] = self.log_pbar
        return out

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers the hook at ``post_steps_log`` and its call count under ``name``."""
        trainer.register_op("post_steps_log", self)
        trainer.register_module(name or "log_validation_reward", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"count": calls so far}``."""
        return {"count": self.count}
