"""TimeMaxPool: the element-wise max of the last T frames (Atari sprites that flicker)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_core.keys import DONE, NEXT, NestedKey
from rl_envs.transforms._common import episode_windows, gather_steps, reset_weight


class TimeMaxPool(Transform):
    """Shows the element-wise max of the last ``T`` values of each entry.

    In an env the transform keeps the last ``T - 1`` raw values per sub-env; a reset (full
    or partial) fills the history of the sub-envs it resets with their first value. On a
    trajectory (last batch dim = time), the max runs over the steps of the same episode.

    Args:
        in_keys: the entries. Defaults to ``["pixels"]``.
        out_keys: where to write them; default ``in_keys``.
        T: the number of frames (>= 1).
        done_key: the flag ending an episode in a trajectory. Defaults to
            ``("next", "done")``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> traj = TensorDict(x=torch.tensor([[1.0], [3.0], [2.0]]), batch_size=[3])
        >>> TimeMaxPool(["x"], T=2)(traj)["x"].squeeze(-1).tolist()
        [1.0, 3.0, 3.0]
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        T: int = 2,
        *,
        done_key: NestedKey = (NEXT, DONE),
    ) -> None:
        super().__init__(in_keys="pixels" if in_keys is None else in_keys, out_keys=out_keys)
        if not isinstance(T, int) or T < 1:
            raise ValueError(f"TimeMaxPool: expected T >= 1, got {T!r}.")
        self.T = T
        self.done_key = done_key
        self.__dict__["_history"] = {}

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        ndim = tensordict_reset.batch_dims
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frame = tensordict_reset.get(in_key)
            fresh = frame.unsqueeze(0).expand(self.T - 1, *frame.shape).clone()
            history = self._history.get(in_key)
            weight = reset_weight(tensordict, frame, ndim)
            if history is not None and weight is not None and history.shape == fresh.shape:
                fresh = torch.where(weight.bool().unsqueeze(0), fresh, history)
            self._history[in_key] = fresh
            tensordict_reset.set(out_key, frame)
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frame = next_tensordict.get(in_key)
            history = self._history.get(in_key)
            if history is None:
                raise RuntimeError("TimeMaxPool: a step before the first reset.")
            if self.T == 1:
                next_tensordict.set(out_key, frame)
                continue
            next_tensordict.set(out_key, torch.maximum(history.amax(0), frame))
            self._history[in_key] = torch.cat([history[1:], frame.unsqueeze(0)])
        return next_tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        time_dim, windows = episode_windows(tensordict, self.T, self.done_key, "TimeMaxPool")
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frames = tensordict.get(in_key, None)
            if frames is None:
                continue
            pooled = frames
            for index, _ in windows[:-1]:
                pooled = torch.maximum(pooled, gather_steps(frames, index, time_dim))
            tensordict.set(out_key, pooled)
        return tensordict

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        known = observation_spec.keys(include_nested=True, leaves_only=True)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in known:
                raise KeyError(
                    f"TimeMaxPool: the key {in_key!r} is not an observation of the env below it "
                    f"(it has {known})."
                )
            observation_spec[out_key] = observation_spec[in_key].clone()
        return observation_spec

    def extra_repr(self) -> str:
        return f"T={self.T}, {super().extra_repr()}"


__all__ = ["TimeMaxPool"]
