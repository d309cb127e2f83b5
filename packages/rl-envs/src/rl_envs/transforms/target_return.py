"""TargetReturn: the return left to reach, an observation for return-conditioned policies."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import RESET, NestedKey, as_key_list
from rl_envs.transforms._common import leaf_keys

_MODES = ("reduce", "constant")


def _target_key(reward_key: NestedKey) -> NestedKey:
    if isinstance(reward_key, str):
        return "target_return"
    return (*reward_key[:-1], "target_return")


class TargetReturn(Transform):
    """Writes a target return, the input of return-conditioned policies (Decision Transformer).

    At reset the target is ``target_return``; at each step it becomes
    ``target - reward`` (``mode="reduce"``: the return still to collect) or stays as it is
    (``mode="constant"``). The target is an observation shaped like its reward.

    Args:
        target_return: the return to reach.
        mode: ``"reduce"`` (the default) or ``"constant"``.
        in_keys: the rewards. Defaults to the reward keys of the env below.
        out_keys: the targets. Defaults to each reward key with its last element replaced by
            ``"target_return"``.
        reset_key: the partial-reset mask read at reset (rows where it is False keep their
            target). Defaults to ``"_reset"``.

    Raises:
        ValueError: an unknown ``mode``; as many ``out_keys`` as ``in_keys`` are needed.
        RuntimeError: a call outside an env (the target needs the previous step's target).

    Examples:
        >>> import torch
        >>> from rl_core import TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> env = TransformedEnv(CountingEnv(max_count=10), TargetReturn(5.0))
        >>> traj = env.rollout(3, lambda td: td.set("action", torch.ones(1, dtype=torch.int64)))
        >>> traj["next", "target_return"].squeeze(-1).tolist()
        [4.0, 3.0, 2.0]
    """

    def __init__(
        self,
        target_return: float,
        mode: str = "reduce",
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        reset_key: NestedKey | None = None,
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"TargetReturn: expected mode in {_MODES}, got {mode!r}.")
        if in_keys is None and out_keys is not None:
            raise ValueError("TargetReturn: give in_keys along with out_keys.")
        if in_keys is not None and out_keys is None:
            out_keys = [_target_key(k) for k in as_key_list(in_keys, "TargetReturn: in_keys")]
        super().__init__(in_keys=in_keys, out_keys=out_keys)
        self.target_return = float(target_return)
        self.mode = mode
        self.reset_key = RESET if reset_key is None else reset_key
        self.__dict__["_keys_from_env"] = in_keys is None

    def _resolve_keys(self, reward_keys: list[NestedKey]) -> None:
        if self._keys_from_env:
            self.in_keys = list(reward_keys)
            self.out_keys = [_target_key(k) for k in reward_keys]

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        rewards = output_spec["full_reward_spec"]
        self._resolve_keys(leaf_keys(rewards))
        known = leaf_keys(rewards)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in known:
                raise KeyError(
                    f"TargetReturn: {in_key!r} is not a reward of the env below it (it has "
                    f"{known})."
                )
            spec = rewards[in_key]
            output_spec["full_observation_spec"][out_key] = Unbounded(
                shape=spec.shape, device=spec.device, dtype=spec.dtype
            )
        return output_spec

    def _keys(self) -> list[tuple[NestedKey, NestedKey]]:
        if not self.in_keys:
            parent = self.parent
            if parent is None:
                raise RuntimeError("TargetReturn: the transform is in no env.")
            self._resolve_keys(parent.reward_keys)
        return list(zip(self.in_keys, self.out_keys))

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        parent = self.parent
        rewards = parent.full_reward_spec if parent is not None else None
        mask = None if tensordict is None else tensordict.get(self.reset_key, None)
        for in_key, out_key in self._keys():
            if rewards is not None:
                shape, dtype = rewards[in_key].shape, rewards[in_key].dtype
            else:
                shape, dtype = (*tensordict_reset.batch_size, 1), torch.float32
            fresh = torch.full(
                shape, self.target_return, dtype=dtype, device=tensordict_reset.device
            )
            old = None if tensordict is None else tensordict.get(out_key, None)
            if mask is not None and old is not None:
                rows = mask.reshape(*mask.shape[: tensordict_reset.batch_dims], -1).any(-1)
                rows = rows.reshape(*rows.shape, *([1] * (fresh.ndim - rows.ndim)))
                fresh = torch.where(rows, fresh, old)
            tensordict_reset.set(out_key, fresh)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in self._keys():
            current = tensordict.get(out_key, None)
            if current is None:
                raise KeyError(
                    f"TargetReturn: the step input lacks the target {out_key!r}; reset the env "
                    f"before stepping it."
                )
            if self.mode == "reduce":
                current = current - next_tensordict.get(in_key).to(current.dtype)
            next_tensordict.set(out_key, current.clone() if self.mode == "constant" else current)
        return next_tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "TargetReturn: runs inside an env (TransformedEnv(env, TargetReturn(...))); on "
            "stored trajectories compute returns-to-go with Reward2GoTransform instead."
        )

    def extra_repr(self) -> str:
        return f"target_return={self.target_return}, mode={self.mode!r}"


__all__ = ["TargetReturn"]
