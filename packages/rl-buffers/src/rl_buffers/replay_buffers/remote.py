"""A TensorDictReplayBuffer another process drives through ``torch.distributed.rpc``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from torch import Tensor

from rl_buffers.replay_buffers.tensordict_buffer import TensorDictReplayBuffer

_F = TypeVar("_F", bound=Callable[..., Any])


def _local(owner: Any) -> Any:
    """The buffer itself, whether ``owner`` is the buffer or an RPC remote reference to it
    (an ``RRef`` reaches this function on the process that owns the buffer)."""
    local_value = getattr(owner, "local_value", None)
    if local_value is not None and not isinstance(owner, TensorDictReplayBuffer):
        return local_value()
    return owner


def _accepts_rref(method: _F) -> _F:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(_local(self), *args, **kwargs)

    return call  # type: ignore[return-value]


class RemoteTensorDictReplayBuffer(TensorDictReplayBuffer):
    """A :class:`TensorDictReplayBuffer` whose methods can run on the process that owns it,
    called from another one through ``torch.distributed.rpc`` with a remote reference
    (``RRef``) in place of ``self``, as TorchRL's.

    Used locally it is a :class:`TensorDictReplayBuffer`. Remotely::

        rref = rpc.remote("buffer", RemoteTensorDictReplayBuffer, kwargs={"storage": ...})
        rpc.rpc_sync(rref.owner(), RemoteTensorDictReplayBuffer.extend, args=(rref, data))
        batch = rpc.rpc_sync(rref.owner(), RemoteTensorDictReplayBuffer.sample, args=(rref, 32))

    ``add``, ``extend``, ``sample``, ``update_priority``, ``update_tensordict_priority``,
    ``insert_transform``, ``append_transform``, ``empty``, ``state_dict`` and
    ``load_state_dict`` take the reference; the arguments are :class:`TensorDictReplayBuffer`'s.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage
        >>> from rl_buffers.replay_buffers import RemoteTensorDictReplayBuffer
        >>> rb = RemoteTensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=4)
        >>> _ = rb.extend(TensorDict(obs=torch.arange(6.0), batch_size=[6]))
        >>> rb.sample()["obs"].shape
        torch.Size([4])
    """

    @_accepts_rref
    def add(self, data: Any) -> int:
        return super().add(data)

    @_accepts_rref
    def extend(self, data: Any, *, update_priority: bool | None = None) -> Tensor:
        return super().extend(data, update_priority=update_priority)

    @_accepts_rref
    def sample(self, batch_size: int | None = None, return_info: bool = False) -> Any:
        return super().sample(batch_size, return_info)

    @_accepts_rref
    def update_priority(self, index: Any, priority: Tensor | float) -> None:
        super().update_priority(index, priority)

    @_accepts_rref
    def update_tensordict_priority(self, data: Any) -> None:
        super().update_tensordict_priority(data)

    @_accepts_rref
    def insert_transform(self, index: int, transform: Any) -> RemoteTensorDictReplayBuffer:
        return super().insert_transform(index, transform)

    @_accepts_rref
    def append_transform(self, transform: Any) -> RemoteTensorDictReplayBuffer:
        return super().append_transform(transform)

    @_accepts_rref
    def empty(self) -> None:
        super().empty()

    @_accepts_rref
    def state_dict(self) -> dict[str, Any]:
        return super().state_dict()

    @_accepts_rref
    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)


__all__ = ["RemoteTensorDictReplayBuffer"]
