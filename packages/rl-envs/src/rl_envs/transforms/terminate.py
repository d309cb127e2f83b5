"""TerminateTransform: ends episodes where a condition on the step's output holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import DONE, TERMINATED


def _leaf(key: Any) -> str:
    return key[-1] if isinstance(key, tuple) else key


class TerminateTransform(Transform):
    """Terminates the episode of every sub-env where ``stop(next_tensordict)`` is True.

    After each step, ``stop`` reads the step's output (the ``"next"`` TensorDict, after the
    transforms before this one) and returns a bool, or a bool tensor broadcastable to the
    env's done flags from the left (``(*batch)`` for flags ``(*batch, 1)``). The result is
    OR-ed into every ``terminated`` flag of the env and, with ``write_done``, into every
    ``done`` flag, so that a rollout with ``break_when_any_done`` stops there; ``truncated``
    flags are left as they are. Resets pass through.

    Args:
        stop: ``(next_tensordict) -> bool | Tensor``.

    Keyword Args:
        write_done: OR the condition into the ``done`` flags too. Defaults to ``True``.

    Raises:
        TypeError: ``stop`` is not callable.
        ValueError: (at a step) a condition that does not broadcast to a done flag.
        RuntimeError: called outside an env (``transform(td)``).

    Examples:
        >>> from rl_core import TransformedEnv
        >>> from rl_envs import PendulumEnv
        >>> env = TransformedEnv(
        ...     PendulumEnv(), TerminateTransform(lambda td: td["th"].abs().squeeze(-1) < 10)
        ... )
        >>> traj = env.rollout(5)
        >>> traj.batch_size, traj["next", "terminated"].squeeze(-1).tolist()
        (torch.Size([1]), [True])
    """

    def __init__(self, stop: Callable[[TensorDictBase], Any], *, write_done: bool = True) -> None:
        if not callable(stop):
            raise TypeError(
                f"TerminateTransform: expected a callable stop(next_tensordict), got "
                f"{type(stop).__name__}."
            )
        super().__init__()
        self.stop = stop
        self.write_done = bool(write_done)

    def _written_keys(self) -> list:
        parent = self.parent
        keys = list(parent.done_keys) if parent is not None else [TERMINATED, DONE]
        wanted = {TERMINATED, DONE} if self.write_done else {TERMINATED}
        return [key for key in keys if _leaf(key) in wanted]

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        flag = torch.as_tensor(self.stop(next_tensordict), device=next_tensordict.device).bool()
        for key in self._written_keys():
            current = next_tensordict.get(key, None)
            if current is None:
                continue
            value = flag.reshape(*flag.shape, *([1] * max(current.ndim - flag.ndim, 0)))
            try:
                value = value.expand(current.shape)
            except RuntimeError as err:
                raise ValueError(
                    f"TerminateTransform: stop returned a condition of shape "
                    f"{tuple(flag.shape)}, which does not broadcast to the done flag {key!r} "
                    f"of shape {tuple(current.shape)}; return one bool per sub-env "
                    f"(shape {tuple(current.shape[:-1])}) or a single bool."
                ) from err
            next_tensordict.set(key, current | value)
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise RuntimeError(
            "TerminateTransform ends episodes of an env: it runs in a TransformedEnv, not on "
            "a TensorDict alone."
        )


__all__ = ["TerminateTransform"]
