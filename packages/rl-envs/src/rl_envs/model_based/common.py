"""ModelBasedEnvBase: an ``EnvBase`` whose step runs a world model on the TensorDict."""

from __future__ import annotations

import abc
import copy
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core.envs import EnvBase
from rl_core.keys import TERMINATED


class ModelBasedEnvBase(EnvBase):
    """An env whose transitions come from a model (learned or given) instead of a simulator.

    ``step`` hands a shallow copy of the input TensorDict to ``world_model``, which writes the
    next observations, the reward and, optionally, done flags; the entries the specs name are
    kept as the ``"next"`` TensorDict. A model that writes no done flag never ends an episode
    (``terminated`` is set to False). The step is not tied to the env's ``batch_size``: it
    runs on whatever batch the input TensorDict has, so a planner can step thousands of
    candidate states in one call; ``reset`` returns ``batch_size`` states.

    The env lives on the model's device: ``world_model`` is moved to ``device`` when the env
    is built. Transforms (``TransformedEnv``) and ``rollout`` work as with any env.

    A subclass sets the specs (``set_specs_from_env`` copies them from a real env) and
    implements ``_reset``, which returns the first observations (sampled from data, a prior,
    or the true env's reset distribution).

    Args:
        world_model: a module reading the root TensorDict (observations, action) and writing
            the next observations and ``"reward"`` (and optionally ``"done"``/``"terminated"``/
            ``"truncated"``) into it, e.g. a ``tensordict.nn.TensorDictModule``.
        params: optional parameters for ``world_model`` as a TensorDict (e.g.
            ``TensorDict.from_module(world_model)`` of another copy); when given, each step
            runs the model with them swapped in (``params.to_module(world_model)``), so one
            model can be evaluated with several parameter sets.
        buffers: optional buffers, a TensorDict swapped in the same way.
        device: where the model and the env's tensors live. Defaults to ``"cpu"``.
        batch_size: the batch shape of ``reset``'s output.

    Raises:
        TypeError: ``world_model`` is not an ``nn.Module``, or ``params``/``buffers`` are not
            TensorDicts.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.envs import check_env_specs
        >>> from rl_core.specs import Bounded, Composite, Unbounded
        >>> from rl_envs.model_based import ModelBasedEnvBase
        >>> class Drift(torch.nn.Module):  # next = obs + action, reward = -|next|^2
        ...     def forward(self, obs, action):
        ...         nxt = obs + action
        ...         return nxt, -nxt.square().sum(-1, keepdim=True)
        >>> class DriftEnv(ModelBasedEnvBase):
        ...     def __init__(self, batch_size=()):
        ...         model = TensorDictModule(
        ...             Drift(), in_keys=["observation", "action"],
        ...             out_keys=["observation", "reward"])
        ...         super().__init__(model, batch_size=batch_size)
        ...         self.observation_spec = Composite(
        ...             observation=Unbounded(shape=(*self.batch_size, 2)), shape=self.batch_size)
        ...         self.action_spec = Bounded(-1.0, 1.0, shape=(*self.batch_size, 2))
        ...         self.reward_spec = Unbounded(shape=(*self.batch_size, 1))
        ...     def _reset(self, tensordict, **kwargs):
        ...         return TensorDict(observation=torch.ones(*self.batch_size, 2),
        ...                           batch_size=self.batch_size)
        >>> env = DriftEnv(batch_size=(3,))
        >>> check_env_specs(env)
        >>> traj = env.rollout(4)
        >>> traj.batch_size
        torch.Size([3, 4])
        >>> td = TensorDict(observation=torch.zeros(100, 2), action=torch.ones(100, 2),
        ...                 batch_size=[100])
        >>> env.step(td)["next", "reward"].shape  # any batch: 100 candidates at once
        torch.Size([100, 1])
    """

    def __init__(
        self,
        world_model: nn.Module,
        params: TensorDictBase | None = None,
        buffers: TensorDictBase | None = None,
        *,
        device: torch.device | str | int | None = "cpu",
        batch_size: torch.Size | tuple[int, ...] | list[int] | None = None,
    ) -> None:
        if not isinstance(world_model, nn.Module):
            raise TypeError(
                f"{type(self).__name__}: expected world_model as a torch.nn.Module (e.g. a "
                f"tensordict.nn.TensorDictModule), got {type(world_model).__name__}."
            )
        for name, value in (("params", params), ("buffers", buffers)):
            if value is not None and not isinstance(value, TensorDictBase):
                raise TypeError(
                    f"{type(self).__name__}: expected {name} as a TensorDict (e.g. "
                    f"TensorDict.from_module(model)) or None, got {type(value).__name__}."
                )
        super().__init__(device=device, batch_size=batch_size)
        self.world_model = world_model.to(self.device) if self.device is not None else world_model
        self.world_model_params = params
        self.world_model_buffers = buffers

    def set_specs_from_env(self, env: EnvBase) -> None:
        """Copies the observation, reward, done, action and state specs of ``env`` (moved to
        this env's device); ``env`` must have this env's ``batch_size``.

        Raises:
            ValueError: the batch sizes differ.
        """
        if env.batch_size != self.batch_size:
            raise ValueError(
                f"{type(self).__name__}.set_specs_from_env: expected an env of batch size "
                f"{tuple(self.batch_size)}, got {tuple(env.batch_size)}. Build this env with "
                f"batch_size={tuple(env.batch_size)}."
            )

        def copied(spec: Any) -> Any:
            spec = copy.deepcopy(spec)
            return spec.to(self.device) if self.device is not None else spec

        self.full_observation_spec = copied(env.full_observation_spec)
        self.full_reward_spec = copied(env.full_reward_spec)
        self.full_done_spec = copied(env.full_done_spec)
        self.full_action_spec = copied(env.full_action_spec)
        self.full_state_spec = copied(env.full_state_spec)

    def _run_with(self, states: list[tuple[str, TensorDictBase]], td: TensorDictBase) -> Any:
        """Runs the world model on ``td`` with each ``(name, state)`` swapped in."""
        if not states:
            return self.world_model(td)
        name, state = states[0]
        try:
            swapped = state.to_module(self.world_model)  # swaps now, restores on exit
        except (KeyError, AttributeError) as err:
            raise KeyError(
                f"{type(self).__name__}.step: the {name} do not match the world model's "
                f"parameter names (missing {err}); build them with "
                f"TensorDict.from_module(world_model) on a model of the same structure."
            ) from err
        with swapped:
            return self._run_with(states[1:], td)

    def _next_keys(self) -> list[Any]:
        return self._cached(
            "model_next_keys",
            lambda: [*self.observation_keys, *self.reward_keys, *self.done_keys],
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        # a shallow copy without the current done flags: the model's writes do not reach the
        # input, and only the flags the model writes describe the next state
        out = tensordict.exclude(*self.done_keys)
        states = [
            (name, state)
            for name, state in (
                ("params", self.world_model_params),
                ("buffers", self.world_model_buffers),
            )
            if state is not None
        ]
        result = self._run_with(states, out)
        if result is not None:
            out = result
        next_td = out.select(*self._next_keys(), strict=False)
        missing = [k for k in (*self.observation_keys, *self.reward_keys) if k not in next_td]
        if missing:
            raise KeyError(
                f"{type(self).__name__}.step: expected the world model to write {missing} "
                f"(the observation and reward specs' keys), got keys "
                f"{sorted(map(str, out.keys(include_nested=True)))}."
            )
        if not any(k in next_td for k in self.done_keys):
            done_shape = self.full_done_spec[TERMINATED].shape[len(self.batch_size) :]
            next_td.set(
                TERMINATED,
                torch.zeros(
                    (*next_td.batch_size, *done_shape), dtype=torch.bool, device=next_td.device
                ),
            )
        return next_td

    @abc.abstractmethod
    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """Returns the first observations, a TensorDict of batch size ``self.batch_size``."""

    def _set_seed(self, seed: int | None) -> None:
        """Seeds torch's global generator (the model's sampling uses it)."""
        if seed is not None:
            torch.manual_seed(seed)


__all__ = ["ModelBasedEnvBase"]
