"""VecNorm: normalisation by running (exponentially decayed) mean and variance."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import EnvBase, TensorSpec, Transform
from rl_core.keys import OBSERVATION, NestedKey
from rl_envs.transforms._common import (
    continuous_like,
    find_group,
    map_output_leaves,
    reset_weight,
)

_STATS = ("sum", "ssq", "count")


def _name(key: NestedKey) -> str:
    return key if isinstance(key, str) else "__".join(key)


class VecNorm(Transform):
    """Normalises entries by a running mean and variance updated as the env runs.

    Each step (and reset) adds the new values, summed over the batch dims only (the statistics
    are per feature, whatever the batch shape: ``[]``, ``[N]``, ``[N, M]``), to decayed sums:
    ``sum = decay * sum + Σx``, ``ssq = decay * ssq + Σx²``, ``count = decay * count + n``;
    the output is ``(x - mean) / sqrt(max(var, eps))`` with ``mean = sum / count`` and
    ``var = ssq / count - mean²``. On a partial reset only the sub-envs that reset count.
    Calling the transform on a TensorDict (e.g. a replay-buffer sample) normalises it with
    the current statistics and does not update them.

    The statistics are buffers (``state_dict``/``load_state_dict`` round trip). To share
    them between ``ParallelEnv`` workers, build them once in shared memory with
    :meth:`build_td_for_shared_vecnorm` and pass them as ``shared_td`` to the VecNorm of
    every worker, with one ``lock`` shared by all of them (without it, two updates at the same
    moment can lose one).

    Args:
        in_keys: entries to normalise. Defaults to ``["observation"]``.
        out_keys: where to write them; default ``in_keys``.
        decay: the decay of the running sums, in ``(0, 1]``.
        eps: the smallest variance used.
        shared_td: a TensorDict of statistics to use (and update) instead of own ones.
        lock: a lock (e.g. ``multiprocessing.Lock()``) held while the statistics are updated,
            so that workers sharing them lose no update.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> stats = TensorDict({"observation": {
        ...     "sum": torch.tensor([4.0]), "ssq": torch.tensor([10.0]),
        ...     "count": torch.tensor([2.0])}})
        >>> t = VecNorm(shared_td=stats)
        >>> t(TensorDict(observation=torch.tensor([3.0])))["observation"].tolist()
        [1.0]
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        decay: float = 0.9999,
        eps: float = 1e-4,
        shared_td: TensorDictBase | None = None,
        lock: Any = None,
    ) -> None:
        super().__init__(in_keys=OBSERVATION if in_keys is None else in_keys, out_keys=out_keys)
        if not 0.0 < decay <= 1.0:
            raise ValueError(f"VecNorm: expected 0 < decay <= 1, got {decay}.")
        self.decay = decay
        self.eps = eps
        self.frozen = False
        self.__dict__["lock"] = lock
        for key in self.in_keys:
            for stat in _STATS:
                value = None
                if shared_td is not None:
                    value = shared_td.get((*((key,) if isinstance(key, str) else key), stat), None)
                    if value is None:
                        raise KeyError(
                            f"VecNorm: shared_td has no {stat!r} entry for the key {key!r}; build "
                            f"it with VecNorm.build_td_for_shared_vecnorm(env, in_keys)."
                        )
                self.register_buffer(f"{_name(key)}_{stat}", value)

    # ------------------------------------------------------------------ statistics
    @staticmethod
    def build_td_for_shared_vecnorm(
        env: EnvBase, in_keys: NestedKey | Sequence[NestedKey] | None = None
    ) -> TensorDict:
        """Zeroed statistics for ``in_keys`` of ``env``, in shared memory.

        Args:
            env: the env whose observations will be normalised (one worker's env).
            in_keys: the entries; default ``["observation"]``.

        Returns:
            ``TensorDict({key: {"sum", "ssq", "count"}})`` with float32 tensors shaped like
            one entry of the env (without its batch dims).
        """
        keys = VecNorm(in_keys).in_keys
        out = TensorDict()
        ndim = len(env.batch_size)
        for key in keys:
            group = find_group(env.output_spec, key, "VecNorm.build_td_for_shared_vecnorm")
            shape = env.output_spec[group][key].shape[ndim:]
            path = (key,) if isinstance(key, str) else key
            out.set((*path, "sum"), torch.zeros(shape))
            out.set((*path, "ssq"), torch.zeros(shape))
            out.set((*path, "count"), torch.zeros(()))
        return out.share_memory_()

    def _stats(self, key: NestedKey) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        name = _name(key)
        return tuple(getattr(self, f"{name}_{stat}") for stat in _STATS)  # type: ignore[return-value]

    def _ensure_stats(self, key: NestedKey, shape: torch.Size, device: Any) -> None:
        if getattr(self, f"{_name(key)}_sum") is not None:
            return
        for stat in _STATS:
            size = () if stat == "count" else shape
            setattr(self, f"{_name(key)}_{stat}", torch.zeros(size, device=device))

    def _normalize(self, key: NestedKey, value: torch.Tensor) -> torch.Tensor:
        total, ssq, count = self._stats(key)
        if total is None:
            raise RuntimeError(
                f"VecNorm: no statistics for {key!r} yet; put the transform in an env and reset "
                f"it, pass shared_td, or load a state_dict."
            )
        if total.device != value.device:
            total, ssq, count = total.to(value.device), ssq.to(value.device), count.to(value.device)
        count = count.clamp_min(1e-8)
        mean = total / count
        var = (ssq / count - mean * mean).clamp_min(self.eps)
        return ((value - mean) / var.sqrt()).to(value.dtype)

    @torch.no_grad()
    def _update(self, key: NestedKey, value: torch.Tensor, weight: torch.Tensor | None) -> None:
        total, ssq, count = self._stats(key)
        batch_ndim = value.ndim - total.ndim
        dims = tuple(range(batch_ndim))
        value = value.to(total.device, total.dtype)
        n: torch.Tensor | float
        if weight is not None:
            weight = weight.to(total.device, total.dtype)
            n = weight.sum()
            value = value * weight
        else:
            n = float(math.prod(value.shape[:batch_ndim]))
        # An unbatched env has no batch dim to reduce: ``sum(())`` would reduce over every dim
        # (the features too), so the statistics stay per feature only without it.
        square = value * value
        if dims:
            value, square = value.sum(dims), square.sum(dims)
        total.mul_(self.decay).add_(value)
        ssq.mul_(self.decay).add_(square)
        count.mul_(self.decay).add_(n)

    def _process(
        self, data: TensorDictBase, batch_ndim: int, weight_source: TensorDictBase | None
    ) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = data.get(in_key, None)
            if value is None:
                continue
            if not self.frozen:
                self._ensure_stats(in_key, value.shape[batch_ndim:], value.device)
                weight = reset_weight(weight_source, value, batch_ndim)
                if self.lock is None:
                    self._update(in_key, value, weight)
                else:
                    with self.lock:
                        self._update(in_key, value, weight)
            data.set(out_key, self._normalize(in_key, value))
        return data

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._process(next_tensordict, next_tensordict.batch_dims, None)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._process(tensordict_reset, tensordict_reset.batch_dims, tensordict)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(in_key, None)
            if value is not None:
                tensordict.set(out_key, self._normalize(in_key, value))
        return tensordict

    # ------------------------------------------------------------------ frozen mode
    def freeze(self) -> VecNorm:
        """Stops updating the statistics (evaluation); returns ``self``."""
        self.frozen = True
        return self

    def unfreeze(self) -> VecNorm:
        """Updates the statistics again; returns ``self``."""
        self.frozen = False
        return self

    def frozen_copy(self) -> VecNorm:
        """A frozen copy with its own (copied) statistics, for an evaluation env."""
        lock = self.lock
        self.__dict__["lock"] = None
        try:
            out = self.clone()
        finally:
            self.__dict__["lock"] = lock
        out.frozen = True
        return out

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        for key in self.in_keys:
            for stat in _STATS:
                name = f"{_name(key)}_{stat}"
                if getattr(self, name) is None and prefix + name in state_dict:
                    setattr(self, name, state_dict[prefix + name].clone())
        super()._load_from_state_dict(state_dict, prefix, *args)

    # ------------------------------------------------------------------ specs
    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if not spec.dtype.is_floating_point:
            raise TypeError(
                f"VecNorm: the entry {key!r} has dtype {spec.dtype}; expected a floating dtype. "
                f"Cast it first (DTypeCastTransform or ToTensorImage)."
            )
        return continuous_like(spec)

    def transform_output_spec(self, output_spec):
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "VecNorm"
        )

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, decay={self.decay}, frozen={self.frozen}"


__all__ = ["VecNorm"]
