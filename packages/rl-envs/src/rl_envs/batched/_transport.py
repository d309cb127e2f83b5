"""ParallelEnv's transports, parent side: how inputs reach the workers and outputs come back.

Two implementations of one interface, :class:`Transport`:

- :class:`SharedMemoryTransport`: the parent writes the sent entries into shared buffers and
  sends a one-byte-per-entry presence list; workers write their outputs into shared buffers
  and reply with a status byte; the parent copies each buffer out whole.
- :class:`PipeTransport`: each message carries the pickled rows (entries that cannot live in
  shared memory, such as non-tensor data, need it).

The commands are described in :mod:`rl_envs.batched._worker`; the worker side of each
transport is in :mod:`rl_envs.batched._worker_transport`.
"""

from __future__ import annotations

import pickle
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import torch
from tensordict import TensorDictBase

from rl_core._accel.td_access import TreeBuilder, get_leaf, set_leaf
from rl_envs.batched import _wire
from rl_envs.batched._meta import Path
from rl_envs.batched._shared import RowCopies, SharedBuffers


class PartialReset(NamedTuple):
    """A reset of some workers: the caller's TensorDict, its masks (one per mask path, ``None``
    where absent), the workers to reset and the reset keyword arguments."""

    tensordict: TensorDictBase
    masks: list[torch.Tensor | None]
    targets: list[int]
    kwargs: dict[str, Any]


class Transport(ABC):
    """Moves ParallelEnv's data between the parent and its workers (parent side).

    Args:
        paths: the entry paths of each buffer (``"sent"``, ``"step_outputs"``,
            ``"reset_outputs"``, ``"masks"``).
        batch_size: the ParallelEnv's batch size.
        device: where outputs go (``None``: the CPU).
    """

    #: The shared buffers the workers attach to (``None`` for pipes).
    shared: SharedBuffers | None = None

    def __init__(
        self, paths: dict[str, list[Path]], batch_size: torch.Size, device: torch.device | None
    ) -> None:
        self.paths = paths
        self.batch_size = batch_size
        self.device = device
        self.num_workers = batch_size[0]

    @abstractmethod
    def inputs(self, command: bytes, tensordict: TensorDictBase) -> bytes | list[bytes]:
        """The message(s) of ``command`` carrying the sent entries of ``tensordict``."""

    @abstractmethod
    def outputs(self, name: str, replies: dict[int, bytes]) -> TensorDictBase:
        """A fresh TensorDict of every worker's outputs ``name``, on :attr:`device`."""

    @abstractmethod
    def fused_outputs(self, replies: dict[int, bytes]) -> tuple[TensorDictBase, Any]:
        """The step outputs of a ``STEP_AND_RESET`` command and the pending reset rows
        (``None`` when no worker reset), for :meth:`merge_reset_rows`."""

    @abstractmethod
    def reset_rows(self, pending: dict[int, Any]) -> list[torch.Tensor] | None:
        """The whole reset buffer (one value per reset path), or ``None`` to take the rows of
        ``pending`` one by one."""

    @abstractmethod
    def partial_reset(self, send: Any, request: PartialReset) -> TensorDictBase:
        """Resets the workers ``request.targets`` with their rows of ``request.masks``; the
        reset outputs.

        ``send(indices, messages, what)`` exchanges messages with the workers.
        """

    def merge_reset_rows(
        self, next_root: TensorDictBase, pending: dict[int, Any]
    ) -> TensorDictBase:
        """``next_root`` with the reset outputs of the workers in ``pending`` in their rows."""
        values = self.reset_rows(pending)
        for k, path in enumerate(self.paths["reset_outputs"]):
            current = get_leaf(next_root, path, None)
            if current is None:
                continue
            if values is not None:
                value = values[k]
            else:
                value = current.clone()
                for i, fresh in pending.items():
                    value[i] = fresh.get(path)
            if len(path) == 1:
                set_leaf(next_root, path[0], value)
            else:
                next_root.set(path, value)
        return next_root


class SharedMemoryTransport(Transport):
    """Inputs and outputs through shared buffers; messages carry commands and status bytes.

    Args:
        shared: the shared buffers (batch ``[n, *sub_batch]``).
        paths: the entry paths of each buffer.
        batch_size: the ParallelEnv's batch size.
        device: where outputs go.
    """

    def __init__(
        self,
        shared: SharedBuffers,
        paths: dict[str, list[Path]],
        batch_size: torch.Size,
        device: torch.device | None,
    ) -> None:
        super().__init__(paths, batch_size, device)
        self.shared = shared
        self.leaves = {name: shared.leaves(name) for name in paths}
        self.builders = {name: TreeBuilder(p) for name, p in paths.items()}
        # Outputs are copied out of the shared blocks in one numpy copy per step.
        self.copies = {
            name: RowCopies(shared.blocks[name], shared.layouts[name])
            for name in ("step_outputs", "reset_outputs")
        }

    def _values(self, name: str) -> list[torch.Tensor]:
        device = self.device
        if device is not None and device.type != "cpu":
            return [leaf.to(device, copy=True) for leaf in self.leaves[name]]
        return self.copies[name].take()

    def inputs(self, command: bytes, tensordict: TensorDictBase) -> bytes:
        present = bytearray()
        for leaf, path in zip(self.leaves["sent"], self.paths["sent"]):
            value = get_leaf(tensordict, path, None)
            present.append(value is not None)
            if value is not None:
                leaf.copy_(value)
        return command + bytes(present)

    def outputs(self, name: str, replies: dict[int, bytes]) -> TensorDictBase:
        return self.builders[name].build(self._values(name), self.batch_size, self.device)

    def fused_outputs(self, replies: dict[int, bytes]) -> tuple[TensorDictBase, Any]:
        pending = {i: None for i, reply in replies.items() if reply == _wire.RESET_DONE}
        return self.outputs("step_outputs", replies), pending or None

    def reset_rows(self, pending: dict[int, Any]) -> list[torch.Tensor]:
        # Every worker wrote its whole next root to the reset buffer: take it whole.
        return self._values("reset_outputs")

    def partial_reset(self, send: Any, request: PartialReset) -> TensorDictBase:
        _, masks, targets, kwargs = request
        for leaf, mask in zip(self.leaves["masks"], masks):
            leaf.copy_(mask if mask is not None else torch.zeros_like(leaf))
        replies = send(targets, _wire.RESET + pickle.dumps((True, None, kwargs)), "resetting")
        return self.outputs("reset_outputs", replies)


class PipeTransport(Transport):
    """Every message carries pickled rows, one per worker."""

    def _stack(self, rows: list[TensorDictBase]) -> TensorDictBase:
        out = torch.stack(rows, 0)
        return out.to(self.device) if self.device is not None else out

    def inputs(self, command: bytes, tensordict: TensorDictBase) -> list[bytes]:
        selected = tensordict.select(*self.paths["sent"], strict=False).to("cpu")
        return [command + pickle.dumps(selected[i]) for i in range(self.num_workers)]

    def outputs(self, name: str, replies: dict[int, bytes]) -> TensorDictBase:
        return self._stack([pickle.loads(replies[i]) for i in range(self.num_workers)])

    def fused_outputs(self, replies: dict[int, bytes]) -> tuple[TensorDictBase, Any]:
        pairs = {i: pickle.loads(reply) for i, reply in replies.items()}
        pending = {i: pickle.loads(p[1]) for i, p in pairs.items() if p[1] is not None}
        step = {i: p[0] for i, p in pairs.items()}
        return self.outputs("step_outputs", step), pending or None

    def reset_rows(self, pending: dict[int, Any]) -> None:
        return None

    def partial_reset(self, send: Any, request: PartialReset) -> TensorDictBase:
        tensordict, masks, targets, kwargs = request
        messages = [
            _wire.RESET
            + pickle.dumps((True, [m[i].cpu() if m is not None else None for m in masks], kwargs))
            for i in targets
        ]
        replies = send(targets, messages, "resetting")
        # Sub-envs not reset keep their previous values (EnvBase.reset merges by mask).
        previous = tensordict.select(*self.paths["reset_outputs"], strict=False)
        fresh = {i: pickle.loads(r) for i, r in replies.items()}
        return self._stack(
            [fresh[i] if i in fresh else previous[i].cpu() for i in range(self.num_workers)]
        )


__all__ = ["PartialReset", "PipeTransport", "SharedMemoryTransport", "Transport"]
