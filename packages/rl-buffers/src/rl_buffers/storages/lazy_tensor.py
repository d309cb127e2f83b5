"""LazyTensorStorage: a tensor storage allocated from the first batch written."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_buffers.storages.tensor_storage import TensorStorage

__all__ = ["LazyTensorStorage"]


class LazyTensorStorage(TensorStorage):
    """A :class:`TensorStorage` whose memory is allocated when the first batch arrives.

    The first batch fixes the keys, per-item shapes and dtypes; later batches must match
    them (a mismatch raises, naming the key and both shapes).

    Args:
        max_size: the number of items the storage holds.

    Keyword Args:
        device: where the items live. Defaults to the first batch's device.
        ndim: how many leading batch dims of the written data index items. With ``ndim=2``
            and batches ``[n, T]``, the storage is ``[max_size // T, T]`` and writes whole
            rows. Defaults to 1.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_buffers import LazyTensorStorage
        >>> storage = LazyTensorStorage(100)
        >>> storage.set(torch.arange(4), TensorDict({"obs": torch.zeros(4, 3)}, [4]))
        >>> len(storage), storage.get(torch.tensor([0, 3]))["obs"].shape
        (4, torch.Size([2, 3]))
    """

    def __init__(
        self,
        max_size: int,
        *,
        device: torch.device | str | None = None,
        ndim: int = 1,
    ) -> None:
        super().__init__(None, max_size, device=device, ndim=ndim)

    def _allocate(self, template: Tensor | TensorDictBase, rows: int) -> Tensor | TensorDictBase:
        device = self.device if self.device is not None else template.device
        shape = (rows, *template.shape[1 : self.ndim])
        if isinstance(template, Tensor):
            return torch.zeros(
                (*shape, *template.shape[self.ndim :]), dtype=template.dtype, device=device
            )
        return _zeros_like_items(template, shape, self.ndim, device)


def _zeros_like_items(
    template: TensorDictBase, shape: tuple[int, ...], ndim: int, device: torch.device
) -> TensorDict:
    out = {}
    for key, value in template.items():
        if isinstance(value, TensorDictBase):
            out[key] = _zeros_like_items(value, shape, ndim, device)
        elif isinstance(value, Tensor):
            out[key] = torch.zeros((*shape, *value.shape[ndim:]), dtype=value.dtype, device=device)
        else:
            raise TypeError(
                f"LazyTensorStorage: expected tensor leaves, got {type(value).__name__} at key "
                f"{key!r}. Store non-tensor data in a ListStorage."
            )
    return TensorDict(out, batch_size=shape, device=device)
