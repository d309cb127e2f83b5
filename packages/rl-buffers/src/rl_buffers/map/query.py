"""QueryModule: TensorDict entries -> a hash -> a dense index into a storage (HashToInt)."""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn

from rl_buffers.map.hash import SipHash


class HashToInt(nn.Module):
    """Gives each distinct hash a dense index ``0, 1, 2, ...`` in order of first sight.

    ``hash_to_int(hashes, extend=True)`` registers unseen hashes; with ``extend=False`` an
    unseen hash gets ``len(self)`` (the index it would get next), so a lookup never changes
    the table. The table is in the state dict.

    Examples:
        >>> import torch
        >>> h2i = HashToInt()
        >>> h2i(torch.tensor([70, 12, 70]), extend=True).tolist()
        [0, 1, 0]
        >>> h2i(torch.tensor([12, 99])).tolist(), len(h2i)
        ([1, 2], 2)
    """

    def __init__(self) -> None:
        super().__init__()
        self._index_to_index: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._index_to_index)

    def __call__(self, key: torch.Tensor, extend: bool = False) -> torch.Tensor:
        table = self._index_to_index
        if extend:
            out = [table.setdefault(k, len(table)) for k in key.reshape(-1).tolist()]
        else:
            fresh = len(table)
            out = [table.get(k, fresh) for k in key.reshape(-1).tolist()]
        return torch.tensor(out, dtype=torch.int64, device=key.device).reshape(key.shape)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        destination[prefix + "keys"] = torch.tensor(list(self._index_to_index), dtype=torch.int64)
        destination[prefix + "values"] = torch.tensor(
            list(self._index_to_index.values()), dtype=torch.int64
        )

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, errors
    ):
        keys, values = state_dict.get(prefix + "keys"), state_dict.get(prefix + "values")
        if keys is None or values is None:
            missing_keys.extend(
                prefix + name for name, v in (("keys", keys), ("values", values)) if v is None
            )
            return
        if keys.shape != values.shape:
            errors.append(
                f"HashToInt.load_state_dict: {prefix}keys and {prefix}values differ in shape: "
                f"{tuple(keys.shape)} and {tuple(values.shape)}."
            )
            return
        self._index_to_index = dict(zip(keys.tolist(), values.tolist(), strict=True))


class QueryModule(TensorDictModuleBase):
    """Hashes a TensorDict's ``in_keys`` (row by row) and writes a storage index for each row.

    Each entry ``(*batch, *feature)`` is hashed over its feature dims (an entry without
    feature dims is read as one feature); with several keys the per-key hashes are stacked
    and hashed again by ``aggregator``. ``hash_to_int`` turns the hash into a dense index.

    Args:
        in_keys: the entries that identify a row.
        index_key: where the index goes. Defaults to ``"_index"``.
        hash_key: where the hash goes. Defaults to ``"_hash"``.

    Keyword Args:
        hash_module: one hash module for every key (deep-copied per key), or a list with one
            per key. Defaults to :class:`SipHash`.
        hash_to_int: hash -> index. Defaults to a new :class:`HashToInt`.
        aggregator: combines the per-key hashes; defaults to ``hash_module`` when one was
            given, :class:`SipHash` otherwise.
        clone: write into a shallow copy of the input instead of the input itself.

    Raises:
        ValueError: ``in_keys`` is empty, or the list of hash modules does not match it.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> query = QueryModule(in_keys=["key1", "key2"], index_key="index")
        >>> td = TensorDict(key1=torch.tensor([[1], [1], [1], [2]]),
        ...                 key2=torch.tensor([[3], [3], [2], [3]]), batch_size=[4])
        >>> query(td)["index"].tolist()
        [0, 0, 1, 2]
    """

    def __init__(
        self,
        in_keys: list[NestedKey] | NestedKey,
        index_key: NestedKey = "_index",
        hash_key: NestedKey = "_hash",
        *,
        hash_module: Callable[[torch.Tensor], torch.Tensor]
        | list[Callable[[torch.Tensor], torch.Tensor]]
        | None = None,
        hash_to_int: Callable[..., torch.Tensor] | None = None,
        aggregator: Callable[[torch.Tensor], torch.Tensor] | None = None,
        clone: bool = False,
    ) -> None:
        super().__init__()
        in_keys = list(in_keys) if isinstance(in_keys, list) else [in_keys]
        if not in_keys:
            raise ValueError("QueryModule: expected at least one key in in_keys, got [].")
        self.in_keys = in_keys
        self.out_keys = [index_key, hash_key]
        self.index_key = index_key
        self.hash_key = hash_key
        if aggregator is None:
            single = hash_module is not None and not isinstance(hash_module, list)
            aggregator = hash_module if single else SipHash()
        if hash_module is None:
            modules = [SipHash() for _ in in_keys]
        elif isinstance(hash_module, list):
            if len(hash_module) != len(in_keys):
                raise ValueError(
                    f"QueryModule: expected one hash module per in_key ({len(in_keys)}), got "
                    f"{len(hash_module)}."
                )
            modules = hash_module
        else:
            modules = [hash_module] + [deepcopy(hash_module) for _ in in_keys[1:]]
        self.hash_module = dict(zip(map(_key_name, in_keys), modules, strict=True))
        for i, module in enumerate(modules):  # (registered: their state is in the state dict)
            if isinstance(module, nn.Module):
                self.add_module(f"_hash_module_{i}", module)
        self.aggregator = aggregator
        self.hash_to_int = hash_to_int if hash_to_int is not None else HashToInt()
        self.clone = clone

    def compute_hash(self, tensordict: TensorDictBase) -> torch.Tensor:
        """The ``(*batch)`` int64 hash of each row of ``tensordict`` (nothing written)."""
        hashes = []
        batch_dims = tensordict.batch_dims
        for key in self.in_keys:
            value = tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"QueryModule: expected the entry {key!r} in the TensorDict, got keys "
                    f"{sorted(map(str, tensordict.keys(True, True)))}."
                )
            if value.dim() == batch_dims:
                value = value.unsqueeze(-1)
            else:
                value = value.reshape(*tensordict.batch_size, -1)
            hashes.append(self.hash_module[_key_name(key)](value))
        if len(hashes) == 1:
            return hashes[0]
        return self.aggregator(torch.stack(hashes, dim=-1))

    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        extend: bool = True,
        write_hash: bool = True,
        clone: bool | None = None,
    ) -> TensorDictBase:
        hashes = self.compute_hash(tensordict)
        index = self.hash_to_int(hashes, extend=extend)
        if clone if clone is not None else self.clone:
            tensordict = tensordict.copy()
        tensordict.set(self.index_key, index)
        if write_hash:
            tensordict.set(self.hash_key, hashes)
        return tensordict


def _key_name(key: NestedKey) -> str:
    return key if isinstance(key, str) else ".".join(key)


__all__ = ["HashToInt", "QueryModule"]
