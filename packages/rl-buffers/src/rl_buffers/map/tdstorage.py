"""TensorDictMap: a dictionary from TensorDict rows (hashed by a QueryModule) to stored rows."""

from __future__ import annotations

import abc
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
from tensordict import NestedKey, TensorDictBase, lazy_stack
from tensordict.nn import TensorDictModuleBase

from rl_buffers.map.hash import RandomProjectionHash, SipHash
from rl_buffers.map.query import QueryModule
from rl_buffers.storages import LazyTensorStorage, ListStorage, Storage

K = TypeVar("K")
V = TypeVar("V")


class TensorMap(abc.ABC, Generic[K, V]):
    """The mapping contract of the map storages: ``map[key]``, ``map[key] = value``,
    ``len(map)``, ``map.contains(key)`` (a bool tensor, one per row) and ``clear()``."""

    @abc.abstractmethod
    def clear(self) -> None:
        """Forgets every entry."""

    @abc.abstractmethod
    def __getitem__(self, item: K) -> V: ...

    @abc.abstractmethod
    def __setitem__(self, key: K, value: V) -> None: ...

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def contains(self, item: K) -> torch.Tensor:
        """Whether each row of ``item`` has an entry."""

    def __contains__(self, item: K) -> bool:
        return bool(self.contains(item).all())


def _identity(x: Any) -> Any:
    return x


class TensorDictMap(TensorDictModuleBase, TensorMap[TensorDictBase, TensorDictBase]):
    """Stores TensorDict rows under the hash of other TensorDict rows.

    ``tdmap[keys] = values`` hashes each row of ``keys`` (its ``query_module.in_keys``), turns the
    hash into a storage index and writes the matching row of ``values`` there;
    ``tdmap[keys]`` reads them back (an unknown key raises), ``tdmap.contains(keys)`` says which
    rows are known. Rows repeating a key in one write are written in order (the last one
    stays, or ``write_fn`` folds them). The storage is an rl-buffers storage
    (:class:`LazyTensorStorage` by default), so it is saved with ``storage.dumps(path)``.

    Keyword Args:
        query_module: maps rows to indices (a :class:`QueryModule`).
        storage: where the values live.
        collate_fn: applied to what the storage returns. Defaults to the identity (stacking
            for a :class:`ListStorage`).
        out_keys: the value entries kept (others are dropped on write). Defaults to all.
        write_fn: ``write_fn(new)`` for a new key, ``write_fn(new, old)`` for a known one:
            the row actually stored (e.g. a running sum of visits).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage
        >>> tdmap = TensorDictMap(query_module=QueryModule(in_keys=["key1", "key2"]),
        ...                       storage=LazyTensorStorage(1000))
        >>> keys = TensorDict(key1=torch.tensor([[-1], [1], [3]]),
        ...                   key2=torch.tensor([[0], [2], [4]]), batch_size=[3])
        >>> tdmap[keys] = TensorDict(out=torch.tensor([10.0, 20.0, 30.0]), batch_size=[3])
        >>> tdmap[keys[1:]]["out"].tolist(), len(tdmap)
        ([20.0, 30.0], 3)
        >>> keys["key2"][0] = 5
        >>> tdmap.contains(keys).tolist()
        [False, True, True]
    """

    def __init__(
        self,
        *,
        query_module: QueryModule,
        storage: Storage,
        collate_fn: Callable[[Any], Any] | None = None,
        out_keys: list[NestedKey] | None = None,
        write_fn: Callable[..., TensorDictBase] | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(storage, Storage):
            raise TypeError(
                f"TensorDictMap: expected storage to be an rl_buffers Storage (e.g. "
                f"LazyTensorStorage(1000)), got {type(storage).__name__}."
            )
        self.query_module = query_module
        self.in_keys = list(query_module.in_keys)
        self.index_key = query_module.index_key
        self.storage = storage
        self._fixed_out_keys = list(out_keys) if out_keys is not None else None
        if collate_fn is None:
            collate_fn = lazy_stack if isinstance(storage, ListStorage) else _identity
        self.collate_fn = collate_fn
        self.write_fn = write_fn
        self._known = torch.zeros(storage.max_size, dtype=torch.bool)

    @property
    def max_size(self) -> int:
        return self.storage.max_size

    @property
    def out_keys(self) -> list[NestedKey]:
        if self._fixed_out_keys is not None:
            return self._fixed_out_keys
        data = getattr(self.storage, "_data", None)
        if isinstance(data, TensorDictBase):
            return list(data.keys(True, True))
        return []

    @out_keys.setter
    def out_keys(self, value: list[NestedKey]) -> None:
        self._fixed_out_keys = list(value)

    @classmethod
    def from_tensordict_pair(
        cls,
        source: TensorDictBase,
        dest: TensorDictBase,
        in_keys: list[NestedKey],
        out_keys: list[NestedKey] | None = None,
        max_size: int = 1000,
        storage_constructor: Callable[[], Storage] | None = None,
        hash_module: Callable | list[Callable] | None = None,
        collate_fn: Callable[[Any], Any] | None = None,
        write_fn: Callable[..., TensorDictBase] | None = None,
        consolidated: bool | None = None,
    ) -> TensorDictMap:
        """A map from ``source``'s ``in_keys`` to ``dest``'s entries, with rules of thumb.

        Args:
            source: an example of the key rows.
            dest: an example of the value rows.
            in_keys: the entries of ``source`` that make the key.
            out_keys: the entries of ``dest`` stored. Defaults to all.
            max_size: the storage's size (when ``storage_constructor`` is not given).
            storage_constructor: builds the storage. Defaults to
                ``LazyTensorStorage(max_size)``.
            hash_module: defaults to :class:`SipHash` for entries of up to 16 features and
                :class:`RandomProjectionHash` beyond.
            collate_fn, write_fn: see the class.
            consolidated: TorchRL's flag for a consolidated storage; only ``None``/``False``
                (the storages here keep one tensor per entry).

        Raises:
            ValueError: ``consolidated=True``.
        """
        if consolidated:
            raise ValueError(
                "TensorDictMap.from_tensordict_pair: consolidated=True is not supported: the "
                "storages here keep one tensor per entry. Pass consolidated=None."
            )
        if hash_module is None:
            hash_module = []
            for key in in_keys:
                entry = source.get(key)
                features = 0 if entry.dim() == source.batch_dims else entry[0].numel()
                big = features > RandomProjectionHash._N_COMPONENTS_DEFAULT
                hash_module.append(RandomProjectionHash() if big else SipHash())
        query_module = QueryModule(in_keys, hash_module=hash_module)
        storage = storage_constructor() if storage_constructor else LazyTensorStorage(max_size)
        return cls(
            query_module=query_module,
            storage=storage,
            collate_fn=collate_fn,
            out_keys=out_keys,
            write_fn=write_fn,
        )

    def clear(self) -> None:
        self.storage.empty()
        self.query_module.hash_to_int.__init__()
        self._known.zero_()

    def _index(self, item: TensorDictBase, extend: bool) -> torch.Tensor:
        return self.query_module(item, extend=extend, clone=True)[self.index_key]

    def _check_room(self, index: torch.Tensor) -> None:
        if index.numel() and int(index.max()) >= self.max_size:
            raise RuntimeError(
                f"TensorDictMap: the map is full ({self.max_size} keys, its storage's "
                f"max_size); build it with a larger storage."
            )

    def __getitem__(self, item: TensorDictBase) -> TensorDictBase:
        scalar = item.batch_dims == 0
        if scalar:
            item = item.unsqueeze(0)
        index = self._index(item, extend=False).reshape(-1)
        known = self._lookup(index)
        if not bool(known.all()):
            missing = torch.nonzero(~known).reshape(-1).tolist()
            raise KeyError(
                f"TensorDictMap: rows {missing} of the query have no entry (their "
                f"{self.in_keys} were never written). Check with contains() first."
            )
        out = self.collate_fn(self.storage.get(index))
        out = out.reshape(*item.batch_size) if item.batch_dims > 1 else out
        return out[0] if scalar else out

    def __setitem__(self, item: TensorDictBase, value: TensorDictBase) -> None:
        if self._fixed_out_keys is not None:
            value = value.select(*self._fixed_out_keys, strict=False)
        if item.batch_dims == 0:
            item, value = item.unsqueeze(0), value.unsqueeze(0)
        item, value = item.reshape(-1), value.reshape(-1)
        index = self._index(item, extend=True)
        self._check_room(index)
        if index.unique().numel() < index.numel():
            for i in range(index.numel()):  # repeated keys: one row at a time, in order
                self._write(index[i : i + 1], value[i : i + 1])
            return
        self._write(index, value)

    def _write(self, index: torch.Tensor, value: TensorDictBase) -> None:
        if self.write_fn is not None:
            known = self._lookup(index)
            fresh = self.write_fn(value)
            if bool(known.any()):
                merged = self.write_fn(value[known], self.storage.get(index[known]))
                fresh[known] = merged
            value = fresh
        self.storage.set(index, value)
        self._known[index] = True

    def _lookup(self, index: torch.Tensor) -> torch.Tensor:
        inside = index < self.max_size
        known = torch.zeros(index.shape, dtype=torch.bool)
        known[inside] = self._known[index[inside]]
        return known

    def __len__(self) -> int:
        return int(self._known.sum())

    def contains(self, item: TensorDictBase) -> torch.Tensor:
        scalar = item.batch_dims == 0
        if scalar:
            item = item.unsqueeze(0)
        known = self._lookup(self._index(item, extend=False))
        return known[0] if scalar else known

    def dumps(self, path: str | Path) -> None:
        """Saves the map under the directory ``path``: the storage through its ``dumps``, the
        query module's state (hash tables, projections) and which slots hold a key."""
        path = Path(path)
        self.storage.dumps(path / "storage")
        torch.save(
            {"query_module": self.query_module.state_dict(), "known": self._known},
            path / "map.pt",
        )

    def loads(self, path: str | Path) -> None:
        """Restores what :meth:`dumps` saved under ``path``.

        Raises:
            FileNotFoundError: ``path`` holds no saved map.
            ValueError: the saved map's size differs from this one's.
        """
        path = Path(path)
        if not (path / "map.pt").is_file():
            raise FileNotFoundError(
                f"TensorDictMap.loads: no saved map at {path} (map.pt is missing). Pass the "
                f"directory given to dumps()."
            )
        saved = torch.load(path / "map.pt", weights_only=False)
        if saved["known"].shape != self._known.shape:
            raise ValueError(
                f"TensorDictMap.loads: the saved map holds {saved['known'].numel()} slots, this "
                f"one {self.max_size}; build it with the same max_size."
            )
        self.storage.loads(path / "storage")
        self.query_module.load_state_dict(saved["query_module"])
        self._known = saved["known"].clone()

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {
            "query_module": self.query_module.state_dict(),
            "storage": self.storage.state_dict(),
            "known": self._known.clone(),
        }

    def load_state_dict(self, state_dict: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        missing = {"query_module", "storage", "known"} - set(state_dict)
        if missing:
            raise KeyError(
                f"TensorDictMap.load_state_dict: missing the entries {sorted(missing)}; "
                f"pass what TensorDictMap.state_dict() returned."
            )
        if state_dict["known"].shape != self._known.shape:
            raise ValueError(
                f"TensorDictMap.load_state_dict: the saved map holds {state_dict['known'].numel()} "
                f"slots, this one {self.max_size}; build it with the same max_size."
            )
        self.query_module.load_state_dict(state_dict["query_module"])
        self.storage.load_state_dict(state_dict["storage"])
        self._known = state_dict["known"].clone()


__all__ = ["TensorDictMap", "TensorMap"]
