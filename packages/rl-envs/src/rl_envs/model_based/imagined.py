"""ImaginedEnv: imagination over Gaussian state beliefs (mean and covariance), as model-based
policy search (PILCO) propagates them."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core.envs import EnvBase
from rl_core.keys import DONE, NEXT, OBSERVATION, REWARD, TERMINATED, TRUNCATED, NestedKey
from rl_core.specs import Composite, Unbounded
from rl_envs.model_based.common import ModelBasedEnvBase

__all__ = ["ImaginedEnv"]

_MEAN = (OBSERVATION, "mean")
_VAR = (OBSERVATION, "var")


class ImaginedEnv(ModelBasedEnvBase):
    """An env whose state is a Gaussian belief over the real env's observation.

    The observation is ``("observation", "mean")`` (``[*B, D]``) and
    ``("observation", "var")`` (``[*B, D, D]``), ``D`` the real observation's size. Each step
    runs ``world_model_module`` on the belief and the action; it writes the next belief's
    ``"mean"`` and ``"var"`` under ``next_observation_key``. The reward is 0 and episodes never
    end: a cost is computed from the beliefs outside the env (PILCO's expected cost), and
    ``rollout(max_steps)`` sets the horizon. ``reset(tensordict)`` starts from the belief in
    ``tensordict``, or from a point belief (variance 0) at its ``"observation"``, else at a
    random observation of the real env's spec.

    Args:
        world_model_module: a TensorDict module reading ``"action"`` and ``"observation"``
            (the belief) and writing ``(*next_observation_key, "mean")`` and
            ``(*next_observation_key, "var")``.
        base_env: the real env; its action spec and observation size are used (it is never
            stepped).
        batch_size: the env's batch size. Defaults to ``base_env.batch_size``, or ``(1,)``
            for an unbatched env.
        next_observation_key: where the model writes the next belief. Defaults to
            ``("next", "observation")``.

    Raises:
        ValueError: the real env has no flat ``"observation"``; (at a step) the model did not
            write the next belief.

    Examples:
        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_envs import GymEnv
        >>> from rl_envs.model_based import ImaginedEnv
        >>> class Drift(torch.nn.Module):  # mean + 0.1 * action, variance grows by 0.01 I
        ...     def forward(self, action, mean, var):
        ...         return mean + 0.1 * action.sum(-1, keepdim=True), var + 0.01 * torch.eye(3)
        >>> model = TensorDictModule(
        ...     Drift(), ["action", ("observation", "mean"), ("observation", "var")],
        ...     [("next", "observation", "mean"), ("next", "observation", "var")])
        >>> env = ImaginedEnv(model, GymEnv("Pendulum-v1"))
        >>> traj = env.rollout(4)
        >>> traj["next", "observation", "var"].shape, traj["next", "observation", "var"][0, -1, 0, 0].item()
        (torch.Size([1, 4, 3, 3]), 0.03999999910593033)
    """

    def __init__(
        self,
        world_model_module: nn.Module,
        base_env: EnvBase,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        next_observation_key: NestedKey = (NEXT, OBSERVATION),
    ) -> None:
        if batch_size is None:
            batch_size = base_env.batch_size if len(base_env.batch_size) else torch.Size([1])
        super().__init__(world_model_module, device=base_env.device, batch_size=batch_size)
        observation = base_env.observation_spec.get(OBSERVATION, None)
        if observation is None or len(observation.shape) != len(base_env.batch_size) + 1:
            raise ValueError(
                f"ImaginedEnv: expected the real env to observe a flat vector at "
                f"'observation' ([*batch, D]), got the observation spec keys "
                f"{sorted(map(str, base_env.observation_spec.keys()))}."
            )
        self.next_observation_key = (
            (next_observation_key,)
            if isinstance(next_observation_key, str)
            else tuple(next_observation_key)
        )
        batch = tuple(self.batch_size)
        size, dtype = observation.shape[-1], observation.dtype
        self.__dict__["_base_observation_spec"] = observation
        self.observation_spec = Composite(
            {
                OBSERVATION: Composite(
                    mean=Unbounded(shape=(*batch, size), dtype=dtype, device=self.device),
                    var=Unbounded(shape=(*batch, size, size), dtype=dtype, device=self.device),
                    shape=batch,
                    device=self.device,
                )
            },
            shape=batch,
            device=self.device,
        )
        action = base_env.action_spec
        self.action_spec = action.expand(*batch, *action.shape[len(base_env.batch_size) :]).clone()
        self.reward_spec = Unbounded(shape=(*batch, 1), device=self.device)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self.world_model(tensordict.exclude(*self.done_keys))
        out = tensordict if out is None else out
        mean = out.get((*self.next_observation_key, "mean"), None)
        var = out.get((*self.next_observation_key, "var"), None)
        if mean is None or var is None:
            raise ValueError(
                f"ImaginedEnv.step: expected the world model to write the next belief at "
                f"{(*self.next_observation_key, 'mean')} and "
                f"{(*self.next_observation_key, 'var')}, got keys "
                f"{sorted(map(str, out.keys(include_nested=True, leaves_only=True)))}."
            )
        flags = torch.zeros((*out.batch_size, 1), dtype=torch.bool, device=mean.device)
        return TensorDict(
            {
                _MEAN: mean,
                _VAR: var,
                REWARD: torch.zeros((*out.batch_size, 1), dtype=mean.dtype, device=mean.device),
                DONE: flags,
                TERMINATED: flags.clone(),
                TRUNCATED: flags.clone(),
            },
            batch_size=out.batch_size,
            device=self.device,
        )

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        if tensordict is not None:
            mean, var = tensordict.get(_MEAN, None), tensordict.get(_VAR, None)
            if mean is not None and var is not None:
                return TensorDict({_MEAN: mean, _VAR: var}, batch_size=self.batch_size)
            point = tensordict.get(OBSERVATION, None)
            if isinstance(point, torch.Tensor):
                mean = point.expand(*self.batch_size, point.shape[-1])
        if tensordict is None or mean is None:
            mean = self._base_observation_spec.rand().reshape(-1)[: self._size()]
            mean = mean.expand(*self.batch_size, -1)
        var = torch.zeros((*mean.shape, mean.shape[-1]), dtype=mean.dtype, device=mean.device)
        return TensorDict({_MEAN: mean.clone(), _VAR: var}, batch_size=self.batch_size)

    def _size(self) -> int:
        return int(self._base_observation_spec.shape[-1])
