"""StalenessAwareSampler: draws fresh items more often and never too stale ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers.sampler import Sampler, check_not_empty
from rl_buffers.storages.storage import Storage

__all__ = ["StalenessAwareSampler"]


def default_staleness_weight(staleness: Tensor) -> Tensor:
    """TorchRL's default freshness weight: ``1 / (staleness + 1)``."""
    return 1.0 / (staleness.double() + 1.0)


class StalenessAwareSampler(Sampler):
    """Draws items with replacement, weighted by freshness, skipping stale ones.

    For asynchronous training where stored items come from older policy versions. Each
    item's staleness is ``consumer_version - item[version_key]``; items with staleness above
    ``max_staleness`` are never drawn, the others with probability proportional to
    ``staleness_weight_fn(staleness)`` (default ``1 / (staleness + 1)``). The training loop
    sets :attr:`consumer_version` (after each weight update, say). The info holds each
    drawn item's ``"staleness"``.

    Args:
        max_staleness: the largest staleness drawn; -1 (default): no limit.
        staleness_weight_fn: maps the staleness tensor (int) to non-negative weights.
        version_key: the stored entry holding each item's policy version. Defaults to
            ``"policy_version"``.

    Raises:
        ValueError: ``max_staleness`` below -1; (at sampling) no item is fresh enough, or
            the weights are negative or not finite.
        KeyError: (at sampling) the storage has no ``version_key`` entry.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage, StalenessAwareSampler
        >>> storage = LazyTensorStorage(10)
        >>> storage.set(torch.arange(4), TensorDict({"policy_version": torch.tensor([0, 1, 2, 3])}, [4]))
        >>> sampler = StalenessAwareSampler(max_staleness=1)
        >>> sampler.consumer_version = 3
        >>> index, info = sampler.sample(storage, 100)
        >>> sorted(set(index.tolist())), int(info["staleness"].max())
        ([2, 3], 1)
    """

    def __init__(
        self,
        max_staleness: int = -1,
        staleness_weight_fn: Callable[[Tensor], Tensor] | None = None,
        version_key: Any = "policy_version",
    ) -> None:
        if (
            isinstance(max_staleness, bool)
            or not isinstance(max_staleness, int)
            or max_staleness < -1
        ):
            raise ValueError(
                f"StalenessAwareSampler: expected max_staleness to be an int >= -1 (-1: no "
                f"limit), got {max_staleness!r}."
            )
        self.max_staleness = max_staleness
        self.staleness_weight_fn = staleness_weight_fn or default_staleness_weight
        self.version_key = version_key
        self.consumer_version = 0

    def weights(self, storage: Storage) -> tuple[Tensor, Tensor]:
        """The sampling weight and the staleness of every stored item."""
        if not callable(getattr(storage, "column", None)):
            raise TypeError(
                f"StalenessAwareSampler.sample: expected a tensor storage of TensorDicts (it "
                f"reads the {self.version_key!r} entry), got {type(storage).__name__}."
            )
        versions = storage.column(self.version_key).reshape(len(storage), -1)[:, 0]
        staleness = self.consumer_version - versions.long()
        weights = torch.as_tensor(self.staleness_weight_fn(staleness), dtype=torch.float64)
        if (
            weights.shape != staleness.shape
            or not bool(torch.isfinite(weights).all())
            or bool((weights < 0).any())
        ):
            raise ValueError(
                f"StalenessAwareSampler.sample: expected staleness_weight_fn to give one "
                f"finite non-negative weight per item (shape {tuple(staleness.shape)}), got "
                f"shape {tuple(weights.shape)} with values {weights[:5].tolist()}..."
            )
        if self.max_staleness >= 0:
            weights = torch.where(staleness > self.max_staleness, 0.0, weights)
        return weights, staleness

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        check_not_empty("StalenessAwareSampler.sample", storage)
        weights, staleness = self.weights(storage)
        if not bool((weights > 0).any()):
            raise ValueError(
                f"StalenessAwareSampler.sample: no stored item is fresh enough (consumer_version="
                f"{self.consumer_version}, max_staleness={self.max_staleness}, smallest "
                f"staleness {int(staleness.min())}); collect newer data or raise max_staleness."
            )
        index = torch.multinomial(weights, batch_size, replacement=True, generator=self._rng)
        return index, {"staleness": staleness[index]}

    def state_dict(self) -> dict[str, Any]:
        return {"consumer_version": self.consumer_version}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.consumer_version = int(state_dict["consumer_version"])

    def __repr__(self) -> str:
        return (
            f"StalenessAwareSampler(max_staleness={self.max_staleness}, "
            f"version_key={self.version_key!r}, consumer_version={self.consumer_version})"
        )
