"""ObservationNorm: an affine map of observations with fixed (or estimated) loc and scale."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from rl_core import TensorSpec, Transform
from rl_core.keys import OBSERVATION, NestedKey
from rl_envs.transforms._affine import affine, affine_stats
from rl_envs.transforms._common import bounds, continuous_like, map_output_leaves, map_spec_leaves


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

        Kept per (loc, scale, their versions, device), so that a step moves nothing
        (``_affine.affine_stats``).
        """
        buffers = self._buffers  # the buffers themselves, without nn.Module's attribute lookup
        if buffers["loc"] is None or buffers["scale"] is None:
            raise RuntimeError(
                "ObservationNorm: loc and scale are not set; pass them to the constructor, "
                "call init_stats(num_iter) or load a state_dict first."
            )
        return affine_stats(self, device)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        loc, scale, _ = self._stats(value.device)
        if not value.dtype.is_floating_point:
            value = value.to(loc.dtype)
        return affine(value, loc, scale, standard_normal=self.standard_normal)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        loc, scale, _ = self._stats(value.device)
        return affine(value, loc, scale, standard_normal=not self.standard_normal)

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

        The values of ``key`` are read from one random rollout of ``num_iter`` steps (it does
        not stop on done) in the rollout's layout ``[*batch_size, time, *entry_shape]``, as
        TorchRL reads them; mean and std are taken over ``reduce_dim`` (dims of that layout);
        dims listed in ``keep_dims`` stay as size-1 dims.

        Args:
            num_iter: number of env steps.
            reduce_dim: dim(s) of the rollout layout to reduce; 0 for an env without batch
                dims gives per-feature stats over time, ``(0, 1)`` does for a batched env.
            cat_dim: the dim along which TorchRL joins rollouts; it must be ``reduce_dim`` or
                one of its dims (defaults to ``reduce_dim``, or to the time dim when
                ``reduce_dim`` is a tuple). One rollout is read here, so it changes nothing
                else.
            key: the entry to estimate from; default the only in_key.
            keep_dims: reduced dims kept with size 1 (they must be in ``reduce_dim``).

        Raises:
            RuntimeError: the transform sits in no env, or its stats are already set.
            ValueError: several in_keys and no ``key``, a ``cat_dim`` outside ``reduce_dim``,
                or ``keep_dims`` outside ``reduce_dim``.
        """
        if self.initialized:
            raise RuntimeError("ObservationNorm.init_stats: loc and scale are already set.")
        dims = (reduce_dim,) if isinstance(reduce_dim, int) else tuple(reduce_dim)
        if cat_dim is not None and cat_dim not in dims:
            raise ValueError(
                f"ObservationNorm.init_stats: expected cat_dim to be reduce_dim or one of its "
                f"dims (reduce_dim={reduce_dim}), got cat_dim={cat_dim}."
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
        data = traj.get(key).float()
        dims = sorted({d % data.ndim for d in dims})
        keep = set() if keep_dims is None else {d % data.ndim for d in keep_dims}
        if not keep <= set(dims):
            raise ValueError(
                f"ObservationNorm.init_stats: expected keep_dims among reduce_dim "
                f"({reduce_dim}), got keep_dims={keep_dims}."
            )
        loc = data.mean(dims, keepdim=True)
        scale = data.std(dims, keepdim=True).clamp_min(self.eps)
        squeeze = [d for d in dims if d not in keep]
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

    def transform_observation_spec(self, observation_spec: TensorSpec) -> TensorSpec:
        """The observation spec (a Composite, or the one entry's spec) as the transform
        shows it; the env path maps the whole output spec instead."""
        return map_spec_leaves(
            observation_spec, self.in_keys, self.out_keys, self._map_spec, "ObservationNorm"
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
