"""Hash: a hash of an entry (typically a string) written beside it, with an optional inverse map."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase

from rl_core import Composite, NonTensor, TensorSpec, Transform, Unbounded
from rl_core.keys import NestedKey
from rl_envs.transforms._common import map_output_leaves


def reproducible_hash(string: str | None, seed: Any | None = None) -> torch.Tensor:
    """The SHA-256 digest of ``str(seed) + string`` (or of ``string``) as 32 ``uint8``, the
    bytes of the digest in order (TorchRL's layout: ``Hash.reproducible_hash`` there gives the
    same tensor). ``None`` hashes as ``""``.

    Reproducible across processes and runs, unlike Python's ``hash``.

    Raises:
        TypeError: ``string`` is neither a str nor ``None``.

    Examples:
        >>> reproducible_hash("abc")[:4].tolist()  # SHA-256("abc") = ba7816bf...
        [186, 120, 22, 191]
    """
    if string is None:
        string = ""
    if not isinstance(string, str):
        raise TypeError(
            f"Hash.reproducible_hash: expected a str, got {type(string).__name__}; pass "
            f"hash_fn= to hash other values."
        )
    text = string if seed is None else f"{seed}{string}"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return torch.frombuffer(bytearray(digest), dtype=torch.uint8).clone()


class Hash(Transform):
    """Writes ``hash_fn(value)`` of each ``in_keys`` entry at the matching ``out_keys``.

    Non-tensor entries (strings, say) are hashed element by element, the hashes stacked
    under the batch dims; a tensor is given to ``hash_fn`` whole. With a ``repertoire``
    (a dict the caller keeps), each hash seen maps back to its input, and the inverse path
    reads the hashes at ``out_keys_inv`` and writes the recovered inputs at ``in_keys_inv``
    (``None`` for an unknown hash).

    Args:
        in_keys: the entries to hash.
        out_keys: where their hashes go.
        in_keys_inv: where the inverse path writes recovered inputs.
        out_keys_inv: the hashes the inverse path reads.
        hash_fn: ``(value, seed) -> Tensor`` (``(value) -> Tensor`` without a seed).
            Defaults to :meth:`reproducible_hash` (SHA-256 of a string, 32 ``uint8``).
        seed: passed to ``hash_fn`` when given.
        use_raw_nontensor: give ``NonTensorData``/``NonTensorStack`` entries to ``hash_fn``
            as they are instead of their payloads. Defaults to ``False``.
        repertoire: a dict filled with ``tuple(hash) -> input``; needed by the inverse path.

    Raises:
        ValueError: an inverse path without a repertoire.

    Examples:
        >>> from tensordict import TensorDict
        >>> td = TensorDict(batch_size=[2])
        >>> td["text"] = ["a", "b"]
        >>> Hash(in_keys=["text"], out_keys=["hash"])(td)["hash"].shape
        torch.Size([2, 32])
    """

    reproducible_hash = staticmethod(reproducible_hash)

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_keys: Sequence[NestedKey],
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        *,
        hash_fn: Callable[..., torch.Tensor] | None = None,
        seed: Any | None = None,
        use_raw_nontensor: bool = False,
        repertoire: dict[tuple[int, ...], Any] | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        if self.in_keys_inv and repertoire is None:
            raise ValueError(
                "Hash: in_keys_inv needs a repertoire (a dict of hash -> input) to map hashes "
                "back to their inputs; pass repertoire={}."
            )
        self.hash_fn = reproducible_hash if hash_fn is None else hash_fn
        self.seed = seed
        self.use_raw_nontensor = use_raw_nontensor
        self.repertoire = repertoire

    def _hash_one(self, value: Any) -> torch.Tensor:
        out = self._call_hash_fn(value)
        if self.repertoire is not None:
            self.repertoire[tuple(out.reshape(-1).tolist())] = value
        return out

    def _hash_nested(self, value: Any) -> torch.Tensor:
        if isinstance(value, list):
            return torch.stack([self._hash_nested(v) for v in value])
        return self._hash_one(value)

    def _apply_transform(self, value: Any) -> torch.Tensor:
        if isinstance(value, NonTensorData | NonTensorStack) and not self.use_raw_nontensor:
            return self._hash_nested(value.tolist())
        return self._hash_one(value)

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            value = tensordict.get(in_key, None)
            if value is not None:
                tensordict.set(out_key, self._apply_transform(value))
        return tensordict

    def _unhash(self, hashes: torch.Tensor, event_ndim: int) -> Any:
        if hashes.ndim > event_ndim:
            return [self._unhash(h, event_ndim) for h in hashes.unbind(0)]
        return self.repertoire.get(tuple(hashes.reshape(-1).tolist()))

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys_inv, self.out_keys_inv):
            hashes = tensordict.get(out_key, None)
            if hashes is None:
                continue
            values = self._unhash(hashes, hashes.ndim - tensordict.batch_dims)
            if tensordict.batch_dims == 0:
                tensordict.set_non_tensor(in_key, values)
            else:
                tensordict.set(in_key, _stack_non_tensor(values, tensordict.batch_size))
        return tensordict

    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        # The shape and dtype of a hash, read from the hash of an example input.
        if isinstance(spec, NonTensor):
            probe = "" if spec.example_data is None else spec.example_data
            one = self._call_hash_fn(probe)
            shape = (*spec.shape, *one.shape)
        else:
            one = self._call_hash_fn(spec.zero())
            shape = tuple(one.shape)
        return Unbounded(shape=shape, device=spec.device, dtype=one.dtype)

    def _call_hash_fn(self, value: Any) -> torch.Tensor:
        out = self.hash_fn(value) if self.seed is None else self.hash_fn(value, self.seed)
        return torch.as_tensor(out)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return map_output_leaves(output_spec, self.in_keys, self.out_keys, self._map_spec, "Hash")


def _stack_non_tensor(values: list, batch_size: torch.Size) -> NonTensorStack:
    if len(batch_size) == 1:
        return NonTensorStack(*[NonTensorData(v) for v in values])
    return NonTensorStack(*[_stack_non_tensor(v, batch_size[1:]) for v in values])


__all__ = ["Hash"]
