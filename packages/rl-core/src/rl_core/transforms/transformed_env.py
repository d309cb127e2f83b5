"""TransformedEnv: an env seen through a transform."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core._accel.seam import StepPlan, TransformedEnvPlan, TransformStack, complete_done_flags
from rl_core.envs import EnvBase
from rl_core.envs._plans import built_plan
from rl_core.envs.base import _register_transformed_env
from rl_core.envs.trajectory_writer import TrajectoryWriter
from rl_core.exploration import _BlockSwitch
from rl_core.specs import Composite
from rl_core.transforms.compose import Compose
from rl_core.transforms.transform import Transform


def auto_unwrap_transformed_env(allow_none: bool = False) -> bool | None:
    """``TransformedEnv``'s default ``auto_unwrap``: the innermost
    :class:`set_auto_unwrap_transformed_env`'s, else ``False`` (``None`` with ``allow_none``)."""
    mode = set_auto_unwrap_transformed_env.current()
    return mode if mode is not None or allow_none else False


class set_auto_unwrap_transformed_env(_BlockSwitch):
    """Sets ``TransformedEnv``'s default ``auto_unwrap`` inside a block (or a decorated call).

    Args:
        mode: ``True``: wrapping a ``TransformedEnv`` merges its transforms (TorchRL 0.14's
            default); ``False``: it nests (the default here).
    """

    _var = ContextVar("rl_core_auto_unwrap", default=None)

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode))


def _overrides(transform: Transform, name: str) -> bool:
    """Whether ``transform`` (or a transform of a Compose, at any depth) overrides the
    :class:`Transform` method ``name``."""
    if isinstance(transform, Compose):
        return any(_overrides(t, name) for t in transform.transforms)
    return getattr(type(transform), name) is not getattr(Transform, name)


class TransformedEnv(EnvBase):
    """Wraps an env and a transform (or a :class:`Compose` of them).

    Specs are the base env's specs mapped by the transform, computed once and recomputed when
    the transform list changes (``append_transform``, ``insert_transform``, ``Compose.pop``) or
    on :meth:`empty_cache`. Attributes the wrapper does not have are looked up on the base env.

    Args:
        env: the env to wrap.
        transform: a Transform, or ``None`` for an empty :class:`Compose`.

    Keyword Args:
        auto_unwrap: with ``True``, wrapping a ``TransformedEnv`` puts the inner one's
            transforms (cloned) and ``transform`` in one Compose over the inner base env, as
            TorchRL 0.14 does by default. Defaults to :func:`auto_unwrap_transformed_env`
            (``False`` outside a :class:`set_auto_unwrap_transformed_env` block: the inner env
            is nested, TorchRL's announced default).

    Examples:
        >>> from rl_core.transforms import StepCounter, TransformedEnv
        >>> from rl_core.testing import CountingEnv
        >>> env = TransformedEnv(CountingEnv(max_count=100), StepCounter(max_steps=5))
        >>> traj = env.rollout(10)
        >>> traj["next", "step_count"].squeeze(-1).tolist()
        [1, 2, 3, 4, 5]
        >>> traj["next", "truncated"][-1].item(), traj["next", "terminated"][-1].item()
        (True, False)
    """

    def __init__(
        self,
        env: EnvBase,
        transform: Transform | None = None,
        *,
        auto_unwrap: bool | None = None,
    ) -> None:
        if not isinstance(env, EnvBase):
            raise TypeError(f"TransformedEnv: expected an EnvBase, got {type(env).__name__}.")
        if auto_unwrap is None:
            auto_unwrap = auto_unwrap_transformed_env()
        if auto_unwrap and type(env) is TransformedEnv and type(self) is TransformedEnv:
            outer = [] if transform is None else [transform]
            if type(transform) is Compose:
                outer = list(transform.transforms)
            inner = env.transform.clone()
            inner = list(inner.transforms) if type(inner) is Compose else [inner]
            env, transform = env.base_env, Compose(*inner, *outer)
        # The device is the transformed specs' (see ``device``), found when first asked for.
        super().__init__(
            device=None,
            batch_size=env.batch_size,
            allow_done_after_reset=env._allow_done_after_reset,
        )
        self.base_env = env
        self.transform = Compose() if transform is None else transform

    @property
    def base_env(self) -> EnvBase:
        """The wrapped env."""
        return self._modules["base_env"]

    # ------------------------------------------------------------------ the transform
    @property
    def transform(self) -> Transform:
        return self._modules["_transform"]

    @transform.setter
    def transform(self, transform: Transform) -> None:
        if not isinstance(transform, Transform):
            raise TypeError(
                f"TransformedEnv.transform: expected a Transform, got {type(transform).__name__}."
            )
        old = self._modules.get("_transform")
        if old is not None and old is not transform:
            old.reset_parent()
        transform.set_container(self)
        self._modules["_transform"] = transform
        self.empty_cache()

    def _env_before(self, transform: Transform) -> EnvBase:
        """The env as its transform sees it: the base env (see :attr:`Transform.parent`)."""
        return self.base_env

    def _as_compose(self) -> Compose:
        transform = self.transform
        if isinstance(transform, Compose):
            return transform
        transform.reset_parent()
        compose = Compose(transform)
        self.transform = compose
        return compose

    def append_transform(self, transform: Transform) -> TransformedEnv:
        """Adds a transform on the outside, in place; returns ``self``."""
        self._as_compose().append(transform)
        self.empty_cache()
        return self

    def insert_transform(self, index: int, transform: Transform) -> TransformedEnv:
        """Inserts a transform at ``index`` of the transform list, in place; returns ``self``."""
        self._as_compose().insert(index, transform)
        self.empty_cache()
        return self

    def empty_cache(self) -> None:
        """Forgets the computed specs and key lists; the next access recomputes them."""
        self._cache.clear()

    # ------------------------------------------------------------------ specs
    @property
    def output_spec(self) -> Composite:
        return self._cached(
            "output_spec",
            lambda: self.transform.transform_output_spec(self.base_env.output_spec.clone()),
        )

    @property
    def input_spec(self) -> Composite:
        return self._cached(
            "input_spec",
            lambda: self.transform.transform_input_spec(self.base_env.input_spec.clone()),
        )

    def _set_spec(self, parent: Composite, name: str, spec: Composite) -> None:
        raise AttributeError(
            "TransformedEnv: its specs are the base env's specs mapped by the transform and "
            "cannot be set; set them on the base env (env.base_env) or add a transform."
        )

    @property
    def batch_size(self) -> torch.Size:
        """The base env's batch size as the transforms show it
        (:meth:`Transform.transform_env_batch_size`; unchanged by most transforms)."""
        size = self._cache.get("batch_size")
        if size is None:
            size = self.base_env.batch_size
            transform = self._modules.get("_transform")
            if transform is not None:  # set once __init__ has set the transform
                size = torch.Size(transform.transform_env_batch_size(size))
                self._cache["batch_size"] = size
        return size

    @property
    def device(self) -> torch.device | None:
        """The device of the transformed outputs: the base env's unless a transform moves
        every output elsewhere (``DeviceCastTransform``), read from the transformed specs."""
        return self._cached("device", self._transformed_device)

    def _transformed_device(self) -> torch.device | None:
        shown = self.output_spec.device
        return shown if shown is not None else self.base_env.device

    # ------------------------------------------------------------------ contract
    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        return self.transform._reset(tensordict, self.base_reset(tensordict, **kwargs))

    def base_reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        """The base env's reset output: a transform's :meth:`Transform.intercept_reset`
        answer, else the base env's own reset.

        The base env gets the caller's entries (reset inputs such as a query or a state)
        except this env's outputs (observations, rewards, done flags) that the base env does
        not read: those may be transformed ones (other shapes, dtypes), and this env's own
        ``reset`` merges them back for the sub-envs not reset.
        """
        tensordict_reset = self.transform.intercept_reset(tensordict)
        if tensordict_reset is None:
            inner = (
                None if tensordict is None else tensordict.exclude(*self.outputs_hidden_from_base())
            )
            tensordict_reset = self.base_env.reset(inner, **kwargs)
        return tensordict_reset

    def outputs_hidden_from_base(self) -> list:
        """This env's outputs (observations, rewards, done flags) that the base env does not
        read: :meth:`base_reset` leaves them out of what it hands the base env."""

        def keys() -> list:
            base = self.base_env
            read = {*base.reset_keys, *base.state_keys}
            outputs = [*self.observation_keys, *self.reward_keys, *self.done_keys]
            return [key for key in outputs if key not in read]

        return self._cached("outputs_hidden_from_base", keys)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        # The inverse transforms (where a transform has one), the base env's step with its
        # done flags completed, then the forward transforms.
        base, transform = self.base_env, self.transform
        skipped = self._skipped_steps(tensordict) if self._skips_steps() else None
        if skipped is not None and bool(skipped.all()):
            return self._skipped_output(tensordict)
        inner = transform.inv(tensordict) if self._has_inverse() else tensordict
        next_tensordict = base._step(inner)
        complete_done_flags(next_tensordict, base.done_levels(), type(base).__name__)
        next_tensordict = transform._step(tensordict, next_tensordict)
        if skipped is not None and bool(skipped.any()):
            kept = self._skipped_output(tensordict)
            for key, value in kept.items(include_nested=True, leaves_only=True):
                rows = skipped.reshape(*skipped.shape, *([1] * (value.ndim - skipped.ndim)))
                next_tensordict.set(key, torch.where(rows, value, next_tensordict.get(key)))
        return next_tensordict

    def _skips_steps(self) -> bool:
        return self._cached("skips_steps", lambda: _overrides(self.transform, "skipped_steps"))

    def _skipped_steps(self, tensordict: TensorDictBase) -> torch.Tensor | None:
        """The transforms' :meth:`Transform.skipped_steps` mask, checked against the batch."""
        mask = self.transform.skipped_steps(tensordict)
        if mask is None:
            return None
        mask = torch.as_tensor(mask, device=tensordict.device)
        batch = self.batch_size
        if mask.numel() == 1 and len(batch):
            mask = mask.reshape(()).expand(batch)
        if tuple(mask.shape) not in (tuple(batch), (*batch, 1)):
            raise ValueError(
                f"TransformedEnv: the transforms' skipped_steps gave a mask of shape "
                f"{tuple(mask.shape)}; expected the env's batch shape {tuple(batch)}."
            )
        return mask.reshape(batch).bool()

    def _skipped_output(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The step output of sub-envs whose step is skipped: their current observations and
        done flags again (as this env shows them), zero rewards."""
        out = tensordict.empty()
        for key in (*self.observation_keys, *self.done_keys):
            value = tensordict.get(key, None)
            if value is None:
                observed = key in self.observation_keys
                spec = self.full_observation_spec if observed else self.full_done_spec
                value = spec[key].zero()
            out.set(key, value.clone())
        for key in self.reward_keys:
            out.set(key, self.full_reward_spec[key].zero())
        return out

    def _make_step_plan(self) -> StepPlan | None:
        """The accelerated routes of this stack (``TransformedEnvPlan`` of the seam), where
        the base env has a step plan, no transform skips steps and the batch size is the
        base env's; see :class:`~rl_core.envs.StepPlan`. What the plan needs to know of the
        transforms is read here (:class:`~rl_core._accel.seam.TransformStack`)."""
        if self._skips_steps() or self.batch_size != self.base_env.batch_size:
            return None  # steps skipped or a batch size of its own: the reference path only
        base_plan = built_plan(self.base_env)
        if base_plan is None:
            return None
        transform = self.transform
        parts = list(transform) if isinstance(transform, Compose) else [transform]
        stack = TransformStack(
            transform=transform,
            lane_parts=list(transform) if type(transform) is Compose else [transform],
            intercepts_reset=any(
                type(t).intercept_reset is not Transform.intercept_reset for t in parts
            ),
            has_inverse=self._has_inverse(),
            trajectory_writer=TrajectoryWriter,
        )
        return TransformedEnvPlan(self, base_plan, stack)

    def _has_inverse(self) -> bool:
        return self._cached("has_inverse", lambda: self.transform.has_inverse)

    def _set_seed(self, seed: int | None) -> None:
        self.base_env._set_seed(seed)

    def close(self) -> None:
        self.transform.close()
        self.base_env.close()
        super().close()

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "transform":
            # nn.Module would register the module itself; route it through the property.
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("_") or "base_env" not in self._modules:
                raise
            return getattr(self._modules["base_env"], name)

    def __repr__(self) -> str:
        env = repr(self.base_env).replace("\n", "\n    ")
        transform = repr(self.transform).replace("\n", "\n    ")
        return f"TransformedEnv(\n    env={env},\n    transform={transform})"


_register_transformed_env(TransformedEnv)  # EnvBase.append_transform builds one

__all__ = ["TransformedEnv", "auto_unwrap_transformed_env", "set_auto_unwrap_transformed_env"]
