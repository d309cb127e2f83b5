"""JumanjiWrapper and JumanjiEnv: Jumanji's JAX environments, batched with vmap and jit."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, OBSERVATION, RESET, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Bounded, Categorical, Composite, MultiCategorical, TensorSpec, Unbounded
from rl_envs.libs._dm_env_specs import torch_dtype
from rl_envs.libs._jax import KeyChain, import_jax, to_jax, to_torch, where_rows

_LAST = 2  # dm_env / Jumanji StepType.LAST


def _spec(spec: Any, batch: tuple[int, ...], who: str) -> TensorSpec:
    """One Jumanji spec (nested ``Spec``, ``DiscreteArray``, ``MultiDiscreteArray``,
    ``BoundedArray``, ``Array``) as an rl-core spec with ``batch`` dims."""
    from jumanji import specs

    if isinstance(spec, specs.Array):
        shape = (*batch, *spec.shape)
        dtype = torch_dtype(spec.dtype)
        if isinstance(spec, specs.MultiDiscreteArray):
            nvec = [int(v) for v in np.asarray(spec.num_values).reshape(-1)]
            return MultiCategorical(nvec, shape=shape, dtype=dtype)
        if isinstance(spec, specs.DiscreteArray):
            return Categorical(int(spec.num_values), shape=shape, dtype=dtype)
        if isinstance(spec, specs.BoundedArray) and dtype != torch.bool:
            low = torch.as_tensor(np.array(np.broadcast_to(spec.minimum, spec.shape)), dtype=dtype)
            high = torch.as_tensor(np.array(np.broadcast_to(spec.maximum, spec.shape)), dtype=dtype)
            return Bounded(low.expand(shape), high.expand(shape), shape=shape, dtype=dtype)
        if dtype == torch.bool:
            return Categorical(2, shape=shape, dtype=torch.bool)
        return Unbounded(shape=shape, dtype=dtype)
    children = getattr(spec, "_specs", None)
    if children is None:
        raise TypeError(f"{who}: no spec counterpart for the Jumanji spec {spec!r}.")
    return Composite({k: _spec(v, batch, who) for k, v in children.items()}, shape=batch)


def _leaves(value: Any) -> dict[str, Any]:
    """The fields of a Jumanji observation (a NamedTuple or a dataclass) by name."""
    if hasattr(value, "_asdict"):
        return dict(value._asdict())
    return dict(vars(value))


class JumanjiWrapper(EnvBase):
    """Wraps a Jumanji env (``jumanji.Environment``), batched over ``batch_size`` with vmap.

    ``reset`` and ``step`` are jit-compiled once (the first calls compile: seconds on a CPU).
    The env state stays a JAX pytree inside the wrapper; outputs cross to torch through
    DLPack (no copy on the CPU; bool arrays are copied), actions go to JAX the same way.
    Specs come from the env's Jumanji specs: the observation's fields under
    ``("observation", field)`` (``action_mask`` among them where the env has one), the action
    under ``"action"`` (``Categorical`` / ``MultiCategorical`` indices), the reward
    ``(*batch, 1)``. At the last step of an episode ``terminated`` is set when the discount is
    0, ``truncated`` otherwise (a time limit). A ``"_reset"`` mask resets only the marked
    sub-envs.

    Seeding: ``set_seed(seed)`` restarts the PRNG key that resets draw from.

    Args:
        env: the Jumanji env.

    Keyword Args:
        batch_size: the batch shape (``()`` for one env). Defaults to ``()``.
        device: where the output tensors live. Defaults to ``None``.
        seed: seed of the PRNG key. Defaults to ``None`` (an unseeded key).

    Raises:
        ImportError: jumanji (or JAX) is not installed.
        TypeError: ``env`` is not a Jumanji env.

    Examples:
        >>> import jumanji
        >>> from rl_envs.libs import JumanjiWrapper
        >>> env = JumanjiWrapper(jumanji.make("Snake-v1"), batch_size=[2], seed=0)
        >>> env.observation_spec["observation", "grid"].shape
        torch.Size([2, 12, 12, 5])
    """

    def __init__(
        self,
        env: Any,
        *,
        batch_size: torch.Size | tuple[int, ...] | list[int] = (),
        device: torch.device | str | int | None = None,
        seed: int | None = None,
    ) -> None:
        who = type(self).__name__
        jax = import_jax(who, "jumanji")
        try:
            import jumanji
        except ImportError as err:
            raise ImportError(f'{who} needs jumanji: pip install "rl-envs[jumanji]"') from err
        if not isinstance(env, jumanji.Environment):
            raise TypeError(
                f"{who}: expected a jumanji.Environment, got {type(env).__name__}. Build one "
                f"with jumanji.make(name) or use JumanjiEnv(name)."
            )
        super().__init__(batch_size=batch_size, device=device)
        self._jax = jax
        self._env = env
        self._keys = KeyChain(jax, seed)
        self._state: Any = None
        reset, step = env.reset, env.step
        if self.batch_size:
            reset, step = jax.vmap(reset), jax.vmap(step)
        self._reset_fn = jax.jit(reset)
        self._step_fn = jax.jit(step)
        batch = tuple(self.batch_size)
        observation = _spec(env.observation_spec, batch, who)
        if not isinstance(observation, Composite):
            observation = Composite({OBSERVATION: observation}, shape=batch)
            self._fields = None
        else:
            self._fields = list(observation.keys())
            observation = Composite({OBSERVATION: observation}, shape=batch)
        self.observation_spec = observation
        self.action_spec = _spec(env.action_spec, batch, who)
        self.reward_spec = Unbounded(shape=(*batch, 1))

    @property
    def env(self) -> Any:
        """The wrapped Jumanji env."""
        return self._env

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._keys.seed(seed)

    def _observation(self, observation: Any) -> Any:
        if self._fields is None:
            return to_torch(observation)
        fields = _leaves(observation)
        return TensorDict(
            {k: to_torch(fields[k]) for k in self._fields}, batch_size=self.batch_size
        )

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        keys = self._keys.split(self.batch_size.numel())
        keys = keys.reshape(*self.batch_size, 2) if self.batch_size else keys[0]
        fresh = self._reset_fn(keys)
        mask = None if tensordict is None else tensordict.get(RESET, None)
        if mask is None or self._state is None:
            self._state = fresh
        else:
            rows = to_jax(mask.reshape(self.batch_size).to(torch.bool))
            self._state = where_rows(self._jax, rows, fresh, self._state)
        _, timestep = self._state
        return TensorDict(
            {OBSERVATION: self._observation(timestep.observation)},
            batch_size=self.batch_size,
            device=self.device,
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        state, _ = self._state
        action = to_jax(tensordict.get(ACTION))
        self._state = state, timestep = self._step_fn(state, action)
        flags = (*self.batch_size, 1)
        last = to_torch(timestep.step_type).reshape(flags) == _LAST
        ended = to_torch(timestep.discount).reshape(flags) == 0
        out = {
            OBSERVATION: self._observation(timestep.observation),
            REWARD: to_torch(timestep.reward).reshape(flags).to(torch.float32),
            TERMINATED: last & ended,
            TRUNCATED: last & ~ended,
        }
        return TensorDict(out, batch_size=self.batch_size, device=self.device)


class JumanjiEnv(JumanjiWrapper):
    """Builds a Jumanji env by name (``jumanji.make``) and wraps it.

    See :class:`JumanjiWrapper` for keys, batching, DLPack and seeding.

    Args:
        env_name: the registered name (``"Snake-v1"``, ``"Game2048-v1"``, ``"TSP-v1"``, ...).

    Keyword Args:
        batch_size, device, seed: as in :class:`JumanjiWrapper`.
        **kwargs: passed to ``jumanji.make``.

    Raises:
        ImportError: jumanji is not installed.
        ValueError: an unknown env.

    Examples:
        >>> from rl_envs.libs import JumanjiEnv
        >>> env = JumanjiEnv("Game2048-v1", seed=0)
        >>> env.action_spec
        Categorical(shape=(), dtype=int32, n=4)
    """

    def __init__(
        self,
        env_name: str,
        *,
        batch_size: torch.Size | tuple[int, ...] | list[int] = (),
        device: torch.device | str | int | None = None,
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        who = type(self).__name__
        import_jax(who, "jumanji")
        import jumanji

        names = jumanji.registered_environments()
        if env_name not in names:
            raise ValueError(
                f"{who}: unknown Jumanji env {env_name!r}; registered: {sorted(names)}."
            )
        super().__init__(
            jumanji.make(env_name, **kwargs), batch_size=batch_size, device=device, seed=seed
        )
        self.env_name = env_name


__all__ = ["JumanjiEnv", "JumanjiWrapper"]
