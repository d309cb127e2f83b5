"""Compose: transforms applied in order, kept as a list."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tensordict import TensorDictBase
from torch import nn

from rl_core.envs.base import transformed
from rl_core.specs import Composite
from rl_core.transforms.transform import Transform


class Compose(Transform):
    """Several transforms as one: forward paths and specs in order, the inverse path reversed.

    Args:
        *transforms: the transforms, the first one closest to the base env.

    Examples:
        >>> from rl_core.transforms import Compose, InitTracker, StepCounter
        >>> t = Compose(StepCounter(max_steps=10), InitTracker())
        >>> len(t), type(t[1]).__name__
        (2, 'InitTracker')
    """

    def __init__(self, *transforms: Transform, _owner: bool = True) -> None:
        super().__init__()
        for t in transforms:
            if not isinstance(t, Transform):
                raise TypeError(f"Compose: expected Transform objects, got {type(t).__name__}.")
        self.__dict__["_owner"] = _owner
        self.transforms = nn.ModuleList(transforms)
        if _owner:
            for t in transforms:
                t.set_container(self)

    # ------------------------------------------------------------------ list behaviour
    def __len__(self) -> int:
        return len(self.transforms)

    def __iter__(self) -> Iterator[Transform]:
        return iter(self.transforms)

    def __getitem__(self, index: int | slice) -> Transform:
        if isinstance(index, slice):
            return Compose(*self.transforms[index], _owner=False)
        return self.transforms[index]

    def append(self, transform: Transform) -> None:
        """Adds a transform at the end (outermost)."""
        self.insert(len(self.transforms), transform)

    def insert(self, index: int, transform: Transform) -> None:
        """Inserts a transform at ``index`` (negative indices count from the end)."""
        if not isinstance(transform, Transform):
            raise TypeError(
                f"Compose.insert: expected a Transform, got {type(transform).__name__}."
            )
        n = len(self.transforms)
        if not -n - 1 <= index <= n:
            raise IndexError(
                f"Compose.insert: index {index} is out of range for {n} transforms "
                f"(expected {-n - 1} <= index <= {n})."
            )
        if index < 0:
            index += n + 1
        transform.set_container(self)
        self.transforms.insert(index, transform)
        self._empty_env_cache()

    def pop(self, index: int = -1) -> Transform:
        """Removes and returns the transform at ``index`` (the last by default)."""
        n = len(self.transforms)
        if not -n <= index < n:
            raise IndexError(f"Compose.pop: index {index} is out of range for {n} transforms.")
        transform = self.transforms[index]
        del self.transforms[index]
        transform.reset_parent()
        self._empty_env_cache()
        return transform

    # ------------------------------------------------------------------ data path
    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict = t._call(tensordict)
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            tensordict = t(tensordict)
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for t in self.transforms:
            next_tensordict = t._step(tensordict, next_tensordict)
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for t in self.transforms:
            tensordict_reset = t._reset(tensordict, tensordict_reset)
        return tensordict_reset

    def intercept_reset(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        for t in self.transforms:
            out = t.intercept_reset(tensordict)
            if out is not None:
                return out
        return None

    def skipped_steps(self, tensordict: TensorDictBase) -> Any:
        mask = None
        for t in self.transforms:
            found = t.skipped_steps(tensordict)
            if found is not None:
                mask = found if mask is None else mask | found
        return mask

    def transform_env_batch_size(self, batch_size: Any) -> Any:
        for t in self.transforms:
            batch_size = t.transform_env_batch_size(batch_size)
        return batch_size

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for t in reversed(self.transforms):
            tensordict = t._inv_call(tensordict)
        return tensordict

    @property
    def has_inverse(self) -> bool:
        return any(t.has_inverse for t in self.transforms)

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for t in self.transforms:
            output_spec = t.transform_output_spec(output_spec)
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        for t in self.transforms:
            input_spec = t.transform_input_spec(input_spec)
        return input_spec

    def _chain(self, method: str, spec: Composite) -> Composite:
        for t in self.transforms:
            spec = getattr(t, method)(spec)
        return spec

    # Each part's spec through every transform in order, as TorchRL's Compose.
    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._chain("transform_observation_spec", observation_spec)

    def transform_reward_spec(self, reward_spec: Composite) -> Composite:
        return self._chain("transform_reward_spec", reward_spec)

    def transform_done_spec(self, done_spec: Composite) -> Composite:
        return self._chain("transform_done_spec", done_spec)

    def transform_action_spec(self, action_spec: Composite) -> Composite:
        return self._chain("transform_action_spec", action_spec)

    def transform_state_spec(self, state_spec: Composite) -> Composite:
        return self._chain("transform_state_spec", state_spec)

    @property
    def parent(self) -> Any:
        return super().parent if self._owner else None

    def _env_before(self, transform: Transform) -> Any:
        """The env as ``transform`` (one of this Compose's) sees it: this Compose's parent
        plus the transforms before ``transform`` (see :attr:`Transform.parent`)."""
        env = self.parent
        if env is None:
            return None
        index = next(i for i, t in enumerate(self.transforms) if t is transform)
        preceding = list(self.transforms[:index])
        if not preceding:
            return env
        return transformed(env, Compose(*preceding, _owner=False))

    def close(self) -> None:
        for t in self.transforms:
            t.close()

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(t).replace("\n", "\n    ") for t in self.transforms)
        return f"Compose(\n    {inner})" if inner else "Compose()"


__all__ = ["Compose"]
