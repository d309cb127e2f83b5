"""PolicyAgeFilter: drops data whose behaviour-policy version lags the live one too far."""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDictBase

from rl_core import Transform
from rl_core.keys import NestedKey


class PolicyAgeFilter(Transform):
    """Drops the elements of a batch produced by a policy too many weight updates old (TorchRL's
    ``PolicyAgeFilter``).

    Each element carries the version of the policy that produced it at ``policy_version_key``
    (an integer stamped by the collector or the inference service). An element is kept when
    ``current_version - stamped <= max_policy_lag``. In a replay buffer the filter runs on both
    paths: on writes (the inverse path) stale elements never enter the buffer, and on samples
    (the forward path) elements that went stale since they were written are dropped, so a
    sample may come out smaller than asked. In an env it does nothing (an env's data comes from
    the live policy).

    The version entry has the batch's shape (a trailing dim of 1 is allowed); along a batch of
    several dims, an element is a row of the first dim, dropped when any of its entries is
    stale.

    Args:
        current_version: the live version, or a callable giving it (read at every pass).
        max_policy_lag: the largest lag kept (an int >= 0).
        policy_version_key: where the stamped version is (keyword-only).
        strict: raise when a batch has no ``policy_version_key`` entry (keyword-only); by
            default such a batch passes unfiltered.

    Raises:
        ValueError: a negative ``max_policy_lag``, or a version entry not shaped like the batch.
        KeyError: ``strict`` and the version entry is missing.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict(policy_version=torch.tensor([3, 5, 7, 8]), batch_size=[4])
        >>> f = PolicyAgeFilter(current_version=8, max_policy_lag=2)
        >>> f(data)["policy_version"].tolist()  # lags 5, 3, 1, 0
        [7, 8]
    """

    def __init__(
        self,
        current_version: int | Callable[[], int],
        max_policy_lag: int,
        *,
        policy_version_key: NestedKey = "policy_version",
        strict: bool = False,
    ) -> None:
        if isinstance(max_policy_lag, bool) or not isinstance(max_policy_lag, int):
            raise ValueError(
                f"PolicyAgeFilter: expected max_policy_lag as an int >= 0, got {max_policy_lag!r}."
            )
        if max_policy_lag < 0:
            raise ValueError(
                f"PolicyAgeFilter: expected max_policy_lag >= 0, got {max_policy_lag}."
            )
        if not callable(current_version) and not isinstance(current_version, int):
            raise ValueError(
                f"PolicyAgeFilter: expected current_version as an int or a callable giving one, "
                f"got {type(current_version).__name__}."
            )
        super().__init__()
        self.current_version = current_version
        self.max_policy_lag = max_policy_lag
        self.policy_version_key = policy_version_key
        self.strict = bool(strict)

    def _live_version(self) -> int:
        version = self.current_version() if callable(self.current_version) else self.current_version
        return int(version)

    def _filter(self, tensordict: TensorDictBase) -> TensorDictBase:
        stamped = tensordict.get(self.policy_version_key, None)
        if stamped is None:
            if self.strict:
                raise KeyError(
                    f"PolicyAgeFilter: the batch has no {self.policy_version_key!r} entry (the "
                    f"stamped policy version); stamp the data or build the filter with "
                    f"strict=False."
                )
            return tensordict
        batch = tuple(tensordict.batch_size)
        if not batch:
            raise ValueError(
                "PolicyAgeFilter: expected a batch with at least one dim to filter, got a "
                "TensorDict without batch dims."
            )
        if tuple(stamped.shape) == (*batch, 1):
            stamped = stamped.squeeze(-1)
        if tuple(stamped.shape) != batch:
            raise ValueError(
                f"PolicyAgeFilter: expected {self.policy_version_key!r} of the batch shape "
                f"{batch}, got {tuple(stamped.shape)}."
            )
        fresh = (self._live_version() - stamped) <= self.max_policy_lag
        if fresh.ndim > 1:
            fresh = fresh.flatten(1).all(1)
        if bool(fresh.all()):
            return tensordict
        return tensordict[fresh.to(torch.bool)]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._filter(tensordict)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        # In an env (reset and step outputs): the live policy's data, nothing to drop.
        return tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._filter(tensordict)

    def inv(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The write path: the elements young enough to enter a buffer."""
        return self._filter(tensordict)

    @property
    def has_inverse(self) -> bool:
        # An env's inverse path (the policy's action) has nothing to filter.
        return False

    def extra_repr(self) -> str:
        return (
            f"max_policy_lag={self.max_policy_lag}, "
            f"policy_version_key={self.policy_version_key!r}, strict={self.strict}"
        )


__all__ = ["PolicyAgeFilter"]
