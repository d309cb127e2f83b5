"""Timer: the seconds spent in the policy, in the env's step and in its reset."""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform, Unbounded
from rl_core.keys import NestedKey


class Timer(Transform):
    """Writes how long the env's steps and resets and the policy between them took.

    Three float entries of the env's batch shape (every sub-env gets the same value), in
    seconds, measured with ``time.perf_counter``:

    - ``"time_step"``: in a step's output, from the moment the step reached this transform
      (before the inverse transforms and the env below) to its return here; 0 in a reset's.
    - ``"time_policy"``: in a step's output, from the end of the previous step or reset to
      the start of this step (the policy's time, in a rollout); 0 in a reset's.
    - ``"time_reset"``: in a reset's output, from the start of the reset (before the env
      below resets) to its end here; 0 in a step's.

    Args:
        out_keys: the three keys, in that order (step, policy, reset). Defaults to
            ``[f"{time_key}_step", f"{time_key}_policy", f"{time_key}_reset"]``.
        time_key: the prefix of the default keys. Defaults to ``"time"``.

    Raises:
        ValueError: ``out_keys`` is not three keys.
        RuntimeError: called outside an env (``transform(td)``).

    Examples:
        >>> from rl_core import TransformedEnv
        >>> from rl_envs import PendulumEnv
        >>> env = TransformedEnv(PendulumEnv(), Timer())
        >>> traj = env.rollout(3)
        >>> bool((traj["next", "time_step"] > 0).all()), traj["next", "time_reset"].tolist()
        (True, [0.0, 0.0, 0.0])
    """

    def __init__(self, out_keys: Sequence[NestedKey] | None = None, time_key: str = "time") -> None:
        if out_keys is None:
            out_keys = [f"{time_key}_step", f"{time_key}_policy", f"{time_key}_reset"]
        elif isinstance(out_keys, str) or len(out_keys) != 3:
            raise ValueError(
                f"Timer: expected three out_keys (step, policy, reset), got {out_keys!r}."
            )
        super().__init__()
        self.out_keys = list(out_keys)  # written, read from nothing
        self.time_key = time_key
        self.time_step_key, self.time_policy_key, self.time_reset_key = self.out_keys
        self._last_end: float | None = None
        self._step_start: float | None = None
        self._reset_start: float | None = None
        self._policy_time = 0.0

    def _fill(self, tensordict: TensorDictBase, values: dict) -> TensorDictBase:
        for key, seconds in values.items():
            tensordict.set(
                key,
                torch.full(
                    tensordict.batch_size,
                    seconds,
                    dtype=torch.get_default_dtype(),
                    device=tensordict.device,
                ),
            )
        return tensordict

    def intercept_reset(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        self._reset_start = time.perf_counter()
        return None

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        now = time.perf_counter()
        start = now if self._reset_start is None else self._reset_start
        self._last_end, self._reset_start = now, None
        return self._fill(
            tensordict_reset,
            {self.time_step_key: 0.0, self.time_policy_key: 0.0, self.time_reset_key: now - start},
        )

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        now = time.perf_counter()
        self._policy_time = 0.0 if self._last_end is None else now - self._last_end
        self._step_start = now
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        now = time.perf_counter()
        start = now if self._step_start is None else self._step_start
        self._last_end, self._step_start = now, None
        return self._fill(
            next_tensordict,
            {
                self.time_step_key: now - start,
                self.time_policy_key: self._policy_time,
                self.time_reset_key: 0.0,
            },
        )

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        for key in self.out_keys:
            observation_spec[key] = Unbounded(
                shape=observation_spec.shape,
                dtype=torch.get_default_dtype(),
                device=observation_spec.device,
            )
        return observation_spec

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "Timer measures an env's steps and resets: it runs in a TransformedEnv, not on a "
            "TensorDict alone."
        )


__all__ = ["Timer"]
