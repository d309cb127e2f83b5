"""aSyncDataCollector (``AsyncCollector``): one collector in a background process, collecting while you train."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensordict import TensorDictBase

from rl_collectors.multi_async import MultiaSyncDataCollector
from rl_core import EnvBase


class aSyncDataCollector(MultiaSyncDataCollector):
    """A ``MultiaSyncDataCollector`` with a single worker: the next batch is collected in a
    background process while the caller works on the current one.

    ``AsyncCollector`` (TorchRL 0.14's name) is the same class.

    Args:
        create_env_fn: an env factory (picklable under ``"spawn"``).
        policy: as in ``SyncDataCollector``.
        **kwargs: the keyword arguments of ``MultiaSyncDataCollector``.

    Examples:
        >>> from functools import partial
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors import aSyncDataCollector
        >>> collector = aSyncDataCollector(partial(CountingEnv, batch_size=[2]), None, frames_per_batch=8, total_frames=16)
        >>> [batch.batch_size for batch in collector]
        [torch.Size([2, 4]), torch.Size([2, 4])]
        >>> collector.shutdown()
    """

    def __init__(
        self,
        create_env_fn: Callable[[], EnvBase],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__([create_env_fn], policy, **kwargs)


AsyncCollector = aSyncDataCollector

__all__ = ["AsyncCollector", "aSyncDataCollector"]
