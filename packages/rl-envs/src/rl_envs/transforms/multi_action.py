"""MultiAction: a chunk of actions executed in one step of the transformed env."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Composite, TensorSpec, Transform, step_mdp
from rl_core.keys import DONE, NEXT, NestedKey, as_key_list
from rl_envs.transforms._common import leaf_keys, parent_input


class MultiAction(Transform):
    """Executes a chunk of actions, one env step each, as one step of the transformed env.

    The policy writes, for each action of the env, a chunk ``[*B, n, *action_shape]`` (the
    chunk dim at ``dim`` after the batch dims). The env below is stepped with the chunk's
    actions in order; the step shows the last observation and the rewards stacked along the
    chunk dim (``stack_rewards``) or the last reward; ``stack_observations`` stacks the
    observations too. When an episode ends inside the chunk the remaining actions are
    dropped (for a batched env: when any sub-env's episode ends; the rows of steps not taken
    hold zero rewards and repeat the last observation). Transforms before this one run at
    every inner step, those after it once per chunk.

    The specs show chunks of length 1 (the chunk dim of the action, and of the stacked
    rewards and observations, has size 1 there); steps accept chunks of any length. A
    ParallelEnv or SerialEnv sizes its buffers from its sub-envs' specs, so put MultiAction
    on the outside of one (``TransformedEnv(ParallelEnv(...), MultiAction())``), not inside
    its workers.

    Args:
        dim: the chunk dim counted after the batch dims (>= 1). Defaults to 1.
        stack_rewards: stack the rewards of the chunk. Defaults to ``True``.
        stack_observations: stack the observations of the chunk. Defaults to ``False``.
        action_key: the env action to chunk. Defaults to every action of the env.
        chunk_key: where the policy writes the chunk of ``action_key``. Defaults to
            ``action_key`` itself.

    Raises:
        ValueError: ``dim`` < 1; ``chunk_key`` without one ``action_key``.
        RuntimeError: a step outside an env.

    Examples:
        >>> import torch
        >>> from rl_core import TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> env = TransformedEnv(CountingEnv(max_count=100), MultiAction())
        >>> td = env.reset().set("action", torch.ones(3, 1, dtype=torch.int64))
        >>> out = env.step(td)["next"]
        >>> out["observation"].item(), out["reward"].shape
        (3.0, torch.Size([3, 1]))
    """

    def __init__(
        self,
        *,
        dim: int = 1,
        stack_rewards: bool = True,
        stack_observations: bool = False,
        action_key: NestedKey | None = None,
        chunk_key: NestedKey | None = None,
    ) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ValueError(f"MultiAction: expected dim >= 1 (after the batch dims), got {dim!r}.")
        if chunk_key is not None and action_key is None:
            raise ValueError("MultiAction: chunk_key needs the action_key it holds chunks of.")
        self.dim = dim
        self.stack_rewards = stack_rewards
        self.stack_observations = stack_observations
        self.action_key = None if action_key is None else as_key_list(action_key, "MultiAction")[0]
        self.chunk_key = self.action_key if chunk_key is None else chunk_key
        self.__dict__["_chunks"] = None

    # ------------------------------------------------------------------ keys
    def _pairs(self, action_keys: list[NestedKey]) -> list[tuple[NestedKey, NestedKey]]:
        """(env action key, chunk key) pairs."""
        if self.action_key is None:
            return [(k, k) for k in action_keys]
        return [(self.action_key, self.chunk_key)]

    def _chunk_dim(self, batch_dims: int) -> int:
        return batch_dims + self.dim - 1

    # ------------------------------------------------------------------ specs
    def _chunked(self, spec: TensorSpec, batch_dims: int) -> TensorSpec:
        return spec.unsqueeze(self._chunk_dim(batch_dims))

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        actions = input_spec["full_action_spec"]
        batch_dims = len(input_spec.shape)
        for action_key, chunk_key in self._pairs(leaf_keys(actions)):
            spec = actions[action_key]
            if chunk_key != action_key:
                del actions[action_key]
            actions[chunk_key] = self._chunked(spec, batch_dims)
        return input_spec

    def _stacked_observations(self) -> list[NestedKey]:
        """The observations stacked with ``stack_observations``: those the env below does
        not also read as state (a step counter, say)."""
        parent = self.parent
        if parent is None or not self.stack_observations:
            return []
        states = set(parent.state_keys)
        return [k for k in parent.observation_keys if k not in states]

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        batch_dims = len(output_spec.shape)
        stacked_obs = set(self._stacked_observations())
        for group, stacked in (
            ("full_reward_spec", self.stack_rewards),
            ("full_observation_spec", self.stack_observations),
        ):
            if not stacked:
                continue
            leaves = output_spec[group]
            for key in leaf_keys(leaves):
                if group == "full_reward_spec" or key in stacked_obs:
                    leaves[key] = self._chunked(leaves[key], batch_dims)
        return output_spec

    # ------------------------------------------------------------------ env path
    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            return tensordict
        dim = self._chunk_dim(tensordict.batch_dims)
        chunks = {}
        for action_key, chunk_key in self._pairs(parent.action_keys):
            chunk = tensordict.get(chunk_key, None)
            if chunk is None:
                continue
            chunks[action_key] = chunk.unbind(dim)
            if chunk_key != action_key:
                del tensordict[chunk_key]
            tensordict.set(action_key, chunks[action_key][0])
        self.__dict__["_chunks"] = chunks
        return self._last_observations(tensordict, parent)

    def _last_observations(self, tensordict: TensorDictBase, parent) -> TensorDictBase:
        """With ``stack_observations`` the root holds stacked observations: the env below
        is in the state of the last one."""
        if self.stack_observations:
            dim = self._chunk_dim(tensordict.batch_dims)
            for key in self._stacked_observations():
                value = tensordict.get(key, None)
                if value is not None:
                    tensordict.set(key, value.select(dim, -1))
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        if self.stack_observations:
            dim = self._chunk_dim(tensordict_reset.batch_dims)
            for key in self._stacked_observations():
                value = tensordict_reset.get(key, None)
                if value is not None:
                    tensordict_reset.set(key, value.unsqueeze(dim))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        parent = self.parent
        if parent is None:
            raise RuntimeError("MultiAction: a step outside an env.")
        chunks = self._chunks or {}
        self.__dict__["_chunks"] = None
        length = max((len(c) for c in chunks.values()), default=1)
        rewards = {k: [next_tensordict.get(k)] for k in parent.reward_keys}
        observations = {k: [next_tensordict.get(k)] for k in self._stacked_observations()}
        stepped = self._last_observations(parent_input(self, tensordict), parent)
        for key, chunk in chunks.items():
            stepped.set(key, chunk[0])
        stepped.set(NEXT, next_tensordict)
        for i in range(1, length):
            if bool(next_tensordict.get(DONE).any()):
                break
            root = step_mdp(
                stepped,
                exclude_action=False,
                reward_keys=parent.reward_keys,
                done_keys=parent.done_keys,
                action_keys=parent.action_keys,
            )
            for key, chunk in chunks.items():
                root.set(key, chunk[i])
            stepped = parent.step(root)
            next_tensordict = stepped.get(NEXT)
            for key, values in rewards.items():
                values.append(next_tensordict.get(key))
            for key, values in observations.items():
                values.append(next_tensordict.get(key))
        dim = self._chunk_dim(next_tensordict.batch_dims)
        for key, values in rewards.items():
            if self.stack_rewards:
                values += [torch.zeros_like(values[-1])] * (length - len(values))
                next_tensordict.set(key, torch.stack(values, dim))
        for key, values in observations.items():
            if self.stack_observations:
                values += [values[-1]] * (length - len(values))
                next_tensordict.set(key, torch.stack(values, dim))
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, stack_rewards={self.stack_rewards}, "
            f"stack_observations={self.stack_observations}"
        )


__all__ = ["MultiAction"]
