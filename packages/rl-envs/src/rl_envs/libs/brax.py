"""BraxWrapper and BraxEnv: Brax's JAX physics envs, batched with vmap and jit."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, OBSERVATION, RESET, REWARD, TERMINATED, TRUNCATED
from rl_core.specs import Bounded, Composite, Unbounded
from rl_envs.libs._jax import KeyChain, import_jax, to_jax, to_torch, where_rows


class BraxWrapper(EnvBase):
    """Wraps a Brax env (``brax.envs.Env``), batched over ``batch_size`` with ``jax.vmap``.

    ``reset`` and ``step`` are jit-compiled once (the first call of each compiles: seconds on
    a CPU). The env state stays a JAX pytree inside the wrapper; observations, rewards and
    flags cross to torch through DLPack (no copy on the CPU), and actions go to JAX the same
    way. Keys: ``"observation"`` float32 ``(*batch, observation_size)``, ``"action"`` in
    ``[-1, 1]`` ``(*batch, action_size)``, ``"reward"`` ``(*batch, 1)``; ``terminated`` is
    Brax's ``done``, ``truncated`` its ``info["truncation"]`` when the env has one (an
    episode wrapper), else never. A ``"_reset"`` mask resets only the marked sub-envs.

    Seeding: ``set_seed(seed)`` restarts the PRNG key that resets draw from (one key per
    sub-env split from it).

    Args:
        env: the Brax env.

    Keyword Args:
        batch_size: the batch shape (``()`` for one env). Defaults to ``()``.
        device: where the output tensors live (the data stays where JAX put it: the CPU
            backend here). Defaults to ``None``.
        seed: seed of the PRNG key. Defaults to ``None`` (an unseeded key).

    Raises:
        ImportError: brax (or JAX) is not installed.
        TypeError: ``env`` is not a Brax env.

    Examples:
        >>> from rl_envs.libs import BraxEnv, BraxWrapper
        >>> fast = BraxEnv("fast").env  # brax.envs.get_environment("fast")
        >>> env = BraxWrapper(fast, batch_size=[4], seed=0)
        >>> env.observation_spec["observation"].shape  # reset/step compile at first use
        torch.Size([4, 2])
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
        jax = import_jax(who, "brax")
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # brax prints its optional imports
                from brax.envs.base import Env
        except ImportError as err:
            raise ImportError(f'{who} needs brax: pip install "rl-envs[brax]"') from err
        if not isinstance(env, Env):
            raise TypeError(
                f"{who}: expected a brax.envs.Env, got {type(env).__name__}. Build one with "
                f"brax.envs.get_environment(name) or use BraxEnv(name)."
            )
        super().__init__(batch_size=batch_size, device=device)
        self._jax = jax
        self._env = env
        self._keys = KeyChain(jax, seed)
        self._state: Any = None
        n = self.batch_size.numel()
        reset, step = env.reset, env.step
        if self.batch_size:
            reset, step = jax.vmap(reset), jax.vmap(step)
        self._reset_fn = jax.jit(reset)
        self._step_fn = jax.jit(step)
        self._n = n
        batch = tuple(self.batch_size)
        self.observation_spec = Composite(
            {OBSERVATION: Unbounded(shape=(*batch, env.observation_size))}, shape=batch
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(*batch, env.action_size))
        self.reward_spec = Unbounded(shape=(*batch, 1))

    @property
    def env(self) -> Any:
        """The wrapped Brax env."""
        return self._env

    def _set_seed(self, seed: int | None) -> None:
        if seed is not None:
            self._keys.seed(seed)

    def _new_state(self) -> Any:
        keys = self._keys.split(self._n)
        if self.batch_size:
            keys = keys.reshape(*self.batch_size, *keys.shape[1:])
            return self._reset_fn(keys)
        return self._reset_fn(keys[0])

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        mask = None if tensordict is None else tensordict.get(RESET, None)
        fresh = self._new_state()
        if mask is None or self._state is None:
            self._state = fresh
        else:
            rows = to_jax(mask.reshape(self.batch_size).to(torch.bool))
            self._state = where_rows(self._jax, rows, fresh, self._state)
        return TensorDict(
            {OBSERVATION: to_torch(self._state.obs)}, batch_size=self.batch_size, device=self.device
        )

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = to_jax(tensordict.get(ACTION).to(torch.float32))
        self._state = state = self._step_fn(self._state, action)
        flags = (*self.batch_size, 1)
        truncation = state.info.get("truncation") if hasattr(state, "info") else None
        terminated = to_torch(state.done).reshape(flags) != 0
        if truncation is not None:
            truncated = to_torch(truncation).reshape(flags) != 0
            terminated = terminated & ~truncated
        else:
            truncated = torch.zeros(flags, dtype=torch.bool)
        out = {
            OBSERVATION: to_torch(state.obs),
            REWARD: to_torch(state.reward).reshape(flags),
            TERMINATED: terminated,
            TRUNCATED: truncated,
        }
        return TensorDict(out, batch_size=self.batch_size, device=self.device)


class BraxEnv(BraxWrapper):
    """Builds a Brax env by name (``brax.envs.get_environment``) and wraps it.

    See :class:`BraxWrapper` for keys, batching, DLPack and seeding.

    Args:
        env_name: the Brax env (``"fast"``, ``"inverted_pendulum"``, ``"ant"``, ...).

    Keyword Args:
        batch_size, device, seed: as in :class:`BraxWrapper`.
        **kwargs: passed to ``get_environment`` (``backend="generalized"``, ...).

    Raises:
        ImportError: brax is not installed.
        ValueError: an unknown env.

    Examples:
        >>> from rl_envs.libs import BraxEnv
        >>> env = BraxEnv("fast", batch_size=[2], seed=0)
        >>> env.action_spec.shape
        torch.Size([2, 1])
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
        import_jax(who, "brax")
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # brax prints its optional imports
                from brax import envs
        except ImportError as err:
            raise ImportError(f'{who} needs brax: pip install "rl-envs[brax]"') from err
        try:
            env = envs.get_environment(env_name, **kwargs)
        except KeyError as err:
            raise ValueError(
                f"{who}: unknown Brax env {env_name!r}; Brax has e.g. 'fast', "
                f"'inverted_pendulum', 'halfcheetah', 'ant'."
            ) from err
        super().__init__(
            env,
            batch_size=batch_size,
            device=device,
            seed=seed,
        )
        self.env_name = env_name


__all__ = ["BraxEnv", "BraxWrapper"]
