"""ObservationNorm: an affine map of observations with fixed (or estimated) loc and scale."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from rl_core import TensorSpec, Transform
from rl_core.keys import OBSERVATION, NestedKey
from rl_envs.transforms._common import bounds, continuous_like, map_output_leaves

_CPU = torch.device("cpu")


def _affine(value: Any, loc: Any, scale: Any, *, standard_normal: bool) -> Any:
    """The map, for tensors and numpy arrays alike (``_NormPlan`` applies it to numpy rows):
    two exactly rounded operations, which give the same bits in both."""
    return (value - loc) / scale if standard_normal else value * scale + loc


@functools.cache
def _keeps_shape(shape: tuple[int, ...], *others: tuple[int, ...]) -> bool:
    """Whether ``others`` broadcast onto ``shape`` without enlarging it."""
    try:
        return np.broadcast_shapes(shape, *others) == shape
    except ValueError:
        return False


class _NormPlan:
    """``ObservationNorm``'s map on numpy rows: where every entry to map is a row of loc's
    dtype (float32 or float64, loc and scale on the CPU) that loc and scale do not enlarge,
    ``_affine`` on the numpy arrays (torch's bits) into fresh rows; else ``False``, having
    written nothing. Keys are read when the plan is built (like the env's specs, it is
    rebuilt when the transforms change through the env); loc, scale (through ``_stats``)
    and ``standard_normal`` are read on every call."""

    def __init__(self, owner: ObservationNorm, lane: Any) -> None:
        self.owner, self.numpy, self.lane = owner, lane.numpy, lane
        self.pairs = list(zip(owner.in_keys, owner.out_keys))
        self.takes: dict[tuple, Any] = {}

    def _take(self, row: np.ndarray, loc: np.ndarray, scale: np.ndarray) -> Any:
        key = (row.shape, row.dtype)
        take = self.takes.get(key)
        if take is None:
            keeps = row.dtype == loc.dtype and _keeps_shape(row.shape, loc.shape, scale.shape)
            take = self.takes[key] = self.lane.rows(row.shape, row.dtype) if keeps else False
        return take

    def _map(self, found: dict) -> bool:
        owner = self.owner
        if owner._buffers["loc"] is None or owner._buffers["scale"] is None:
            return False  # _call raises the error
        numpy = owner._stats(_CPU)[2]  # checked against loc's and scale's versions
        if numpy is None:
            return False
        loc, scale = numpy
        numpy, rows = self.numpy, []
        for in_key, out_key in self.pairs:
            value = found.get(in_key)
            if value is None:
                continue
            row = numpy(value)
            if row is None or row.dtype != loc.dtype:
                return False
            take = self._take(row, loc, scale)
            if take is False:
                return False
            rows.append((out_key, row, take))
        standard = owner.standard_normal
        for out_key, row, take in rows:
            out, dst = take()
            dst[...] = _affine(row, loc, scale, standard_normal=standard)
            found[out_key] = out
        return True

    def step(self, root: dict, nxt: dict) -> bool:
        return self._map(nxt)

    def reset(self, fresh: dict, tensordict_reset: Any) -> bool:
        return self._map(fresh)


class ObservationNorm(Transform):
    """Normalises entries with a fixed affine map.

    With ``standard_normal=True`` the output is ``(x - loc) / scale``; otherwise it is
    ``x * scale + loc``. ``loc`` and ``scale`` are buffers (saved by ``state_dict``); when they
    are not given, :meth:`init_stats` estimates them from random rollouts of the env below.

    Args:
        loc: a tensor broadcastable to the entries (or a float), or ``None`` to estimate it.
        scale: same, for the scale.
        in_keys: entries to normalise. Defaults to ``["observation"]``.
        out_keys: where to write them; default ``in_keys``.
        in_keys_inv: entries the env reads that the policy writes normalised (inverse path).
        out_keys_inv: the keys the policy writes; default ``in_keys_inv``.
        standard_normal: see above.
        eps: the smallest scale :meth:`init_stats` gives.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ObservationNorm(loc=1.0, scale=2.0, standard_normal=True)
        >>> t(TensorDict(observation=torch.tensor([3.0, 5.0])))["observation"].tolist()
        [1.0, 2.0]
    """

    fusable = True  # maps step and reset outputs only

    def __init__(
        self,
        loc: torch.Tensor | float | None = None,
        scale: torch.Tensor | float | None = None,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        *,
        standard_normal: bool = False,
        eps: float = 1e-6,
    ) -> None:
        super().__init__(
            in_keys=OBSERVATION if in_keys is None else in_keys,
            out_keys=out_keys,
            in_keys_inv=in_keys_inv,
            out_keys_inv=out_keys_inv,
        )
        if (loc is None) != (scale is None):
            raise ValueError(
                "ObservationNorm: give both loc and scale, or neither (then call init_stats)."
            )
        self.standard_normal = standard_normal
        self.eps = eps
        self.register_buffer("loc", None if loc is None else torch.as_tensor(loc).float())
        self.register_buffer("scale", None if scale is None else torch.as_tensor(scale).float())

    @property
    def initialized(self) -> bool:
        """Whether loc and scale are set."""
        return self.loc is not None and self.scale is not None

    def _stats(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """``(loc, scale, numpy)``: loc and scale on ``device``, and on the CPU, where both
        are float32 or both float64, the numpy arrays sharing their memory (else ``None``).

        Kept per (loc, scale, their versions, device), so that a step moves nothing.
        """
        buffers = self._buffers  # the buffers themselves, without nn.Module's attribute lookup
        loc, scale = buffers["loc"], buffers["scale"]
        cached = self.__dict__.get("_stats_cache")
        if (
            cached is not None
            and cached[0] is loc
            and cached[1] is scale
            and cached[2] == loc._version
            and cached[3] == scale._version
            and cached[7] == device
        ):
            return cached[4], cached[5], cached[6]
        if loc is None or scale is None:
            raise RuntimeError(
                "ObservationNorm: loc and scale are not set; pass them to the constructor, "
                "call init_stats(num_iter) or load a state_dict first."
            )
        moved_loc, moved_scale = loc.to(device), scale.to(device)
        numpy = None
        if (
            moved_loc.device.type == "cpu"
            and moved_loc.dtype == moved_scale.dtype
            and moved_loc.dtype in (torch.float32, torch.float64)
        ):
            numpy = (moved_loc.numpy(), moved_scale.numpy())
        cached = (loc, scale, loc._version, scale._version, moved_loc, moved_scale, numpy, device)
        self.__dict__["_stats_cache"] = cached
        return moved_loc, moved_scale, numpy

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        loc, scale, _ = self._stats(value.device)
        if not value.dtype.is_floating_point:
            value = value.to(loc.dtype)
        return _affine(value, loc, scale, standard_normal=self.standard_normal)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        loc, scale, _ = self._stats(value.device)
        return _affine(value, loc, scale, standard_normal=not self.standard_normal)

    def _lane_plan(self, lane: Any) -> _NormPlan | None:
        """The numpy-row plan of this transform (``rl_core.transforms._lane``): root-level
        keys, each output written under a key no later pair reads."""
        pairs = list(zip(self.in_keys, self.out_keys))
        if not all(type(i) is str and type(o) is str for i, o in pairs):
            return None
        if any(o != i and o in self.in_keys for i, o in pairs):
            return None  # a later pair would read an output: keep _call's order
        return _NormPlan(self, lane)

    # ------------------------------------------------------------------ statistics
    @torch.no_grad()
    def init_stats(
        self,
        num_iter: int,
        reduce_dim: int | Sequence[int] = 0,
        cat_dim: int | None = None,
        key: NestedKey | None = None,
        keep_dims: Sequence[int] | None = None,
    ) -> None:
        """Estimates loc and scale from ``num_iter`` random steps of the env below.

        The values of ``key`` are gathered as one ``[N, *entry_shape]`` tensor (every batch
        and time index of the rollout flattened into dim 0), then mean and std are taken over
        ``reduce_dim``; dims listed in ``keep_dims`` stay as size-1 dims.

        Args:
            num_iter: number of env steps (the rollout does not stop on done).
            reduce_dim: dim(s) of the gathered tensor to reduce; 0 gives per-feature stats.
            cat_dim: accepted for TorchRL compatibility; only ``None`` or 0 (the gathered
                tensor's sample dim) are meaningful here.
            key: the entry to estimate from; default the only in_key.
            keep_dims: reduced dims kept with size 1.

        Raises:
            RuntimeError: the transform sits in no env, or its stats are already set.
            ValueError: several in_keys and no ``key``, or a ``cat_dim`` other than 0.
        """
        if self.initialized:
            raise RuntimeError("ObservationNorm.init_stats: loc and scale are already set.")
        if cat_dim not in (None, 0):
            raise ValueError(
                f"ObservationNorm.init_stats: samples are gathered along dim 0, got "
                f"cat_dim={cat_dim}; use reduce_dim to choose the dims to reduce."
            )
        if key is None:
            if len(self.in_keys) != 1:
                raise ValueError(
                    f"ObservationNorm.init_stats: several in_keys {self.in_keys}; pass key=."
                )
            key = self.in_keys[0]
        env = self.parent
        if env is None:
            raise RuntimeError(
                "ObservationNorm.init_stats: the transform is in no env; put it in a "
                "TransformedEnv first (or pass loc and scale)."
            )
        traj = env.rollout(num_iter, break_when_any_done=False)
        data = traj.get(key)
        data = data.reshape(-1, *data.shape[len(env.batch_size) + 1 :]).float()
        dims = (reduce_dim,) if isinstance(reduce_dim, int) else tuple(reduce_dim)
        keep = set() if keep_dims is None else {d % data.ndim for d in keep_dims}
        loc = data.mean(dims, keepdim=True)
        scale = data.std(dims, keepdim=True).clamp_min(self.eps)
        squeeze = [d % data.ndim for d in dims if d % data.ndim not in keep]
        loc, scale = loc.squeeze(squeeze), scale.squeeze(squeeze)
        if not self.standard_normal:
            loc, scale = -loc / scale, 1.0 / scale
        self.loc, self.scale = loc, scale
        self._empty_env_cache()

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        # Buffers that are still None are filled from the state dict (stats saved after
        # init_stats load into a fresh transform).
        for name in ("loc", "scale"):
            if getattr(self, name) is None and prefix + name in state_dict:
                setattr(self, name, state_dict[prefix + name].clone())
        super()._load_from_state_dict(state_dict, prefix, *args)
        self._empty_env_cache()

    # ------------------------------------------------------------------ specs
    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        dtype = spec.dtype if spec.dtype.is_floating_point else torch.float32
        found = bounds(spec)
        if found is None or not self.initialized:
            return continuous_like(spec, dtype=dtype)
        low = self._apply_transform(found[0].float())
        high = self._apply_transform(found[1].float())
        return continuous_like(
            spec, low=torch.minimum(low, high), high=torch.maximum(low, high), dtype=dtype
        )

    def transform_output_spec(self, output_spec):
        return map_output_leaves(
            output_spec, self.in_keys, self.out_keys, self._map_spec, "ObservationNorm"
        )

    def transform_input_spec(self, input_spec):
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            actions = input_spec["full_action_spec"]
            if in_key not in actions.keys(include_nested=True, leaves_only=True):
                raise KeyError(
                    f"ObservationNorm: in_keys_inv entry {in_key!r} is not an action of the env."
                )
            spec = actions[in_key]
            found = bounds(spec)
            if found is not None and self.initialized:
                # The policy writes in normalised space: the forward map of the env's bounds.
                low = self._apply_transform(found[0].float())
                high = self._apply_transform(found[1].float())
                new = continuous_like(
                    spec, low=torch.minimum(low, high), high=torch.maximum(low, high)
                )
            else:
                new = continuous_like(spec)
            if out_key != in_key:
                del actions[in_key]
            actions[out_key] = new
        return input_spec

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, standard_normal={self.standard_normal}"


__all__ = ["ObservationNorm"]
