"""Transform: the base of every env and data transform."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core._accel.seam import declared_fusable
from rl_core.keys import NestedKey, as_key_list
from rl_core.specs import Composite


def _as_keys(keys: NestedKey | Sequence[NestedKey] | None, where: str, arg: str) -> list[NestedKey]:
    return as_key_list(keys, f"{where}: {arg}")


class Transform(nn.Module):
    """Changes what an env shows (observations, rewards, specs) or reads (actions).

    A transform sits in a :class:`~rl_core.transforms.TransformedEnv`, alone or in a
    :class:`~rl_core.transforms.Compose`, and the same object also runs on plain TensorDicts
    (``transform(td)``), e.g. on replay-buffer samples.

    Hooks a subclass overrides (each has a working default):

    - ``_apply_transform(value)``: maps one tensor; the default ``_call`` applies it to every
      ``in_keys[i]`` present and writes ``out_keys[i]``.
    - ``_call(td)``: the forward path on a TensorDict (``forward`` and the default ``_step``
      and ``_reset`` run it).
    - ``_step(tensordict, next_tensordict)``: the env step; ``tensordict`` is the root the
      policy wrote into, ``next_tensordict`` the env's output. Returns the new "next".
    - ``_reset(tensordict, tensordict_reset)``: the env reset; ``tensordict`` is the input of
      ``reset`` (``None`` or with ``"_reset"`` masks). Returns the new reset output.
    - :meth:`intercept_reset` ``(tensordict)``: lets a transform stand in for the base env's
      reset (envs that reset themselves, see ``AutoResetTransform`` in rl-envs).
    - ``_inv_apply_transform(value)`` / ``_inv_call(td)``: the inverse path, from the keys the
      policy writes (``out_keys_inv``) to the keys the base env reads (``in_keys_inv``).
    - ``transform_observation_spec``, ``transform_reward_spec``, ``transform_done_spec``,
      ``transform_action_spec``, ``transform_state_spec``: map the spec the transform receives
      (as the env below it shows it) to the spec it shows. Defaults return it unchanged.

    These methods are the reference: a transform needs nothing else to be correct. A faster
    route (numpy rows) is an optional plan registered beside the plan machinery
    (``register_lane_plan`` of ``rl_core._accel.seam``); ``rl_core.testing.check_step_plan``
    tells whether it still gives what these methods give.

    Args:
        in_keys: keys read on the forward path.
        out_keys: keys written on the forward path; default ``in_keys``.
        in_keys_inv: keys the base env reads on the inverse path.
        out_keys_inv: keys the policy writes, read by the inverse path; default ``in_keys_inv``.
    """

    def __init__(
        self,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        in_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
        out_keys_inv: NestedKey | Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        self.in_keys = _as_keys(in_keys, name, "in_keys")
        self.out_keys = (
            _as_keys(out_keys, name, "out_keys") if out_keys is not None else list(self.in_keys)
        )
        self.in_keys_inv = _as_keys(in_keys_inv, name, "in_keys_inv")
        self.out_keys_inv = (
            _as_keys(out_keys_inv, name, "out_keys_inv")
            if out_keys_inv is not None
            else list(self.in_keys_inv)
        )
        for first, second, a, b in (
            (self.in_keys, self.out_keys, "in_keys", "out_keys"),
            (self.in_keys_inv, self.out_keys_inv, "in_keys_inv", "out_keys_inv"),
        ):
            if len(first) != len(second):
                raise ValueError(
                    f"{name}: expected as many {b} as {a}, got {len(second)} {b} for "
                    f"{len(first)} {a} ({first} -> {second})."
                )
        self.__dict__["_container"] = None

    # ------------------------------------------------------------------ data path
    def _apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(
            f"{type(self).__name__} maps no single tensor: it overrides _call/_step instead, "
            f"or a subclass must implement _apply_transform."
        )

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(in_key, None)
            if value is not None:
                tensordict.set(out_key, self._apply_transform(value))
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Applies the transform to a TensorDict outside an env (e.g. a replay-buffer sample)."""
        return self._call(tensordict)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(next_tensordict)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    def intercept_reset(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        """The base env's reset output, given by the transform instead of the base env.

        :class:`~rl_core.transforms.TransformedEnv` calls it on every reset, before it resets
        its base env, with the ``tensordict`` given to ``reset`` (``None``, or holding
        ``"_reset"`` masks). A transform returns ``None`` (the default) to let the base env
        reset, or a TensorDict shaped like the env's batch holding what the base env's
        ``reset`` would give (its observations; missing done flags are filled in as False):
        the base env is then not reset, and every transform's ``_reset`` runs on that output
        as usual. Rows of sub-envs that are not reset are ignored (the env keeps their
        entries). In a :class:`~rl_core.transforms.Compose` the first transform that answers
        wins; since the answer stands for the base env's own output, a transform that
        intercepts should be the first of the list.

        Args:
            tensordict: the input of ``reset``.

        Returns:
            ``None``, or the reset output of the base env.
        """
        return None

    def skipped_steps(self, tensordict: TensorDictBase) -> torch.Tensor | None:
        """The sub-envs whose step the transform skips, or ``None`` (the default) to skip none.

        :class:`~rl_core.transforms.TransformedEnv` calls it at each step, before the inverse
        path, with the TensorDict the policy wrote into, where a transform of its list
        overrides it (``ConditionalSkip`` in rl-envs does). A skipped sub-env stays where it
        is: the step shows its current observations and done flags again and zero rewards,
        and none of the env's transforms runs on those rows. When every sub-env is skipped
        the base env is not stepped; otherwise it steps every sub-env (an env that keeps its
        state outside the TensorDict then moves on in the skipped ones too) and the skipped
        rows of its output are replaced. In a :class:`~rl_core.transforms.Compose` the
        masks of its transforms are OR-ed.

        Args:
            tensordict: the step's input.

        Returns:
            ``None``, or a bool tensor of the env's batch shape (True: skipped).
        """
        return None

    def transform_env_batch_size(self, batch_size: torch.Size) -> torch.Size:
        """The batch size of the env this transform shows, given that of the env below it
        (unchanged by default; ``BatchSizeTransform`` in rl-envs changes it)."""
        return batch_size

    def _inv_apply_transform(self, value: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(
            f"{type(self).__name__} has in_keys_inv but implements neither "
            f"_inv_apply_transform nor _inv_call."
        )

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            value = tensordict.get(out_key, None)
            if value is not None:
                tensordict.set(in_key, self._inv_apply_transform(value))
        return tensordict

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The inverse path on a shallow copy of ``tensordict`` (the input is left as it is)."""
        return self._inv_call(tensordict.copy())

    @property
    def fusable(self) -> bool:
        """Whether the transform keeps an env's step-then-reset sequence as it is: its
        ``_step`` maps the step output (it does not step or reset the env, and leaves the done
        flags as they are) and its ``_reset`` maps the reset output. A TransformedEnv whose
        transforms all say so may step its base env through the base env's one-call step and
        reset of finished sub-envs (its step plan, ``rl_core.envs.StepPlan``); the result is
        the same. False by default.

        The declarations live beside the plans, not in the classes: a package registers its
        transform types (``rl_core._accel.seam.declare_fusable``, as
        ``rl_core.transforms._plans`` does for rl-core's); a subclass may still set the class
        attribute ``fusable`` itself. It holds for the declared class: a subclass that
        overrides ``_call``, ``_step`` or ``_reset`` is not fused unless it is declared
        itself (``rl_core._accel.seam.fusable_as_declared`` applies that rule).
        """
        return declared_fusable(self)

    @property
    def has_inverse(self) -> bool:
        """Whether the inverse path does anything (the env skips it otherwise)."""
        return bool(self.in_keys_inv) or type(self)._inv_call is not Transform._inv_call

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        """Maps ``Composite(full_observation_spec, full_reward_spec, full_done_spec)``."""
        output_spec["full_observation_spec"] = self.transform_observation_spec(
            output_spec["full_observation_spec"]
        )
        output_spec["full_reward_spec"] = self.transform_reward_spec(
            output_spec["full_reward_spec"]
        )
        output_spec["full_done_spec"] = self.transform_done_spec(output_spec["full_done_spec"])
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        """Maps ``Composite(full_action_spec, full_state_spec)``."""
        input_spec["full_action_spec"] = self.transform_action_spec(input_spec["full_action_spec"])
        input_spec["full_state_spec"] = self.transform_state_spec(input_spec["full_state_spec"])
        return input_spec

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return observation_spec

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return reward_spec

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        return done_spec

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        return action_spec

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return state_spec

    # ------------------------------------------------------------------ container and parent
    @property
    def container(self) -> Any:
        """The TransformedEnv or Compose holding this transform, or ``None``."""
        return self._container

    def set_container(self, container: Any) -> None:
        current = self._container
        # As TorchRL: a transform outside any env (alone, or in a Compose of none) may move.
        if current is not None and current is not container and self.parent is not None:
            raise ValueError(
                f"{type(self).__name__}: this transform already belongs to a "
                f"{type(current).__name__} of an env; a transform sits in one env at a time. "
                f"Use transform.clone() to put a copy in another."
            )
        self.__dict__["_container"] = container

    def reset_parent(self) -> None:
        """Detaches the transform from its container."""
        self.__dict__["_container"] = None

    @property
    def parent(self) -> Any:
        """The env as this transform sees it (an ``EnvBase``): the base env plus the
        transforms before it; ``None`` outside an env.

        The container answers (its ``_env_before(transform)``: ``TransformedEnv`` gives its
        base env, ``Compose`` its own parent with the transforms before this one), so this
        class imports no env."""
        container = self._container
        env_before = None if container is None else getattr(container, "_env_before", None)
        return None if env_before is None else env_before(self)

    def _empty_env_cache(self) -> None:
        """Tells the env holding this transform that its specs must be recomputed."""
        container = self._container
        while container is not None:
            empty = getattr(container, "empty_cache", None)
            if empty is not None:
                empty()
                return
            container = getattr(container, "_container", None)

    def clone(self) -> Transform:
        """A deep copy that belongs to no env."""
        container = self._container
        self.__dict__["_container"] = None
        try:
            out = copy.deepcopy(self)
        finally:
            self.__dict__["_container"] = container
        return out

    def close(self) -> None:
        """Releases what the transform holds; called by the env's ``close``."""

    def extra_repr(self) -> str:
        parts = []
        if self.in_keys:
            parts.append(f"in_keys={self.in_keys}")
        if self.out_keys and self.out_keys != self.in_keys:
            parts.append(f"out_keys={self.out_keys}")
        if self.in_keys_inv:
            parts.append(f"in_keys_inv={self.in_keys_inv}")
        if self.out_keys_inv and self.out_keys_inv != self.in_keys_inv:
            parts.append(f"out_keys_inv={self.out_keys_inv}")
        return ", ".join(parts)


__all__ = ["Transform"]
