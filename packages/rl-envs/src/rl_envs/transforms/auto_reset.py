"""AutoResetTransform and AutoResetEnv: for envs that reset themselves when an episode ends."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Compose, Composite, EnvBase, Transform, TransformedEnv
from rl_core.keys import DONE, RESET, NestedKey
from rl_envs.transforms._common import leaf_keys


def _fill_value(name: str, value: Any, kind: type) -> Any:
    if name == "fill_float":
        if value == "nan":
            return float("nan")
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif name == "fill_int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(value, bool):
        return value
    raise TypeError(f"AutoResetTransform: expected {name} as {kind.__name__}, got {value!r}.")


class AutoResetTransform(Transform):
    """Serves the reset of an env that resets itself at the end of each episode.

    Such an env (a simulator or vector env in "same step" autoreset mode) returns, at the
    step where an episode ends, the first observation of the next episode in ``"next"``
    instead of the final one. This transform keeps those observations and hands them out at
    the reset that follows (the partial reset of ``step_and_maybe_reset`` and rollouts, or a
    ``reset()`` call) without calling the env's ``reset``; the other transforms' resets run
    as usual. With ``replace`` (the default) the observations in ``"next"`` of such a step,
    which belong to the next episode, are replaced with fill values (NaN for floating dtypes,
    ``fill_int`` for integers, ``fill_bool`` for booleans) so they cannot be mistaken for the
    final observation; the specs are not changed (a filled value may lie outside them).
    A reset of a sub-env with no stored observation (the first reset, or one in the middle of
    an episode) resets the env below. On a plain TensorDict the transform does nothing.

    The transform must come first, on the env that resets itself:
    ``TransformedEnv(env, Compose(AutoResetTransform(), ...))``.

    Args:
        replace: fill the ``"next"`` observations of a step that ends an episode. Defaults
            to ``True``.
        fill_float: the fill of floating entries, ``"nan"`` or a number.
        fill_int: the fill of integer entries.
        fill_bool: the fill of boolean entries.

    Raises:
        TypeError: a fill value of the wrong type.
        ValueError: (on the specs) the transform is not the first one on the env below.

    Examples:
        >>> t = AutoResetTransform()
        >>> t.replace, t.fill_int
        (True, -1)
    """

    def __init__(
        self,
        *,
        replace: bool | None = None,
        fill_float: str | float = "nan",
        fill_int: int = -1,
        fill_bool: bool = False,
    ) -> None:
        super().__init__()
        self.replace = True if replace is None else bool(replace)
        self.fill_float = _fill_value("fill_float", fill_float, float)
        self.fill_int = _fill_value("fill_int", fill_int, int)
        self.fill_bool = _fill_value("fill_bool", fill_bool, bool)
        self.__dict__.update(_saved=None, _pending=None, _observation_keys=None)

    # ------------------------------------------------------------------ specs
    def transform_output_spec(self, output_spec: Composite) -> Composite:
        container = self.container
        transforms = list(container.transforms) if hasattr(container, "transforms") else [self]
        parent = self.parent
        if transforms[0] is not self or isinstance(parent, TransformedEnv):
            raise ValueError(
                "AutoResetTransform: expected to be the first transform, directly on the env "
                "that resets itself (TransformedEnv(env, Compose(AutoResetTransform(), ...))); "
                "the stored observations stand for that env's reset output."
            )
        keys = leaf_keys(output_spec["full_observation_spec"])
        self.__dict__["_observation_keys"] = keys
        return output_spec

    # ------------------------------------------------------------------ env path
    def _fill(self, value: torch.Tensor) -> Any:
        if value.dtype.is_floating_point:
            return self.fill_float
        if value.dtype is torch.bool:
            return self.fill_bool
        return self.fill_int

    def _keys(self) -> list[NestedKey]:
        keys = self._observation_keys
        if keys is None:
            parent = self.parent
            if parent is None:
                raise RuntimeError("AutoResetTransform: the transform is in no env.")
            keys = self.__dict__["_observation_keys"] = list(parent.observation_keys)
        return keys

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        done = next_tensordict.get(DONE)
        batch = next_tensordict.batch_size
        finished = done.reshape(*batch, -1).any(-1)
        if not bool(finished.any()):
            return next_tensordict
        saved, pending = self._saved, self._pending
        for key in self._keys():
            value = next_tensordict.get(key)
            row = finished.reshape(*batch, *([1] * (value.ndim - len(batch))))
            if saved is None:
                saved = next_tensordict.empty()
            old = saved.get(key, None)
            saved.set(key, value if old is None else torch.where(row, value, old))
            if self.replace:
                fill = torch.full_like(value, self._fill(value))
                next_tensordict.set(key, torch.where(row, fill, value))
        self.__dict__["_saved"] = saved
        self.__dict__["_pending"] = finished if pending is None else pending | finished
        return next_tensordict

    def intercept_reset(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        pending = self._pending
        if pending is None:
            return None
        mask = None if tensordict is None else tensordict.get(RESET, None)
        if mask is None:
            wanted = torch.ones_like(pending)
        else:
            wanted = mask.reshape(*pending.shape, -1).any(-1)
        if not bool((wanted & ~pending).any()):
            # Every sub-env to reset has its first observation stored: serve them.
            self.__dict__["_pending"] = pending & ~wanted
            out = self._saved.clone(recurse=False)
            out.update(self.parent.full_done_spec.zero())
            return out
        # The env below resets (some sub-env has nothing stored): what was stored for the
        # sub-envs it resets is stale.
        self.__dict__["_pending"] = pending & ~wanted
        return None

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def extra_repr(self) -> str:
        return f"replace={self.replace}"


class AutoResetEnv(TransformedEnv):
    """A TransformedEnv over an env that resets itself, whose first transform is always an
    :class:`AutoResetTransform`.

    Args:
        env: the env that resets itself at the end of each episode.
        transform: the transforms to apply after the AutoResetTransform (a Transform or a
            Compose), or ``None``. A Compose whose first transform is an AutoResetTransform
            (or an AutoResetTransform alone) is used as it is, so that its fill values are
            kept; otherwise ``AutoResetTransform()`` is put first.

    Raises:
        ValueError: ``insert_transform`` at index 0 (before the AutoResetTransform).

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> env = AutoResetEnv(CountingEnv(max_count=3))
        >>> type(env.transform[0]).__name__
        'AutoResetTransform'
    """

    def __init__(self, env: EnvBase, transform: Transform | None = None) -> None:
        if transform is None:
            transform = Compose(AutoResetTransform())
        elif isinstance(transform, AutoResetTransform):
            transform = Compose(transform)
        elif not (
            isinstance(transform, Compose)
            and len(transform)
            and isinstance(transform[0], AutoResetTransform)
        ):
            transform = Compose(AutoResetTransform(), transform)
        super().__init__(env, transform)

    def insert_transform(self, index: int, transform: Transform) -> TransformedEnv:
        if index == 0 or index < -len(self._as_compose()):
            raise ValueError(
                "AutoResetEnv.insert_transform: the AutoResetTransform must stay first; "
                f"expected an index >= 1, got {index}."
            )
        return super().insert_transform(index, transform)


__all__ = ["AutoResetEnv", "AutoResetTransform"]
