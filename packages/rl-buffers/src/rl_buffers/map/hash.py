"""Hash modules that turn the rows of a tensor into int64 keys: SipHash-2-4, a random
projection followed by SipHash, and binary-to-decimal codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

_MASK64 = (1 << 64) - 1


def _signed(value: int) -> int:
    """An unsigned 64-bit value as the int64 with the same bits."""
    value &= _MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


def _rotl(x: torch.Tensor, bits: int) -> torch.Tensor:
    # ``>>`` is arithmetic on int64: the mask keeps the ``bits`` wrapped-around bits only.
    return (x << bits) | ((x >> (64 - bits)) & ((1 << bits) - 1))


def _sip_round(v0, v1, v2, v3):
    v0 = v0 + v1
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = v2 + v3
    v3 = _rotl(v3, 16) ^ v2
    v0 = v0 + v3
    v3 = _rotl(v3, 21) ^ v0
    v2 = v2 + v1
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(data: torch.Tensor, key: bytes = bytes(range(16))) -> torch.Tensor:
    """SipHash-2-4 (Aumasson & Bernstein 2012) of each row of a uint8 tensor, vectorised.

    Args:
        data: ``(B, L)`` uint8: ``B`` messages of ``L`` bytes each.
        key: the 16-byte key. Defaults to ``00 01 .. 0f``, the key of the paper's test vectors.

    Returns:
        ``(B,)`` int64: each message's 64-bit hash (the int64 with the same bits).

    Raises:
        TypeError: ``data`` is not a 2-D uint8 tensor.
        ValueError: ``key`` is not 16 bytes.

    Examples:
        >>> import torch
        >>> msg = torch.arange(15, dtype=torch.uint8)[None]  # the paper's appendix A message
        >>> hex(siphash24(msg).item() & (2**64 - 1))
        '0xa129ca6149be45e5'
    """
    if not isinstance(data, torch.Tensor) or data.dtype != torch.uint8 or data.dim() != 2:
        raise TypeError(
            f"siphash24: expected data to be a (B, L) uint8 tensor, got "
            f"{getattr(data, 'dtype', type(data).__name__)} of shape "
            f"{tuple(getattr(data, 'shape', ()))}."
        )
    if not isinstance(key, bytes | bytearray) or len(key) != 16:
        raise ValueError(f"siphash24: expected a 16-byte key, got {key!r}.")
    rows, length = data.shape
    words = length // 8 + 1
    padded = torch.zeros((rows, words * 8), dtype=torch.int64, device=data.device)
    padded[:, :length] = data.to(torch.int64)
    padded[:, -1] = length & 0xFF
    shifts = torch.arange(0, 64, 8, device=data.device, dtype=torch.int64)
    m = (padded.view(rows, words, 8) << shifts).sum(-1)  # little-endian 64-bit words
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:], "little")

    def const(value: int) -> torch.Tensor:
        return torch.full((rows,), _signed(value), dtype=torch.int64, device=data.device)

    v0 = const(k0 ^ 0x736F6D6570736575)
    v1 = const(k1 ^ 0x646F72616E646F6D)
    v2 = const(k0 ^ 0x6C7967656E657261)
    v3 = const(k1 ^ 0x7465646279746573)
    for i in range(words):
        v3 = v3 ^ m[:, i]
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
        v0 = v0 ^ m[:, i]
    v2 = v2 ^ 0xFF
    for _ in range(4):
        v0, v1, v2, v3 = _sip_round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def _row_bytes(where: str, x: torch.Tensor) -> torch.Tensor:
    """``(..., F)`` of any dtype -> ``(prod(...), F * itemsize)`` uint8: each row's bytes."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{where}: expected a tensor, got {type(x).__name__}.")
    if x.dim() == 0:
        raise ValueError(f"{where}: expected a tensor with a feature dim (..., F), got a scalar.")
    x = x.detach()
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    flat = x.reshape(-1, x.shape[-1]).contiguous()
    return flat.view(torch.uint8).reshape(flat.shape[0], -1)


class SipHash(nn.Module):
    """Hashes each row of a ``(..., F)`` tensor with SipHash-2-4: ``(...)`` int64 keys.

    The bytes of each row (its dtype's memory layout) are hashed with a fixed key, so equal
    rows get equal keys in every process and run (TorchRL's version uses Python's ``hash`` and
    needs ``PYTHONHASHSEED``; this one is reproducible as is, so saved forests reload).

    Args:
        as_tensor: return an int64 tensor (True) or the list of each row's bytes (False).

    Keyword Args:
        key: the 16-byte SipHash key. Defaults to ``bytes(range(16))``.

    Examples:
        >>> import torch
        >>> a = torch.tensor([[0.1, 0.2], [0.3, 0.4], [0.1, 0.2]])
        >>> h = SipHash()(a)
        >>> h.shape, bool(h[0] == h[2]), bool(h[0] == h[1])
        (torch.Size([3]), True, False)
    """

    def __init__(self, as_tensor: bool = True, *, key: bytes = bytes(range(16))) -> None:
        super().__init__()
        if not isinstance(key, bytes | bytearray) or len(key) != 16:
            raise ValueError(f"SipHash: expected key to be 16 bytes, got {key!r}.")
        self.as_tensor = bool(as_tensor)
        self.key = bytes(key)

    def forward(self, x: torch.Tensor) -> torch.Tensor | list[bytes]:
        data = _row_bytes(f"{type(self).__name__}.forward", x)
        if not self.as_tensor:
            return [bytes(row.tolist()) for row in data.cpu()]
        return siphash24(data, self.key).reshape(x.shape[:-1])


class RandomProjectionHash(SipHash):
    """A random projection to ``n_components`` dims, cast to ``dtype_cast``, then :class:`SipHash`.

    Inputs with many features (images, embeddings) become short rows before hashing; the
    cast (bfloat16 by default) rounds away the last bits, so nearly equal inputs usually
    share a key. The ``(F, n_components)`` projection is drawn by ``init_method`` on the first
    call (or :meth:`fit`) and is part of the state dict.

    Keyword Args:
        n_components: the projection's width. Defaults to 16.
        dtype_cast: the dtype of the projected rows. Defaults to ``torch.bfloat16``.
        as_tensor: see :class:`SipHash`.
        init_method: fills the projection in place. Defaults to ``torch.nn.init.normal_``.
        key: the SipHash key.

    Raises:
        ValueError: ``n_components`` is not a positive int.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> h = RandomProjectionHash(n_components=4)
        >>> x = torch.randn(3, 100)
        >>> h(x).shape, h.transform.shape
        (torch.Size([3]), torch.Size([100, 4]))
    """

    _N_COMPONENTS_DEFAULT = 16

    def __init__(
        self,
        *,
        n_components: int | None = None,
        dtype_cast: torch.dtype = torch.bfloat16,
        as_tensor: bool = True,
        init_method: Callable[[torch.Tensor], Any] | None = None,
        key: bytes = bytes(range(16)),
    ) -> None:
        super().__init__(as_tensor, key=key)
        if n_components is None:
            n_components = self._N_COMPONENTS_DEFAULT
        if isinstance(n_components, bool) or not isinstance(n_components, int) or n_components < 1:
            raise ValueError(
                f"RandomProjectionHash: expected n_components to be a positive int, got "
                f"{n_components!r}."
            )
        self.n_components = n_components
        self.dtype_cast = dtype_cast
        self.init_method = init_method if init_method is not None else nn.init.normal_
        self.register_buffer("transform", None)

    def fit(self, x: torch.Tensor) -> None:
        """Draws the ``(x.shape[-1], n_components)`` projection."""
        transform = torch.empty(x.shape[-1], self.n_components, device=x.device)
        self.init_method(transform)
        self.transform = transform.to(self.dtype_cast)

    def forward(self, x: torch.Tensor) -> torch.Tensor | list[bytes]:
        if self.transform is None:
            self.fit(x)
        elif x.shape[-1] != self.transform.shape[0]:
            raise ValueError(
                f"RandomProjectionHash.forward: the projection was fitted on "
                f"{self.transform.shape[0]} features, got {x.shape[-1]} (shape "
                f"{tuple(x.shape)})."
            )
        return super().forward(x.to(self.dtype_cast) @ self.transform)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        saved = state_dict.get(prefix + "transform")
        if saved is not None and self.transform is None:
            self.transform = torch.empty_like(saved)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class BinaryToDecimal(nn.Module):
    """Reads the last dim as base-2 digits, ``num_bits`` at a time, and sums the chunks' values.

    Args:
        num_bits: the digits of one number; the last dim must be a multiple of it.
        device: the device of the digit weights.
        dtype: the output dtype.
        convert_to_binary: map inputs to 0/1 first (``x > 0`` is 1) instead of reading them
            as digits.

    Raises:
        ValueError: (forward) the last dim is smaller than ``num_bits`` or not a multiple.

    Examples:
        >>> import torch
        >>> b2d = BinaryToDecimal(num_bits=4, device="cpu", dtype=torch.int32,
        ...                       convert_to_binary=True)
        >>> b2d(torch.tensor([[0, 0, 1, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0, 10, 0]])).tolist()
        [3, 2]
    """

    def __init__(
        self,
        num_bits: int,
        device: torch.device | str | None,
        dtype: torch.dtype,
        convert_to_binary: bool = False,
    ) -> None:
        super().__init__()
        if isinstance(num_bits, bool) or not isinstance(num_bits, int) or num_bits < 1:
            raise ValueError(
                f"BinaryToDecimal: expected num_bits to be a positive int, got {num_bits!r}."
            )
        self.num_bits = num_bits
        self.convert_to_binary = convert_to_binary
        self.register_buffer(
            "bases", 2 ** torch.arange(num_bits - 1, -1, -1, device=device, dtype=dtype)
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        n = features.shape[-1]
        if n < self.num_bits or n % self.num_bits:
            raise ValueError(
                f"BinaryToDecimal.forward: expected the last dim to be a multiple of "
                f"num_bits={self.num_bits}, got {n} (shape {tuple(features.shape)})."
            )
        if self.convert_to_binary:
            features = features > 0
        chunks = features.reshape(*features.shape[:-1], n // self.num_bits, self.num_bits)
        return (chunks.to(self.bases.dtype) * self.bases).sum((-2, -1)).to(self.bases.dtype)


__all__ = ["BinaryToDecimal", "RandomProjectionHash", "SipHash", "siphash24"]
