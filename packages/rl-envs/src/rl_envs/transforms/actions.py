"""ActionScaling and ActionMask: the policy's view of the action space."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Bounded, Composite, TensorSpec, Transform, TransformedEnv, Unbounded
from rl_core.keys import ACTION, ACTION_MASK, NestedKey
from rl_envs.transforms._common import bounds, map_action_leaves


class ActionScaling(Transform):
    """The policy writes normalised actions; the env gets them mapped to its range.

    With ``loc`` and ``scale`` (by default read from the env's Bounded action spec:
    ``loc = (high + low) / 2``, ``scale = (high - low) / 2``), the inverse path maps a policy
    action ``a`` to ``a * scale + loc`` (``standard_normal=True``: ``[-1, 1]`` to the env's
    range; the default) or ``(2 * a - 1) * scale + loc`` (``standard_normal=False``:
    ``[0, 1]``), as TorchRL's ``ActionScaling``; the forward path (e.g. on replay-buffer
    samples) does the reverse on ``in_keys``. Policy actions out of range are clamped into
    it first. The action spec shown is ``Bounded(-1, 1)`` (or ``(0, 1)``) where the env's
    bounds are finite, ``Unbounded`` otherwise (explicit ``loc``/``scale`` only).

    Args:
        in_keys_inv: the env's action (one key). Defaults to ``["action"]``; ``[]`` for a
            forward-only transform (needs ``loc`` and ``scale``).
        out_keys_inv: the key the policy writes; default ``in_keys_inv``.
        in_keys: the entries the forward path normalises; default ``in_keys_inv`` (or
            ``["action"]`` when it is empty).
        out_keys: where it writes them; default ``in_keys``.
        loc: the centre of the env's range; with ``scale``, used instead of the spec's
            (keyword-only).
        scale: the half-width of the env's range (nonzero; keyword-only).
        standard_normal: ``[-1, 1]`` (True, the default) or ``[0, 1]`` (keyword-only).

    Raises:
        ValueError: more than one action key, ``loc`` without ``scale`` (or the reverse), a
            zero ``scale``, or ``in_keys_inv=[]`` without them.
        TypeError: (on the specs, without ``loc``/``scale``) an action spec is not Bounded
            with finite float bounds.
        RuntimeError: (when used) ``loc``/``scale`` are unknown: put the transform in an env.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ActionScaling(loc=0.0, scale=2.0)
        >>> t.inv(TensorDict(action=torch.tensor([0.5])))["action"].tolist()
        [1.0]
        >>> t(TensorDict(action=torch.tensor([1.0])))["action"].tolist()
        [0.5]
    """

    def __init__(
        self,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        loc: torch.Tensor | float | None = None,
        scale: torch.Tensor | float | None = None,
        standard_normal: bool = True,
    ) -> None:
        actions = ACTION if in_keys_inv is None else in_keys_inv
        forward_default = actions if (in_keys_inv is None or list(in_keys_inv)) else ACTION
        super().__init__(
            in_keys=forward_default if in_keys is None else in_keys,
            out_keys=out_keys,
            in_keys_inv=actions,
            out_keys_inv=out_keys_inv,
        )
        if len(self.in_keys_inv) > 1:
            raise ValueError(
                f"ActionScaling: expected one action key, got {self.in_keys_inv}; use one "
                f"ActionScaling per action."
            )
        if (loc is None) != (scale is None):
            raise ValueError("ActionScaling: pass loc and scale together, or neither.")
        if not self.in_keys_inv and loc is None:
            raise ValueError(
                "ActionScaling: in_keys_inv=[] (forward only) needs loc and scale: there is no "
                "action spec to read them from."
            )
        self.standard_normal = bool(standard_normal)
        if loc is not None:
            loc_t, scale_t = torch.as_tensor(loc), torch.as_tensor(scale)
            dtype = torch.get_default_dtype()
            loc_t = loc_t if loc_t.is_floating_point() else loc_t.to(dtype)
            scale_t = scale_t if scale_t.is_floating_point() else scale_t.to(dtype)
            if bool((scale_t == 0).any()):
                raise ValueError("ActionScaling: scale must be nonzero.")
        else:
            loc_t = scale_t = None
        self.explicit = loc is not None
        self.register_buffer("loc", loc_t)
        self.register_buffer("scale", scale_t)

    def _stats(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if self.loc is None:
            raise RuntimeError(
                "ActionScaling: loc and scale are unknown; put the transform in an env with a "
                "Bounded action spec, or pass loc= and scale=."
            )
        return self.loc.to(device), self.scale.to(device)

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        loc, scale = self._stats(value.device)
        unit = value.clamp(-1, 1) if self.standard_normal else value.clamp(0, 1) * 2 - 1
        return (unit * scale + loc).to(loc.dtype)

    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        loc, scale = self._stats(value.device)
        unit = (value - loc) / scale
        return (unit if self.standard_normal else (unit + 1) / 2).to(value.dtype)

    def _map(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        found = bounds(spec)
        if not self.explicit:
            if found is None or not spec.dtype.is_floating_point:
                raise TypeError(
                    f"ActionScaling: the action {key!r} has a {type(spec).__name__} spec of "
                    f"dtype {spec.dtype}; expected Bounded with finite float bounds."
                )
            low, high = found
            parent = self.parent
            index = (0,) * (0 if parent is None else len(parent.batch_size))
            low, high = low.expand(spec.shape)[index], high.expand(spec.shape)[index]
            self.loc, self.scale = (high + low) / 2, (high - low) / 2
        elif found is None:
            return Unbounded(shape=spec.shape, device=spec.device, dtype=spec.dtype)
        low = -1.0 if self.standard_normal else 0.0
        return Bounded(low, 1.0, shape=spec.shape, device=spec.device, dtype=spec.dtype)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return map_action_leaves(
            input_spec, self.in_keys_inv, self.out_keys_inv, self._map, "ActionScaling"
        )


class ActionMask(Transform):
    """Keeps the env's action spec mask equal to the ``action_mask`` entry it observes.

    After every reset and step, the mask of the (Categorical or OneHot) action spec of the
    env holding this transform is updated, so random actions (``env.rand_action``, rollouts
    without a policy) are legal moves.

    Args:
        action_key: the action. Defaults to ``"action"``.
        mask_key: the observed mask (bool, ``[*batch, n]``). Defaults to ``"action_mask"``.

    Raises:
        KeyError: (on the specs) the env has no such mask observation or action.
        TypeError: (on the specs) the action spec has no mask (not Categorical or OneHot).

    Examples:
        >>> ActionMask().in_keys
        ['action', 'action_mask']
    """

    def __init__(self, action_key: NestedKey = ACTION, mask_key: NestedKey = ACTION_MASK) -> None:
        super().__init__(in_keys=[action_key, mask_key])
        self.action_key = action_key
        self.mask_key = mask_key

    def _env(self) -> TransformedEnv:
        container = self.container
        while container is not None and not isinstance(container, TransformedEnv):
            container = container.container
        if container is None:
            raise RuntimeError("ActionMask: the transform is in no env; it updates env specs.")
        return container

    def _update(self, tensordict: TensorDictBase) -> TensorDictBase:
        mask = tensordict.get(self.mask_key, None)
        if mask is None:
            raise KeyError(f"ActionMask: the env output has no {self.mask_key!r} entry.")
        self._env().full_action_spec[self.action_key].update_mask(mask.to(torch.bool))
        return tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._update(tensordict_reset)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._update(next_tensordict)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        known = output_spec["full_observation_spec"].keys(include_nested=True, leaves_only=True)
        if self.mask_key not in known:
            raise KeyError(
                f"ActionMask: the env has no {self.mask_key!r} observation (it has {known})."
            )
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        actions = input_spec["full_action_spec"]
        if self.action_key not in actions.keys(include_nested=True, leaves_only=True):
            raise KeyError(f"ActionMask: the env has no {self.action_key!r} action.")
        if not hasattr(actions[self.action_key], "update_mask"):
            raise TypeError(
                f"ActionMask: the action {self.action_key!r} has a "
                f"{type(actions[self.action_key]).__name__} spec, which holds no mask; expected "
                f"Categorical or OneHot."
            )
        return input_spec

    def extra_repr(self) -> str:
        return f"action_key={self.action_key!r}, mask_key={self.mask_key!r}"


__all__ = ["ActionMask", "ActionScaling"]
