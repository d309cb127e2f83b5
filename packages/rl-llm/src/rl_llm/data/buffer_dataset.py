"""TorchRLBufferDataset: a replay buffer read as a PyTorch (or Hugging Face) iterable dataset."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase
from tensordict.utils import NestedKey


def _name(key: NestedKey) -> str:
    return key if isinstance(key, str) else ".".join(key)


class TorchRLBufferDataset(torch.utils.data.IterableDataset):
    """Samples of a replay buffer as a ``torch.utils.data.IterableDataset`` of flat dicts, for
    ``transformers.Trainer``-style consumers (and, through :meth:`as_hf_dataset`, for ``trl``
    trainers that want a ``datasets.IterableDataset``).

    Each iterator draws ``num_batches`` batches of ``batch_size`` items with
    ``replay_buffer.sample(batch_size)`` and yields the items one by one as dicts: one entry
    per leaf (a nested key ``("a", "b")`` is named ``"a.b"``), tensors without the batch
    dimension (moved to ``device`` when given), non-tensor entries as their Python values.
    ``num_batches=None`` streams without end (the consumer bounds the steps).

    Args:
        replay_buffer: a replay buffer (anything with ``sample(batch_size)`` returning a
            TensorDict with a leading batch dimension).
        batch_size: items drawn per sampling call.
        keys: the entries yielded (default: every leaf).
        device: where tensors are moved.
        num_batches: sampling calls per iterator; ``None`` for an endless stream.

    Raises:
        TypeError: ``replay_buffer`` has no ``sample`` method.
        ValueError: ``batch_size`` or ``num_batches`` is not a positive integer.
        KeyError: (while iterating) a requested key is not in the sampled items, naming the
            key and the available ones.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_llm.data import TorchRLBufferDataset
        >>> class Buffer:  # any replay buffer: sample(n) gives n items
        ...     def sample(self, n):
        ...         return TensorDict(input_ids=torch.arange(3 * n).reshape(n, 3),
        ...             meta={"score": torch.ones(n)}, batch_size=[n])
        >>> items = list(TorchRLBufferDataset(Buffer(), batch_size=2))
        >>> len(items), sorted(items[0]), items[1]["input_ids"].tolist()
        (2, ['input_ids', 'meta.score'], [3, 4, 5])
    """

    def __init__(
        self,
        replay_buffer: Any,
        batch_size: int,
        *,
        keys: list[NestedKey] | None = None,
        device: torch.device | str | None = None,
        num_batches: int | None = 1,
    ) -> None:
        if not callable(getattr(replay_buffer, "sample", None)):
            raise TypeError(
                f"TorchRLBufferDataset: expected replay_buffer to be a replay buffer (with a "
                f"sample(batch_size) method), got {type(replay_buffer).__name__}."
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(
                f"TorchRLBufferDataset: expected batch_size to be a positive integer, got "
                f"{batch_size!r}."
            )
        if num_batches is not None and (
            isinstance(num_batches, bool) or not isinstance(num_batches, int) or num_batches < 1
        ):
            raise ValueError(
                f"TorchRLBufferDataset: expected num_batches to be a positive integer or None, "
                f"got {num_batches!r}."
            )
        self.replay_buffer = replay_buffer
        self.batch_size = batch_size
        self.keys = None if keys is None else list(keys)
        self.device = None if device is None else torch.device(device)
        self.num_batches = num_batches

    def _leaves(self, batch: TensorDictBase) -> list[NestedKey]:
        return [
            key
            for key in batch.keys(include_nested=True)
            if isinstance(value := batch.get(key), NonTensorStack | NonTensorData)
            or not isinstance(value, TensorDictBase)
        ]

    def _entries(self, batch: TensorDictBase) -> list[NestedKey]:
        leaves = self._leaves(batch)
        if self.keys is None:
            return leaves
        names = {_name(k) for k in leaves}
        for key in self.keys:
            if _name(key) not in names:
                raise KeyError(
                    f"TorchRLBufferDataset: the key {key!r} is not in the sampled items; they "
                    f"hold {sorted(names)}."
                )
        return self.keys

    def __iter__(self) -> Iterator[dict[str, Any]]:
        drawn = 0
        while self.num_batches is None or drawn < self.num_batches:
            batch = self.replay_buffer.sample(self.batch_size)
            if not isinstance(batch, TensorDictBase) or batch.batch_dims < 1:
                raise TypeError(
                    f"TorchRLBufferDataset: expected replay_buffer.sample to return a "
                    f"TensorDict with a batch dimension, got {type(batch).__name__}."
                )
            keys = self._entries(batch)
            columns = {}
            for key in keys:
                value = batch.get(key)
                if isinstance(value, NonTensorStack | NonTensorData):
                    value = value.tolist()
                elif self.device is not None:
                    value = value.to(self.device)
                columns[_name(key)] = value
            for i in range(batch.batch_size[0]):
                yield {name: value[i] for name, value in columns.items()}
            drawn += 1

    def as_hf_dataset(self) -> Any:
        """The same samples as a ``datasets.IterableDataset`` (what ``trl`` trainers take).

        Raises:
            ImportError: ``datasets`` is missing (``pip install "rl-llm[datasets]"``).
        """
        try:
            from datasets import IterableDataset
        except ImportError as err:
            raise ImportError(
                'TorchRLBufferDataset.as_hf_dataset needs datasets: pip install "rl-llm[datasets]"',
                name="datasets",
            ) from err
        return IterableDataset.from_generator(self.__iter__)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(replay_buffer={type(self.replay_buffer).__name__}, "
            f"batch_size={self.batch_size}, keys={self.keys or '<all>'}, device={self.device}, "
            f"num_batches={self.num_batches})"
        )
