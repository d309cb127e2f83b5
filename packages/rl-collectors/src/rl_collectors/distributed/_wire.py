"""What the trainer and its collector nodes share over ``torch.distributed``: the rendezvous
(a ``TCPStore`` and a gloo/nccl process group of their own, never the global default group),
the commands, and the packing of a TensorDict into one flat byte tensor per message.

Protocol: rank 0 is the trainer, ranks 1..N the nodes. A node connects, reads its
configuration from the store, builds its collector and publishes the layout of its batches
(``meta/<rank>``) or its error (``error/<rank>``). Then the trainer speaks first: a command
tensor ``int64[2]`` ``(command, argument)``, answered as the command says.
"""

from __future__ import annotations

import datetime
import pickle
import socket
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future
from typing import Any

import torch
import torch.distributed as dist
from tensordict import TensorDict, TensorDictBase

COLLECT, UPDATE, SEED, RESET, CLOSE = 1, 2, 3, 4, 5
# Seconds between two looks at a transfer in progress and at the nodes' processes.
POLL_S = 0.002
_ALIGN = 8


def free_port() -> int:
    """A TCP port nobody listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def make_store(host: str, port: int, world_size: int, is_master: bool, timeout: float) -> Any:
    return dist.TCPStore(
        host,
        port,
        world_size,
        is_master,
        datetime.timedelta(seconds=timeout),
        wait_for_workers=False,
    )


def make_group(store: Any, rank: int, world_size: int, backend: str, timeout: float) -> Any:
    """A process group of the trainer and its nodes only (the global group stays free)."""
    span = datetime.timedelta(seconds=timeout)
    if backend == "gloo":
        return dist.ProcessGroupGloo(store, rank, world_size, span)
    if backend == "nccl":
        return dist.ProcessGroupNCCL(store, rank, world_size)
    raise ValueError(f"expected backend 'gloo' or 'nccl', got {backend!r}.")


def dumps(obj: Any) -> bytes:
    """Pickles with cloudpickle where it is installed (lambdas, local classes), else pickle."""
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(obj)
    return cloudpickle.dumps(obj)


def layout(td: TensorDictBase) -> dict[str, Any]:
    """What a receiver needs to allocate ``td``: its batch size and each leaf's shape and
    dtype."""
    leaves = {}
    for key in sorted(td.keys(True, True), key=str):
        value = td.get(key)
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"distributed collector: entry {key!r} is a {type(value).__name__}; only "
                f"tensor entries travel between nodes."
            )
        leaves[key] = (tuple(value.shape), value.dtype)
    return {"batch_size": tuple(td.batch_size), "leaves": leaves}


class Packer:
    """Packs TensorDicts of one layout into one flat ``uint8`` tensor and back.

    Each leaf gets an 8-byte aligned slice of the buffer; ``unpack`` returns views into it.
    """

    def __init__(self, spec: dict[str, Any]) -> None:
        self.batch_size = spec["batch_size"]
        self.slots = []
        offset = 0
        for key, (shape, dtype) in spec["leaves"].items():
            size = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
            self.slots.append((key, shape, dtype, offset, size))
            offset += -(-size // _ALIGN) * _ALIGN
        self.nbytes = offset

    @classmethod
    def of(cls, td: TensorDictBase) -> Packer:
        return cls(layout(td))

    def empty(self, device: torch.device | str = "cpu") -> torch.Tensor:
        return torch.empty(self.nbytes, dtype=torch.uint8, device=device)

    def pack(self, td: TensorDictBase, out: torch.Tensor | None = None) -> torch.Tensor:
        out = self.empty() if out is None else out
        for key, shape, dtype, offset, size in self.slots:
            value = td.get(key)
            if tuple(value.shape) != tuple(shape) or value.dtype != dtype:
                raise ValueError(
                    f"distributed collector: entry {key!r} changed from {tuple(shape)} "
                    f"{dtype} to {tuple(value.shape)} {value.dtype} between messages."
                )
            out[offset : offset + size].copy_(
                value.detach().contiguous().reshape(-1).view(torch.uint8)
            )
        return out

    def unpack(self, buffer: torch.Tensor) -> TensorDict:
        td = TensorDict({}, batch_size=self.batch_size, device=buffer.device)
        for key, shape, dtype, offset, size in self.slots:
            td.set(key, buffer[offset : offset + size].view(dtype).view(shape))
        return td


def wait_for(done: Future, alive: Callable[[], str | None]) -> None:
    """Waits for a transfer being waited on in a helper thread (``done``: the future of its
    ``work.wait()``; gloo completes point-to-point work only inside ``wait``). ``alive()``
    returns why a peer is gone (then this raises it) or ``None``, so a dead peer never
    blocks the caller; a transfer that failed raises its error."""
    while not done.done():
        gone = alive()
        if gone is not None:
            raise RuntimeError(gone)
        futures.wait([done], timeout=POLL_S)
    done.result()


def command(group: Any, rank: int, code: int, argument: int = 0) -> Any:
    """Sends ``(code, argument)`` to ``rank``; returns the transfer."""
    return group.send([torch.tensor([code, argument], dtype=torch.int64)], rank, 0)


def worker_ids(ids: Any) -> list[int]:
    """``ids`` (one worker index or several) as a list."""
    return [ids] if isinstance(ids, int) else list(ids)


def load_weights(policy: torch.nn.Module, weights: Any) -> None:
    """Writes ``weights`` (a TensorDict, or a flat ``state_dict``-like mapping with dotted
    names) into ``policy``'s parameters and buffers in place."""
    if isinstance(weights, dict):
        weights = TensorDict(dict(weights), batch_size=[]).unflatten_keys(".")
    with torch.no_grad():
        TensorDict.from_module(policy).data.update_(weights)
