"""Gymnasium spaces of PettingZoo agents as group specs, with per-agent value conversion.

A private, minimal converter for the spaces PettingZoo tasks use: ``Box``, ``Discrete``,
``MultiDiscrete``, ``MultiBinary`` and ``Dict`` of those. A :class:`_GroupCodec` turns the
spaces of the agents of one group into one spec whose first dim is the agent dim, packs the
agents' numpy values into one tensor (:meth:`_GroupCodec.encode`) and splits a group tensor
back into per-agent values (:meth:`_GroupCodec.decode`, for actions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from rl_core.specs import (
    Binary,
    Bounded,
    Categorical,
    MultiCategorical,
    MultiOneHot,
    OneHot,
    TensorSpec,
    Unbounded,
    stack_specs,
)

_BOX, _DISCRETE, _MULTI_DISCRETE, _MULTI_BINARY = "Box", "Discrete", "MultiDiscrete", "MultiBinary"


def _space_kind(space: Any, where: str) -> str:
    kind = type(space).__name__
    if kind not in (_BOX, _DISCRETE, _MULTI_DISCRETE, _MULTI_BINARY):
        raise TypeError(
            f"{where}: the space {space!r} ({kind}) is not supported; expected Box, Discrete, "
            f"MultiDiscrete, MultiBinary or a Dict of those."
        )
    return kind


def _torch_dtype(np_dtype: Any) -> torch.dtype:
    return torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype


def _agent_spec(space: Any, kind: str, *, categorical: bool) -> TensorSpec:
    """The spec of one agent's value (no agent dim)."""
    if kind == _BOX:
        dtype = _torch_dtype(space.dtype)
        low, high = np.asarray(space.low), np.asarray(space.high)
        if dtype.is_floating_point and np.isinf(low).all() and np.isinf(high).all():
            return Unbounded(shape=space.shape, dtype=dtype)
        if dtype is torch.bool:
            return Categorical(2, shape=space.shape, dtype=dtype)
        return Bounded(torch.as_tensor(low), torch.as_tensor(high), shape=space.shape, dtype=dtype)
    if kind == _DISCRETE:
        n = int(space.n)
        return Categorical(n) if categorical else OneHot(n)
    if kind == _MULTI_DISCRETE:
        nvec = np.asarray(space.nvec)
        if nvec.ndim != 1:
            raise TypeError(
                f"MultiDiscrete spaces with a {nvec.ndim}-d nvec are not supported; got "
                f"{space!r}. Flatten the space in a PettingZoo wrapper first."
            )
        return MultiCategorical(nvec.tolist()) if categorical else MultiOneHot(nvec.tolist())
    return Binary(shape=space.shape)


def _start(space: Any, kind: str) -> np.ndarray | int:
    if kind == _DISCRETE:
        return int(space.start)
    if kind == _MULTI_DISCRETE:
        return np.asarray(space.start)
    return 0


class _GroupCodec:
    """One entry of a group: its spec (agent dim first) and the numpy <-> tensor packing.

    Args:
        spaces: the space of each agent of the group, in group order.
        where: the owner named in errors (``"PettingZooWrapper, group 'agents', observation"``).
        categorical: discrete spaces become index specs (``Categorical``/``MultiCategorical``)
            instead of one-hot ones.

    Raises:
        TypeError: a space is not supported, or the agents' spaces are of different kinds.
        ValueError: the agents' values have different shapes (they cannot share a tensor).
    """

    def __init__(self, spaces: Sequence[Any], where: str, *, categorical: bool = True) -> None:
        kinds = {_space_kind(space, where) for space in spaces}
        if len(kinds) != 1:
            raise TypeError(
                f"{where}: the agents of one group have spaces of different kinds "
                f"({sorted(kinds)}); put them in separate groups with group_map."
            )
        self.kind = kinds.pop()
        self.one_hot = not categorical and self.kind in (_DISCRETE, _MULTI_DISCRETE)
        self.n_agents = len(spaces)
        agent_specs = [_agent_spec(s, self.kind, categorical=categorical) for s in spaces]
        shapes = {tuple(spec.shape) for spec in agent_specs}
        if len(shapes) != 1:
            raise ValueError(
                f"{where}: the agents of one group have values of different shapes "
                f"({sorted(shapes)}), which cannot be stacked into one tensor. Put them in "
                f"separate groups: group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT, or a dict "
                f"{{group: [agent names]}} whose groups hold agents with equal spaces."
            )
        self.spec = stack_specs(agent_specs)
        self.dtype = agent_specs[0].dtype
        self.np_dtypes = [s.dtype for s in spaces]
        if self.kind == _MULTI_DISCRETE:
            nvecs = {tuple(np.asarray(s.nvec).tolist()) for s in spaces}
            if self.one_hot and len(nvecs) != 1:
                raise ValueError(
                    f"{where}: one-hot actions need the same MultiDiscrete nvec for every agent "
                    f"of a group, got {sorted(nvecs)}. Pass categorical_actions=True or put "
                    f"the agents in separate groups."
                )
            self.nvec = list(nvecs.pop())
        starts = [np.asarray(_start(s, self.kind)) for s in spaces]
        # Discrete spaces may start at an offset; values are stored from 0.
        self.offset = None if all((s == 0).all() for s in starts) else np.stack(starts)
        raw_shape = () if self.kind == _DISCRETE else spaces[0].shape
        self._zero = np.zeros(raw_shape, dtype=self.np_dtypes[0])

    def encode(self, values: Sequence[Any]) -> torch.Tensor:
        """Packs one value per agent (``None`` for an agent without one: zeros) into a tensor.

        Args:
            values: the agents' values, in group order.

        Returns:
            A tensor of shape ``spec.shape`` and dtype ``spec.dtype`` (on the CPU).
        """
        arrays = [self._zero if v is None else v for v in values]
        stacked = np.asarray(arrays) if self.kind == _DISCRETE else np.stack(arrays)
        if self.offset is not None:
            present = np.array([v is not None for v in values])
            stacked = stacked - self.offset * present.reshape(-1, *([1] * (stacked.ndim - 1)))
        tensor = torch.from_numpy(np.ascontiguousarray(stacked))
        if self.one_hot:
            tensor = self._to_one_hot(tensor.long())
        return tensor.to(self.dtype)

    def _to_one_hot(self, index: torch.Tensor) -> torch.Tensor:
        if self.kind == _DISCRETE:
            return torch.nn.functional.one_hot(index, self.spec.shape[-1])
        blocks = [torch.nn.functional.one_hot(index[:, i], n) for i, n in enumerate(self.nvec)]
        return torch.cat(blocks, -1)

    def decode(self, tensor: torch.Tensor) -> list[Any]:
        """Splits a group tensor into one value per agent, in each agent's space dtype.

        Args:
            tensor: a tensor of shape ``spec.shape``.

        Returns:
            A list of ``n_agents`` values: python ints for ``Discrete``, numpy arrays else.
        """
        value = tensor.detach().cpu()
        if self.one_hot:
            value = value.to(torch.uint8) if value.dtype is torch.bool else value
            if self.kind == _DISCRETE:
                value = value.argmax(-1)
            else:
                value = torch.stack([p.argmax(-1) for p in value.split(self.nvec, -1)], -1)
        array = value.numpy()
        if self.offset is not None:
            array = array + self.offset
        if self.kind == _DISCRETE:
            return [int(v) for v in array.tolist()]
        return [array[i].astype(self.np_dtypes[i], copy=False) for i in range(self.n_agents)]


def split_dict_space(space: Any) -> tuple[Any, tuple[str, ...], Any | None]:
    """Splits an agent's observation space into its observation and action-mask parts.

    Returns:
        ``(observation space, path of the observation inside a raw value, mask space)``. A
        ``Dict`` of ``"observation"`` and ``"action_mask"`` (the PettingZoo convention for
        board games) gives the inner observation space, path ``("observation",)`` and the
        mask space; another ``Dict`` with an ``"action_mask"`` loses that entry (path ``()``);
        any other space comes back whole, with path ``()`` and no mask.
    """
    if type(space).__name__ != "Dict" or "action_mask" not in space.spaces:
        return space, (), None
    rest = {k: v for k, v in space.spaces.items() if k != "action_mask"}
    mask = space.spaces["action_mask"]
    if set(rest) == {"observation"}:
        return rest["observation"], ("observation",), mask
    return type(space)(rest), (), mask


def leaf_codecs(
    spaces: Sequence[Any], where: str, *, categorical: bool = True
) -> list[tuple[tuple[str, ...], _GroupCodec]]:
    """``(path inside an agent's value, codec)`` for every leaf of the agents' spaces.

    A plain space gives one leaf with path ``()``; a ``Dict`` gives one leaf per entry (nested
    dicts recurse), and every agent must have the same keys.

    Raises:
        TypeError: the agents' dict spaces have different keys, or a space is not supported.
    """
    if type(spaces[0]).__name__ != "Dict":
        return [((), _GroupCodec(spaces, where, categorical=categorical))]
    keys = list(spaces[0].spaces)
    for space in spaces[1:]:
        if type(space).__name__ != "Dict" or list(space.spaces) != keys:
            raise TypeError(
                f"{where}: the agents of one group have different dict spaces ({spaces[0]!r} "
                f"and {space!r}); put them in separate groups with group_map."
            )
    out: list[tuple[tuple[str, ...], _GroupCodec]] = []
    for key in keys:
        sub = [space.spaces[key] for space in spaces]
        for path, codec in leaf_codecs(sub, f"{where}[{key!r}]", categorical=categorical):
            out.append(((key, *path), codec))
    return out


def value_at(value: Any, path: tuple[str, ...]) -> Any:
    """The entry at ``path`` of a (nested) dict value; ``None`` stays ``None``."""
    for key in path:
        if value is None:
            return None
        value = value[key]
    return value


__all__ = ["leaf_codecs", "split_dict_space", "value_at"]
