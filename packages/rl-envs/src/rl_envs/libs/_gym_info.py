"""Reading gymnasium ``info`` dicts into TensorDict entries with specs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import TensorDictBase

from rl_core.specs import Categorical, Composite, TensorSpec, Unbounded
from rl_envs.libs._gym_specs import numpy_dtype, torch_dtype


class InfoDictReader:
    """Copies selected entries of a gymnasium ``info`` dict into the step (and reset) output.

    Each key becomes an observation entry of the same name, with its own spec. Specs describe
    one sub-env (no batch dims); the env prepends its batch size when the reader is attached
    with :meth:`GymWrapper.set_info_dict_reader`. Without specs, they are inferred from the
    ``info`` dict of a reset: numbers and numeric arrays become ``Unbounded`` (bools a
    boolean ``Categorical(2)``) of the value's dtype and shape.

    A key missing from an ``info`` dict is written as zeros, so every step holds every entry
    (vector envs already fill the sub-envs that lack a key with zeros).

    Args:
        keys: the ``info`` keys to read; ``None`` reads every numeric entry found when the
            specs are inferred.
        spec: the specs, as a ``Composite`` (shape ``()``), a mapping ``key -> spec``, or a
            sequence of specs in the order of ``keys``; ``None`` to infer them.

    Keyword Args:
        ignore_private: with ``keys=None``, skip keys that start with ``"_"`` (gymnasium's
            vector masks). Defaults to ``True``.

    Raises:
        ValueError: ``spec`` is a sequence of another length than ``keys``, or ``spec`` is
            given without ``keys`` as a sequence.
        TypeError: a spec is not a ``TensorSpec``.

    Examples:
        >>> import numpy as np
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.specs import Unbounded
        >>> from rl_envs.libs import default_info_dict_reader
        >>> reader = default_info_dict_reader(["lives"], spec=[Unbounded(shape=(), dtype=torch.int64)])
        >>> td = reader({"lives": np.int64(3)}, TensorDict())
        >>> td["lives"]
        tensor(3)
    """

    def __init__(
        self,
        keys: Sequence[str] | None = None,
        spec: Composite | Mapping[str, TensorSpec] | Sequence[TensorSpec] | None = None,
        *,
        ignore_private: bool = True,
    ) -> None:
        if isinstance(keys, str):
            keys = [keys]
        self.keys = None if keys is None else list(keys)
        self.ignore_private = ignore_private
        self._info_spec: Composite | None = None
        self._plan: list[tuple[str, np.dtype, torch.Size]] = []
        if spec is not None:
            self._set_spec(self._as_composite(spec))

    @property
    def info_spec(self) -> Composite | None:
        """The specs of the entries read, for one sub-env (``None`` until known)."""
        return self._info_spec

    def _as_composite(self, spec: Any) -> Composite:
        if isinstance(spec, Composite):
            entries = {key: spec[key] for key in spec.keys()}
        elif isinstance(spec, Mapping):
            entries = dict(spec)
        else:
            specs = list(spec)
            if self.keys is None:
                raise ValueError(
                    "default_info_dict_reader: a sequence of specs needs the keys they belong "
                    "to; pass keys=[...] too, or pass the specs as a dict {key: spec}."
                )
            if len(specs) != len(self.keys):
                raise ValueError(
                    f"default_info_dict_reader: expected one spec per key ({len(self.keys)} "
                    f"keys: {self.keys}), got {len(specs)} specs."
                )
            entries = dict(zip(self.keys, specs))
        for key, value in entries.items():
            if not isinstance(value, TensorSpec):
                raise TypeError(
                    f"default_info_dict_reader: expected a TensorSpec for {key!r}, got "
                    f"{type(value).__name__}."
                )
        if self.keys is None:
            self.keys = list(entries)
        missing = [key for key in self.keys if key not in entries]
        if missing:
            raise ValueError(
                f"default_info_dict_reader: no spec for the keys {missing}; give one spec per key."
            )
        return Composite({key: entries[key] for key in self.keys})

    def _set_spec(self, spec: Composite) -> None:
        self._info_spec = spec
        self._plan = [
            (key, numpy_dtype(spec[key].dtype), torch.Size(spec[key].shape)) for key in spec.keys()
        ]

    def infer_spec(self, info: Mapping[str, Any], batch_ndim: int = 0) -> Composite:
        """Builds the specs from an ``info`` dict (of a reset) and keeps them.

        Args:
            info: the ``info`` dict.
            batch_ndim: leading batch dims of the values (1 for a vector env).

        Returns:
            The specs, for one sub-env.

        Raises:
            KeyError: a requested key is not in ``info``.
            TypeError: a requested entry is not numeric.
        """
        entries: dict[str, TensorSpec] = {}
        keys = self.keys
        if keys is None:
            keys = [k for k in info if not (self.ignore_private and k.startswith("_"))]
        for key in keys:
            if key not in info:
                raise KeyError(
                    f"InfoDictReader: the key {key!r} is not in the info dict of a reset (keys: "
                    f"{sorted(info)}). Give its spec: default_info_dict_reader([{key!r}], "
                    f"spec=[Unbounded(shape=(), dtype=torch.float32)])."
                )
            value = np.asarray(info[key])
            if value.dtype.kind not in "biuf":
                if self.keys is None:
                    continue
                raise TypeError(
                    f"InfoDictReader: the info entry {key!r} holds {value.dtype} values; only "
                    f"numbers and numeric arrays can be read."
                )
            shape = value.shape[batch_ndim:]
            dtype = torch_dtype(value.dtype)
            if dtype is torch.bool:
                entries[key] = Categorical(2, shape=shape, dtype=torch.bool)
            else:
                entries[key] = Unbounded(shape=shape, dtype=dtype)
        self.keys = list(entries)
        spec = Composite(entries)
        self._set_spec(spec)
        return spec

    def __call__(self, info: Mapping[str, Any], tensordict: TensorDictBase) -> TensorDictBase:
        """Writes the selected ``info`` entries into ``tensordict`` and returns it.

        Raises:
            RuntimeError: the specs are not known yet (attach the reader to an env first).
        """
        if self._info_spec is None:
            raise RuntimeError(
                "InfoDictReader: the specs are not known yet; attach the reader with "
                "env.set_info_dict_reader(reader), which infers them, or pass spec=..."
            )
        batch = tensordict.batch_size
        for key, np_dtype, shape in self._plan:
            value = info.get(key, None)
            if value is None:
                tensor = torch.zeros((*batch, *shape), dtype=torch_dtype(np_dtype))
            else:
                tensor = torch.from_numpy(np.array(value, dtype=np_dtype))
            tensordict.set(key, tensor)
        return tensordict


def default_info_dict_reader(
    keys: Sequence[str] | None = None,
    spec: Composite | Mapping[str, TensorSpec] | Sequence[TensorSpec] | None = None,
    *,
    ignore_private: bool = True,
) -> InfoDictReader:
    """Returns an :class:`InfoDictReader` for ``keys`` (see there); TorchRL's name for it.

    Examples:
        >>> from rl_envs.libs import default_info_dict_reader
        >>> reader = default_info_dict_reader(["lives"])
        >>> reader.keys, reader.info_spec
        (['lives'], None)
    """
    return InfoDictReader(keys, spec, ignore_private=ignore_private)


def with_info_entries(
    observation_spec: Composite,
    reader: Any,
    reset_info: Callable[[], Mapping[str, Any]],
    where: str,
) -> Composite:
    """``observation_spec`` with the entries ``reader`` writes, expanded to its batch shape.

    The reader's specs are its ``info_spec``; when it has none yet, its ``infer_spec`` builds
    them from ``reset_info()``, the ``info`` of a reset of the env.

    Args:
        observation_spec: the wrapper's observation spec (not modified).
        reader: the info reader.
        reset_info: resets the env and returns the ``info`` dict.
        where: the caller, as errors name it.

    Raises:
        TypeError: the reader has no specs and cannot infer them.
        ValueError: an entry of the reader clashes with an observation entry.
    """
    spec = getattr(reader, "info_spec", None)
    if spec is None:
        infer = getattr(reader, "infer_spec", None)
        if infer is None:
            raise TypeError(
                f"{where}: the reader has no info_spec and no infer_spec method; give it the "
                f"specs of the entries it writes."
            )
        spec = infer(reset_info(), len(observation_spec.shape))
    merged = observation_spec.clone()
    batch = tuple(observation_spec.shape)
    for key in spec.keys():
        if key in merged.keys():
            raise ValueError(
                f"{where}: the info entry {key!r} clashes with an observation entry of the "
                f"same name."
            )
        leaf = spec[key]
        merged[key] = leaf.expand(*batch, *leaf.shape)
    return merged


__all__ = ["InfoDictReader", "default_info_dict_reader", "with_info_entries"]
