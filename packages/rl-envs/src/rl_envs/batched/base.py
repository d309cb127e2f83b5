"""BatchedEnvBase: what SerialEnv and ParallelEnv share (specs, seeding, key layouts)."""

from __future__ import annotations

import abc

import torch

from rl_core.envs import EnvBase
from rl_core.keys import RESET
from rl_envs.batched._meta import EnvMetadata, Path, spec_leaf_paths, unique


class BatchedEnvBase(EnvBase):
    """``num_workers`` sub-envs of the same specs seen as one env of batch ``[n, *sub_batch]``.

    The specs are the sub-env specs expanded along a new leading dim; ``"_reset"`` masks
    address sub-envs along it. ``set_seed(seed)`` seeds the sub-envs one after the other,
    each with the seed the previous one returned: ``seed + i`` for sub-env ``i`` when the
    sub-envs are unbatched, and distinct seeds for batched sub-envs too; it returns the
    seed after the last one. Subclasses implement ``_reset``, ``_step`` and
    ``_seed_sub_envs``.

    Args:
        num_workers: the number of sub-envs.
        meta_data: the sub-env metadata (specs, batch size, device).
        device: the device of the batched env; defaults to the sub-env device.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_envs.batched import BatchedEnvBase, SerialEnv
        >>> env = SerialEnv(2, CountingEnv, create_env_kwargs={"batch_size": [3]})
        >>> isinstance(env, BatchedEnvBase), env.batch_size, env.meta_data.batch_size
        (True, torch.Size([2, 3]), torch.Size([3]))
        >>> env.set_seed(10)  # sub-env 0 gets 10, sub-env 1 gets 11
        12
    """

    def __init__(
        self,
        num_workers: int,
        meta_data: EnvMetadata,
        *,
        device: torch.device | str | int | None = None,
    ) -> None:
        device = torch.device(device) if device is not None else meta_data.device
        sub_batch = meta_data.batch_size
        super().__init__(batch_size=(num_workers, *sub_batch), device=device)
        self.__dict__["num_workers"] = num_workers
        self.__dict__["meta_data"] = meta_data
        self.__dict__["sub_device"] = meta_data.device
        out, inp = meta_data.output_spec, meta_data.input_spec

        def expand(group):
            return group.expand(num_workers, *sub_batch)

        self.observation_spec = expand(out["full_observation_spec"])
        self.reward_spec = expand(out["full_reward_spec"])
        self.done_spec = expand(out["full_done_spec"])
        self.action_spec = expand(inp["full_action_spec"])
        self.state_spec = expand(inp["full_state_spec"])

    # ------------------------------------------------------------------ seeding
    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seeds sub-env ``i`` with the seed sub-env ``i - 1`` returned (``seed`` for the first).

        Args:
            seed: the first seed, or ``None`` to leave the random states as they are.
            static_seed: every sub-env gets ``seed`` itself, and ``seed`` is returned.

        Returns:
            The seed the next env should use (``seed + num_workers`` for unbatched sub-envs).

        Raises:
            TypeError: ``seed`` is not an int.
        """
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise TypeError(f"{type(self).__name__}.set_seed: expected an int, got {seed!r}.")
        next_seed = self._seed_sub_envs(seed, static_seed)
        if seed is None or static_seed:
            return seed
        return next_seed

    def _set_seed(self, seed: int | None) -> None:
        self._seed_sub_envs(seed, False)

    @abc.abstractmethod
    def _seed_sub_envs(self, seed: int | None, static_seed: bool) -> int | None:
        """Seeds the sub-envs in order; returns the seed after the last one."""

    # ------------------------------------------------------------------ key layouts
    def _paths(self, name: str) -> list[Path]:
        return self._cached(name, lambda: self._compute_paths(name))

    def _compute_paths(self, name: str) -> list[Path]:
        out, inp = self.meta_data.output_spec, self.meta_data.input_spec
        obs = spec_leaf_paths(out["full_observation_spec"])
        done = spec_leaf_paths(out["full_done_spec"])
        action = spec_leaf_paths(inp["full_action_spec"])
        state = spec_leaf_paths(inp["full_state_spec"])
        if name == "inputs":  # what a sub-env may read in _step
            return unique([*obs, *action, *state])
        if name == "sent":  # what the parent sends to worker processes each step
            return unique([*action, *state])
        if name == "step_outputs":
            return unique([*obs, *spec_leaf_paths(out["full_reward_spec"]), *done])
        if name == "reset_outputs":
            return unique([*obs, *done])
        if name == "masks":
            levels = unique([p[:-1] for p in done])
            return [(*level, RESET) for level in levels]
        raise KeyError(name)

    def __repr__(self) -> str:
        inner = super().__repr__().split("(", 1)[1]
        return f"{type(self).__name__}(num_workers={self.num_workers}, {inner}"


__all__ = ["BatchedEnvBase"]
