"""TransformedEnv: an env seen through a transform."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core.envs import EnvBase
from rl_core.envs._flags import complete_done_flags
from rl_core.fast_td import (
    batch_size_of,
    build_tensordict,
    device_of,
    entries,
    is_plain,
    only_tensors,
    set_leaf,
)
from rl_core.keys import DONE, NEXT, RESET, TERMINATED, TRUNCATED
from rl_core.specs import Composite
from rl_core.transforms._lane import RowLane, build_lane
from rl_core.transforms._replay import base_start, replay_random_rollout, replays
from rl_core.transforms.compose import Compose
from rl_core.transforms.transform import Transform

_NO_LANE: Any = object()


class TransformedEnv(EnvBase):
    """Wraps an env and a transform (or a :class:`Compose` of them).

    Specs are the base env's specs mapped by the transform, computed once and recomputed when
    the transform list changes (``append_transform``, ``insert_transform``, ``Compose.pop``) or
    on :meth:`empty_cache`. Attributes the wrapper does not have are looked up on the base env.

    Args:
        env: the env to wrap.
        transform: a Transform, or ``None`` for an empty :class:`Compose`.

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

    def __init__(self, env: EnvBase, transform: Transform | None = None) -> None:
        if not isinstance(env, EnvBase):
            raise TypeError(f"TransformedEnv: expected an EnvBase, got {type(env).__name__}.")
        # The device is the transformed specs' (see ``device``), found when first asked for.
        super().__init__(device=None, batch_size=env.batch_size)
        self.base_env = env
        self.transform = Compose() if transform is None else transform

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
        return self._modules["base_env"].batch_size  # without nn.Module's attribute lookup

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
        transform = self.transform
        tensordict_reset = self.__dict__.pop("_base_reset_output", None)
        if tensordict_reset is not None:
            # Given by ``_merge_reset_rows``: the base env's fused reset of finished sub-envs.
            return self._transform_reset(tensordict, tensordict_reset)
        if self._intercepts_reset():
            tensordict_reset = transform.intercept_reset(tensordict)
        if tensordict_reset is None:
            # The base env gets the caller's entries (reset inputs such as a query or a
            # state) except this env's outputs (observations, rewards, done flags) that the
            # base env does not read: those may be transformed ones (other shapes, dtypes),
            # and this env's own ``reset`` merges them back for the sub-envs not reset.
            inner = (
                None
                if tensordict is None
                else tensordict.exclude(*self._outputs_hidden_from_base())
            )
            tensordict_reset = self.base_env.reset(inner, **kwargs)
        return self._transform_reset(tensordict, tensordict_reset)

    def _transform_reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        """The transforms' reset of the base env's reset output: on the lane, if any."""
        lane = self._cache.get("row_lane", _NO_LANE)
        if lane is _NO_LANE:
            lane = self._cached("row_lane", self._build_lane)
        if lane is not None:
            return lane.reset(tensordict, tensordict_reset)
        return self.transform._reset(tensordict, tensordict_reset)

    def _build_lane(self) -> RowLane | None:
        """The numpy-row lane of the transforms (``_lane``): where the base env's outputs
        are numpy rows, transforms with lane plans compute on them without torch calls."""
        return build_lane(self)

    def _intercepts_reset(self) -> bool:
        """Whether a transform overrides :meth:`Transform.intercept_reset` (else it is not
        called)."""

        def find() -> bool:
            transform = self.transform
            parts = list(transform) if isinstance(transform, Compose) else [transform]
            return any(type(t).intercept_reset is not Transform.intercept_reset for t in parts)

        return self._cached("intercepts_reset", find)

    def _outputs_hidden_from_base(self) -> list:
        def keys() -> list:
            base = self.base_env
            read = {*base.reset_keys, *base.state_keys}
            outputs = [*self.observation_keys, *self.reward_keys, *self.done_keys]
            return [key for key in outputs if key not in read]

        return self._cached("outputs_hidden_from_base", keys)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        next_tensordict, _ = self._base_step(tensordict, fused=False)
        return next_tensordict

    def _step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any] | None:
        """The base env's fused step and reset (see :meth:`EnvBase._step_and_reset`), when it
        has one and every transform is ``fusable`` (none steps or resets the env, none
        changes done flags, none intercepts resets); ``None`` (step, then reset) otherwise.

        The transforms' ``_step`` runs on the step output; :meth:`_merge_reset_rows` then
        gives the base env's reset rows to the transforms' ``_reset`` through ``reset``, so
        the result is what ``step`` then ``reset`` give (an oracle test compares them).
        """
        fuses = self._cache.get("fused_step_reset")
        if fuses is None:
            fuses = self._cached("fused_step_reset", self._fuses_step_and_reset)
        return self._base_step(tensordict, fused=True) if fuses else None

    def _fuses_step_and_reset(self) -> bool:
        base = self.base_env
        return (
            type(base)._step_and_reset is not EnvBase._step_and_reset
            and self.transform._fusable_as_declared()
            and not self._intercepts_reset()
        )

    def _merge_reset_rows(self, next_root: TensorDictBase, pending: Any) -> TensorDictBase:
        base_pending, base_next = pending
        base = self.base_env
        plan = self._cache.get("direct_reset_plan", _NO_LANE)
        if plan is _NO_LANE:
            plan = self._cached("direct_reset_plan", self._direct_reset_plan)
        if plan is not None and type(next_root) is TensorDict:
            found = base._reset_entries(base_pending)
            if found is not None and found.keys() >= plan[1]:
                return self._reset_directly(next_root, found, plan[0])
        self._mark_finished(next_root)
        # The base env's next root as ``reset`` hands it to the base env (this env's outputs
        # left out, see ``_reset``), holding the base env's own observations and flags.
        if type(base_next) is tuple:
            # (entries, batch size, device) of a plain TensorDict of tensors, as _base_step
            # kept them.
            base_next = build_tensordict(*base_next)
        plan = self._cached("base_root_plan", self._base_root_plan)
        if plan is not None and is_plain(next_root) and is_plain(base_next):
            # Root-level keys only: the same entries, picked from the entry dicts.
            hidden, own = plan
            found = entries(base_next)
            base_root = self._base_root(next_root, hidden, {k: found[k] for k in own})
        else:
            base_root = next_root.exclude(*self._outputs_hidden_from_base(), *self.reset_keys)
            for key in (*base.observation_keys, *base.done_keys):
                base_root.set(key, base_next.get(key))
        self.__dict__["_base_reset_output"] = base._merge_reset_rows(base_root, base_pending)
        try:
            return self.reset(next_root)
        finally:
            self.__dict__.pop("_base_reset_output", None)

    def _direct_reset_plan(self) -> tuple[set[str], set[str]] | None:
        """For :meth:`_merge_reset_rows`: ``(keys left out of the base env's root, the base
        env's own observations and flags)`` (see :meth:`_base_root_plan`) where this env
        resets as TransformedEnv does (no override of ``reset`` or ``_reset``) and its done
        flags are at the root; else ``None``."""
        kind = type(self)
        if kind.reset is not EnvBase.reset or kind._reset is not TransformedEnv._reset:
            return None
        plan = self._cached("base_root_plan", self._base_root_plan)
        if plan is None or self._done_levels() != [()]:
            return None
        return plan[0], set(plan[1])

    def _reset_directly(
        self, next_root: TensorDict, found: dict[str, torch.Tensor], hidden: set[str]
    ) -> TensorDictBase:
        """``reset(next_root)`` after a reset of every sub-env whose entries the base env
        gave (``_reset_entries``): the base env's root built as :meth:`_merge_reset_rows`
        builds it, holding those entries, then the transforms' reset (given ``next_root``
        with its ``"_reset"`` masks, as ``reset`` gives it) and ``reset``'s completion and
        merge, with no masks: every one is set.

        Every sub-env finished, so the ``"_reset"`` mask that :meth:`_mark_finished` would
        write is the ``done`` flag itself (root-level flags: ``_direct_reset_plan``)."""
        set_leaf(next_root, RESET, entries(next_root)[DONE])
        fresh = self._transform_reset(next_root, self._base_root(next_root, hidden, found))
        return self._complete_reset(next_root, fresh, None, [()])

    @staticmethod
    def _base_root(
        next_root: TensorDict, hidden: set[str], own: dict[str, torch.Tensor]
    ) -> TensorDict:
        """The base env's next root for a fused reset: ``next_root``'s root entries but
        ``hidden`` (see :meth:`_base_root_plan`), then ``own`` (the base env's observations
        and flags)."""
        source = {k: v for k, v in entries(next_root).items() if k not in hidden}
        source.update(own)
        return build_tensordict(source, batch_size_of(next_root), device_of(next_root))

    def _base_root_plan(self) -> tuple[set[str], list[str]] | None:
        """For :meth:`_merge_reset_rows`: the root keys left out of the base env's root and
        the base env's own observations and flags; ``None`` when a key is nested."""
        base = self.base_env
        hidden = [*self._outputs_hidden_from_base(), *self.reset_keys, NEXT]
        own = [*base.observation_keys, *base.done_keys]
        if not all(isinstance(k, str) for k in (*hidden, *own)):
            return None
        return set(hidden), own

    def _base_step(
        self, tensordict: TensorDictBase, *, fused: bool
    ) -> tuple[TensorDictBase, Any] | None:
        modules = self._modules
        base, transform = modules["base_env"], modules["_transform"]
        has_inverse = self._cache.get("has_inverse")
        if has_inverse is None:
            has_inverse = self._has_inverse()
        inner = transform.inv(tensordict) if has_inverse else tensordict
        pending = None
        if fused:
            out = base._step_and_reset(inner)
            if out is None:
                return None
            next_tensordict, pending = out
        else:
            next_tensordict = base._step(inner)
        levels = base._cache.get("done_levels")
        if levels is None:
            levels = base._done_levels()
        # The transforms see complete done flags; the common case (the three flags at the
        # root) needs no completion.
        names = entries(next_tensordict) if is_plain(next_tensordict) else ()
        if not (levels == [()] and DONE in names and TERMINATED in names and TRUNCATED in names):
            complete_done_flags(next_tensordict, levels, type(base).__name__)
        if pending is not None:
            # The base env's outputs as it gave them, before the transforms map them: a
            # shallow copy, for a plain TensorDict of tensors its entries in a new dict with
            # its batch size and device (the direct reset of _merge_reset_rows reads none).
            if names and only_tensors(names.values()):
                kept = (dict(names), batch_size_of(next_tensordict), device_of(next_tensordict))
            else:
                kept = next_tensordict.copy()
            pending = (pending, kept)
        lane = self._cache.get("row_lane", _NO_LANE)
        if lane is _NO_LANE:
            lane = self._cached("row_lane", self._build_lane)
        if lane is not None:
            return lane.step(tensordict, next_tensordict), pending
        return transform._step(tensordict, next_tensordict), pending

    def _random_rollout(
        self,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        """The base env's random-action loop with the transforms replayed on its trajectory
        (see ``rl_core.transforms._replay``), where the transforms only map the env's outputs
        and the base env has such a loop; ``None`` (the generic loop) otherwise."""
        if not replays(self):
            return None
        base_root = base_start(self, start)
        if base_root is None:
            return None
        traj = self.base_env._random_rollout(
            base_root,
            max_steps,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
        )
        if traj is None:
            return None
        return replay_random_rollout(
            self, start, traj, max_steps, break_when_any_done=break_when_any_done
        )

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


__all__ = ["TransformedEnv"]
