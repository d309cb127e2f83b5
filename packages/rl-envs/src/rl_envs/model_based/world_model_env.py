"""WorldModelEnv: a ``WorldModel``'s latent dynamics stepped as an env."""

from __future__ import annotations

import copy
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core.envs import EnvBase
from rl_core.keys import NEXT, NestedKey
from rl_core.specs import Composite, Unbounded
from rl_envs.model_based.common import ModelBasedEnvBase

__all__ = ["WorldModelEnv"]


class _NextToRoot(nn.Module):
    """Runs a step module that writes under ``"next"`` and lifts those entries to the root,
    where :class:`ModelBasedEnvBase` reads a model's outputs."""

    def __init__(self, step_module: nn.Module) -> None:
        super().__init__()
        self.step_module = step_module

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        out = self.step_module(tensordict)
        following = out.get(NEXT, None)
        if following is not None:
            out = out.exclude(NEXT).update(following)
        return out


class WorldModelEnv(ModelBasedEnvBase):
    """An env stepping a world model (rl-objectives' ``WorldModel``) in its latent space.

    Each step runs ``world_model.step_module`` (dynamics, reward and done heads, decoder; not
    the encoder) on the current latent and action, and returns the ``("next", ...)`` entries
    it writes: the next latent, the reward and, when the model has a done head, the done
    flags (a model without one never ends an episode). The action, reward and done specs are
    those of ``base_env`` (never stepped); the observation is the latent at ``latent_key``,
    its shape found by encoding ``base_env``'s zero observation, unless ``observation_spec``
    is given. ``reset(tensordict)`` starts from the latent in ``tensordict`` (e.g.
    ``world_model.encode(real_observations)``), else from zeros.

    Args:
        world_model: a ``WorldModel`` (anything with ``encode`` and ``step_module``).
        base_env: the real env whose specs the imagined one shows.

    Keyword Args:
        observation_spec: the observation spec (a ``Composite``) instead of the latent's.
        batch_size: the env's batch size. Defaults to ``base_env.batch_size``, or ``(1,)``
            for an unbatched env.
        device: the env's device. Defaults to ``base_env.device``.
        latent_key: where the latent lives. Defaults to ``"latent"``.

    Raises:
        TypeError: ``world_model`` has no ``step_module``/``encode``.
        KeyError: the encoder did not write ``latent_key`` (when the spec is inferred).

    Examples:
        A stand-in for rl-objectives' ``WorldModel`` (an encoder and a step module):

        >>> import torch
        >>> from tensordict.nn import TensorDictModule, TensorDictSequential
        >>> from rl_envs import GymEnv
        >>> from rl_envs.model_based import WorldModelEnv
        >>> class Model(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.encode = TensorDictModule(torch.nn.Linear(3, 4), ["observation"], ["latent"])
        ...         self.step_module = TensorDictSequential(
        ...             TensorDictModule(lambda z, a: z + a, ["latent", "action"], [("next", "latent")]),
        ...             TensorDictModule(torch.nn.Linear(4, 1), [("next", "latent")], [("next", "reward")]))
        >>> model, real = Model(), GymEnv("Pendulum-v1")
        >>> env = WorldModelEnv(model, real, batch_size=[3])
        >>> start = model.encode(real.reset().expand(3).clone())
        >>> traj = env.rollout(5, tensordict=env.reset(start), auto_reset=False)
        >>> traj.batch_size, traj["next", "latent"].shape
        (torch.Size([3, 5]), torch.Size([3, 5, 4]))
    """

    def __init__(
        self,
        world_model: nn.Module,
        base_env: EnvBase,
        *,
        observation_spec: Composite | None = None,
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
        device: torch.device | str | None = None,
        latent_key: NestedKey = "latent",
    ) -> None:
        if not hasattr(world_model, "step_module") or not hasattr(world_model, "encode"):
            raise TypeError(
                f"WorldModelEnv: expected world_model as a WorldModel (with step_module and "
                f"encode), got {type(world_model).__name__}."
            )
        if batch_size is None:
            batch_size = base_env.batch_size if len(base_env.batch_size) else torch.Size([1])
        super().__init__(
            _NextToRoot(world_model.step_module),
            device=base_env.device if device is None else device,
            batch_size=batch_size,
        )
        self.__dict__["_world_model"] = world_model
        self.latent_key = latent_key
        batch = tuple(self.batch_size)

        def moved(spec: Any) -> Any:
            spec = copy.deepcopy(spec).expand(*batch, *spec.shape[len(base_env.batch_size) :])
            return spec.to(self.device) if self.device is not None else spec

        self.full_action_spec = moved(base_env.full_action_spec)
        self.full_reward_spec = moved(base_env.full_reward_spec)
        self.full_done_spec = moved(base_env.full_done_spec)
        if observation_spec is None:
            with torch.no_grad():
                encoded = world_model.encode(base_env.fake_tensordict().exclude(NEXT))
            latent = encoded.get(latent_key, None)
            if latent is None:
                raise KeyError(
                    f"WorldModelEnv: the world model's encoder did not write the latent at "
                    f"{latent_key!r} (it wrote {sorted(map(str, encoded.keys()))}); pass "
                    f"latent_key= or observation_spec=."
                )
            feature = latent.shape[len(base_env.batch_size) :]
            observation_spec = Composite(
                {latent_key: Unbounded(shape=(*batch, *feature), dtype=latent.dtype)},
                shape=batch,
            )
        self.observation_spec = (
            observation_spec.to(self.device) if self.device is not None else observation_spec
        )

    @property
    def world_model_module(self) -> nn.Module:
        """The ``WorldModel`` this env steps."""
        return self.__dict__["_world_model"]

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        keys = list(self.observation_keys)
        if tensordict is not None and all(k in tensordict.keys(True) for k in keys):
            return tensordict.select(*keys)
        return self.full_observation_spec.zero()
