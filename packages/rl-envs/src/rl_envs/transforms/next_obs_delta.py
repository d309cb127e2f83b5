"""NextObservationDelta: ("next", obs) stored as a low-precision delta from obs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import NEXT, NestedKey
from rl_envs.transforms._common import leaf_keys

DELTA = "delta"
_EXCLUDED = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)


def _delta_key(key: NestedKey) -> tuple[str, ...]:
    return (DELTA, key) if isinstance(key, str) else (DELTA, *key)


class NextObservationDelta(Transform):
    """Stores ``("next", obs)`` as ``(next_obs - obs)`` in a low-precision dtype.

    One transform serves both sides:

    - in an env, each step writes ``("next", "delta", k) = (next_obs - obs).to(delta_dtype)``
      beside the full next observation (which the next step's policy reads); the reset
      writes zeros;
    - in a replay buffer, its inverse (run when data is written) drops the full
      ``("next", k)`` where its delta is present, so storage holds the delta only; a
      sampled batch gets ``("next", k) = k + ("next", "delta", k)`` back (in the dtype of
      ``k``, or ``restore_dtype``), the delta dropped with ``drop_delta``.

    The delta encodes the step itself, so the last step of an episode is rebuilt as well
    as any other, within the precision of ``delta_dtype``. A transform sits in one container
    at a time: give the buffer a copy of the env's (``transform.clone()``) or a second one
    with the same ``in_keys``.

    Args:
        in_keys: the observations. Defaults to every observation of the env below whose
            dtype is not in ``excluded_dtypes`` (on data outside an env: every key under
            ``("next", "delta")``).
        delta_dtype: the dtype of the deltas. Defaults to ``torch.float16``.
        restore_dtype: the dtype of the rebuilt next observation, or ``"root"`` (that of the
            observation at the root). Defaults to ``"root"``.
        drop_delta: drop the delta once rebuilt. Defaults to ``True``.
        excluded_dtypes: dtypes never compressed (integers and booleans by default).

    Raises:
        KeyError: a rebuild whose root observation is missing.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = NextObservationDelta(in_keys=["obs"])
        >>> td = TensorDict(obs=torch.tensor([1.0, 2.0]))
        >>> td["next", "delta", "obs"] = torch.tensor([0.5, -1.0], dtype=torch.float16)
        >>> t(td)["next", "obs"].tolist()
        [1.5, 1.0]
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        *,
        delta_dtype: torch.dtype = torch.float16,
        restore_dtype: torch.dtype | Literal["root"] = "root",
        drop_delta: bool = True,
        excluded_dtypes: tuple[torch.dtype, ...] = _EXCLUDED,
    ) -> None:
        super().__init__(in_keys=in_keys)
        if restore_dtype != "root" and not isinstance(restore_dtype, torch.dtype):
            raise TypeError(
                f"NextObservationDelta: expected restore_dtype as a torch.dtype or 'root', got "
                f"{restore_dtype!r}."
            )
        self.delta_dtype = delta_dtype
        self.restore_dtype = restore_dtype
        self.drop_delta = drop_delta
        self.excluded_dtypes = tuple(excluded_dtypes)
        self.__dict__["_keys_from_env"] = in_keys is None

    # ------------------------------------------------------------------ specs (env side)
    def _select_keys(self, observations: Composite) -> None:
        if self._keys_from_env:
            self.in_keys = [
                k
                for k in leaf_keys(observations)
                if (k if isinstance(k, str) else k[0]) != DELTA
                and observations[k].dtype is not None
                and observations[k].dtype not in self.excluded_dtypes
            ]

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        observations = output_spec["full_observation_spec"]
        self._select_keys(observations)
        for key in self.in_keys:
            spec = observations[key]
            observations[_delta_key(key)] = Unbounded(
                shape=spec.shape, device=spec.device, dtype=self.delta_dtype
            )
        return output_spec

    def _env_keys(self) -> list[NestedKey]:
        if self._keys_from_env and not self.in_keys:
            parent = self.parent
            if parent is None:
                raise RuntimeError("NextObservationDelta: a step outside an env.")
            self._select_keys(parent.full_observation_spec)
        return self.in_keys

    # ------------------------------------------------------------------ env side
    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self._env_keys():
            obs = tensordict.get(key)
            delta = next_tensordict.get(key) - obs.to(next_tensordict.get(key).dtype)
            next_tensordict.set(_delta_key(key), delta.to(self.delta_dtype))
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for key in self._env_keys():
            obs = tensordict_reset.get(key)
            tensordict_reset.set(_delta_key(key), torch.zeros_like(obs, dtype=self.delta_dtype))
        return tensordict_reset

    # ------------------------------------------------------------------ buffer side
    def _data_keys(self, tensordict: TensorDictBase) -> list[NestedKey]:
        if self.in_keys:
            return self.in_keys
        deltas = tensordict.get((NEXT, DELTA), None)
        if not isinstance(deltas, TensorDictBase):
            return []
        return list(deltas.keys(include_nested=True, leaves_only=True))

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        nested = tensordict.get(NEXT, None)
        if not isinstance(nested, TensorDictBase):
            return tensordict
        for key in self._data_keys(tensordict):
            if nested.get(_delta_key(key), None) is not None and nested.get(key, None) is not None:
                del nested[key]
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for key in self._data_keys(tensordict):
            delta = tensordict.get((NEXT, *_delta_key(key)), None)
            if delta is None:
                continue
            obs = tensordict.get(key, None)
            if obs is None:
                raise KeyError(
                    f"NextObservationDelta: rebuilding ('next', {key!r}) needs the observation "
                    f"{key!r} at the root, which the data lacks."
                )
            dtype = obs.dtype if self.restore_dtype == "root" else self.restore_dtype
            full = obs.to(torch.promote_types(obs.dtype, delta.dtype)) + delta
            tensordict.set((NEXT, key) if isinstance(key, str) else (NEXT, *key), full.to(dtype))
            if self.drop_delta:
                del tensordict[(NEXT, *_delta_key(key))]
        if self.drop_delta:
            deltas = tensordict.get((NEXT, DELTA), None)
            if isinstance(deltas, TensorDictBase) and deltas.is_empty():
                del tensordict[(NEXT, DELTA)]
        return tensordict

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict)

    def extra_repr(self) -> str:
        return f"in_keys={self.in_keys}, delta_dtype={self.delta_dtype}"


__all__ = ["NextObservationDelta"]
