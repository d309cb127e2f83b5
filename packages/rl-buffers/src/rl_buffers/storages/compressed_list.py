"""CompressedListStorage: a ListStorage that keeps each item's tensors compressed (zstd)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.storages.list_storage import ListStorage

__all__ = ["CompressedListStorage"]

_INSTALL = 'CompressedListStorage needs zstandard: pip install "rl-buffers[compress]"'


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError as err:
        raise ImportError(f"{_INSTALL} (or pass compression_fn and decompression_fn).") from err
    return zstandard


class CompressedListStorage(ListStorage):
    """Keeps items compressed: each tensor, and each tensor entry of a TensorDict item.

    An item is compressed when it is written and decompressed when it is read; ``get``
    returns new tensors (or TensorDicts) equal to what was written, on ``device``
    (conjugate and negative views are stored with their values; tensors of no elements are
    stored as their shape and dtype, without calling the compression functions). Other
    objects are kept as they are. ``dumps`` checksums its file, and ``loads`` refuses a
    damaged one (see :meth:`Storage.loads`). Useful for image observations, which compress well
    (``benchmarks/rl_buffers/bench_compressed.py``).

    Args:
        max_size: the number of items the storage holds.
        compression_fn: maps a tensor to its compressed bytes as a ``uint8`` tensor.
            Defaults to zstd at ``compression_level`` (needs ``rl-buffers[compress]``).
        decompression_fn: maps ``(compressed, metadata)`` back to the tensor;
            ``metadata`` holds the tensor's ``"shape"``, ``"dtype"`` and ``"device"``.
            Defaults to zstd.
        compression_level: the zstd level (1 to 22) of the default compression. Defaults
            to 3.
        device: where read tensors go. Defaults to ``"cpu"``.
        compilable: TorchRL's keyword; see :class:`Storage` (both values behave alike here).

    Raises:
        ImportError: the default functions are used and zstandard is not installed.
        ValueError: ``compression_level`` is not an int in ``[1, 22]``, or only one of
            ``compression_fn`` and ``decompression_fn`` is given.

    Examples:
        >>> import torch
        >>> from rl_buffers import CompressedListStorage
        >>> storage = CompressedListStorage(10)
        >>> frames = torch.zeros(2, 84, 84, dtype=torch.uint8)
        >>> storage.set(torch.tensor([0, 1]), frames)
        >>> storage.get(1).shape, storage.bytes() < frames.numel()
        (torch.Size([84, 84]), True)
    """

    def __init__(
        self,
        max_size: int,
        *,
        compression_fn: Callable[[Tensor], Tensor] | None = None,
        decompression_fn: Callable[[Tensor, dict[str, Any]], Tensor] | None = None,
        compression_level: int = 3,
        device: torch.device | str = "cpu",
        compilable: bool = False,
    ) -> None:
        super().__init__(max_size, compilable=compilable)
        name = type(self).__name__
        if (compression_fn is None) != (decompression_fn is None):
            raise ValueError(
                f"{name}: expected both compression_fn and decompression_fn or neither, got "
                f"only {'compression_fn' if compression_fn is not None else 'decompression_fn'}."
            )
        if (
            isinstance(compression_level, bool)
            or not isinstance(compression_level, int)
            or not 1 <= compression_level <= 22
        ):
            raise ValueError(
                f"{name}: expected compression_level to be an int in [1, 22], got "
                f"{compression_level!r}."
            )
        self.compression_level = compression_level
        self.device = torch.device(device)
        if compression_fn is None:
            zstd = _zstandard()
            compressor = zstd.ZstdCompressor(level=compression_level)
            decompressor = zstd.ZstdDecompressor()

            def compression_fn(tensor: Tensor) -> Tensor:
                raw = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
                packed = compressor.compress(raw.numpy().tobytes())
                return torch.frombuffer(bytearray(packed), dtype=torch.uint8)

            def decompression_fn(compressed: Tensor, metadata: dict[str, Any]) -> Tensor:
                raw = decompressor.decompress(compressed.cpu().numpy().tobytes())
                flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
                return flat.view(metadata["dtype"]).reshape(metadata["shape"])

        self.compression_fn = compression_fn
        self.decompression_fn = decompression_fn

    # ---------------------------------------------------------------- compression
    def _pack(self, tensor: Tensor) -> tuple[Tensor, dict[str, Any]]:
        # A conjugate or negative view stores its values (the compressor reads raw memory);
        # a tensor of no elements has no bytes to compress: its metadata is the item.
        tensor = tensor.resolve_conj().resolve_neg()
        meta = {"shape": tuple(tensor.shape), "dtype": tensor.dtype, "device": str(tensor.device)}
        if not tensor.numel():
            return torch.empty(0, dtype=torch.uint8), meta
        return self.compression_fn(tensor), meta

    def _unpack(self, record: tuple[Tensor, dict[str, Any]]) -> Tensor:
        compressed, meta = record
        if not math.prod(meta["shape"]):
            return torch.empty(meta["shape"], dtype=meta["dtype"], device=self.device)
        return self.decompression_fn(compressed, meta).to(self.device)

    def _put(self, position: int, item: Any) -> None:
        if isinstance(item, Tensor):
            record: Any = ("tensor", self._pack(item))
        elif isinstance(item, TensorDictBase):
            leaves = {
                key: self._pack(value) if isinstance(value, Tensor) else value
                for key, value in item.items(include_nested=True, leaves_only=True)
            }
            record = ("tensordict", (tuple(item.batch_size), leaves))
        else:
            record = ("object", item)
        super()._put(position, record)

    def _decompress(self, record: Any) -> Any:
        kind, payload = record
        if kind == "tensor":
            return self._unpack(payload)
        if kind == "tensordict":
            batch_size, leaves = payload
            out = TensorDict({}, batch_size=batch_size, device=self.device)
            for key, value in leaves.items():
                out.set(key, self._unpack(value) if isinstance(value, tuple) else value)
            return out
        return payload

    def get(self, index: int | Tensor | Sequence[int]) -> Any:
        records = super().get(index)
        if isinstance(index, int):
            return self._decompress(records)
        return [self._decompress(record) for record in records]

    def bytes(self) -> int:
        """The number of compressed bytes held (tensor payloads only)."""
        total = 0
        for kind, payload in self._items:
            if kind == "tensor":
                total += payload[0].numel()
            elif kind == "tensordict":
                total += sum(v[0].numel() for v in payload[1].values() if isinstance(v, tuple))
        return total

    def __repr__(self) -> str:
        return (
            f"CompressedListStorage(max_size={self.max_size}, len={len(self)}, "
            f"compression_level={self.compression_level})"
        )
