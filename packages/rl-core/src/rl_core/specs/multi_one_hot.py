"""MultiOneHot: several independent choices, each one-hot, concatenated along the last dim."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch.nn.functional import one_hot

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_dtype, _as_size, _fmt_shape
from rl_core.specs._box import BoxList, CategoricalBox
from rl_core.specs._discrete import (
    _check_index_args,
    _check_mask,
    _check_nvec,
    _masked_out_failure,
    _sample_masked,
)
from rl_core.specs._leaf import _fmt_values, _LeafSpec


class MultiOneHot(_LeafSpec):
    """Several independent choices, each a one-hot block, concatenated along the last dim.

    Sub-action ``i`` is the block of ``nvec[i]`` entries that follows the blocks before it.
    The last dim (of size ``sum(nvec)``) is the event dim: never indexed or reshaped.
    :meth:`to_numpy` returns the indices of the hot entries (a gym ``MultiDiscrete``
    sample) and :meth:`encode` accepts either form.

    Args:
        nvec: the number of choices of each sub-action (a 1-d sequence or tensor of ints).
        shape: the full shape of a value; ``shape[-1]`` must be ``sum(nvec)``. Defaults to
            ``(sum(nvec),)``.
        device: the device of the values, or ``None`` for none pinned. Defaults to ``None``.
        dtype: the dtype of the vectors (bool, integer or floating). Defaults to
            ``torch.bool`` (also for ``None``).

    Keyword Args:
        mask: a bool tensor broadcastable to ``shape``, True for valid choices, or ``None``.

    Attributes:
        nvec: the choice counts, a 1-d int64 tensor on the CPU.

    Raises:
        TypeError: bad ``nvec`` or ``dtype``, or the mask is not a bool tensor.
        ValueError: an ``nvec`` entry is below 1, ``shape[-1] != sum(nvec)``, or the mask
            has the wrong shape or leaves a sub-action without a valid choice.

    Examples:
        >>> import torch
        >>> from rl_core.specs import MultiOneHot
        >>> spec = MultiOneHot([3, 2], dtype=torch.int64)
        >>> spec
        MultiOneHot(shape=(5,), dtype=int64, nvec=[3, 2])
        >>> spec.encode([2, 0])
        tensor([0, 0, 1, 1, 0])
        >>> spec.to_numpy(torch.tensor([0, 1, 0, 0, 1]))
        array([1, 1])
        >>> spec.project(torch.tensor([0.1, 0.0, 0.5, 2.0, 3.0]))
        tensor([0, 0, 1, 0, 1])
    """

    _params = ("mask",)
    _attrs = ("_nvec",)
    _event_ndim = 1

    def __init__(
        self,
        nvec: Any,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.bool,
        *,
        mask: torch.Tensor | None = None,
    ) -> None:
        nvec_t = _check_nvec(nvec, "MultiOneHot")
        total = int(nvec_t.sum())
        size = torch.Size((total,)) if shape is None else _as_size(shape, "MultiOneHot")
        if not size or size[-1] != total:
            raise ValueError(
                f"MultiOneHot: expected shape[-1] == sum(nvec) == {total}, got "
                f"shape={_fmt_shape(size)}. Use shape=(*batch, {total})."
            )
        dtype = _as_dtype(dtype, "MultiOneHot", default=torch.bool)
        if dtype.is_complex:
            raise TypeError(
                f"MultiOneHot: expected a bool, integer or floating dtype, got {dtype}."
            )
        device = _as_device(device, "MultiOneHot")
        super().__init__(size, device, dtype)
        self.nvec = nvec_t
        self._refresh()
        self.mask = _check_mask(mask, size, device, "MultiOneHot", nvec_t)

    @property
    def space(self) -> BoxList:
        """TorchRL's ``BoxList`` of one ``CategoricalBox`` per sub-action."""
        return BoxList(tuple(CategoricalBox(n) for n in self._nvec))

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        if dtype.is_complex:
            raise TypeError(f"{where}: expected a bool, integer or floating dtype, got {dtype}.")

    def _refresh(self) -> None:
        self._nvec = tuple(self.nvec.tolist())
        self._degenerate = len(self._nvec) == sum(self._nvec)

    @staticmethod
    def _is_index_dtype(t: torch.Tensor) -> bool:
        return not (t.is_floating_point() or t.is_complex() or t.dtype is torch.bool)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets the action mask in place: a bool tensor broadcastable to ``shape`` (True = valid),
        or ``None``. ``TypeError`` for a non-bool mask, ``ValueError`` for a wrong shape or
        a sub-action without any valid choice.
        """
        self.mask = _check_mask(mask, self.shape, self.device, "MultiOneHot.update_mask", self.nvec)

    def _from_indices(self, indices: torch.Tensor) -> torch.Tensor:
        blocks = [one_hot(indices[..., i].long(), n) for i, n in enumerate(self._nvec)]
        return torch.cat(blocks, -1).to(self._dtype)

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples each sub-action's valid choices uniformly."""
        batch = self._full(shape)[:-1]
        if self.mask is None:
            u = torch.rand((*batch, len(self._nvec)), dtype=torch.float64, device=self.device)
            nvec = self.nvec.to(u.device)
            indices = torch.minimum((u * nvec).floor(), nvec - 1)
        else:
            parts = self.mask.split(self._nvec, dim=-1)
            indices = torch.stack([_sample_masked(m, batch) for m in parts], -1)
        return self._from_indices(indices)

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        if self._dtype is not torch.bool and not bool(((value == 0) | (value == 1)).all()):
            return "has entries other than 0 and 1, expected one-hot blocks"
        for i, block in enumerate(value.split(self._nvec, dim=-1)):
            count = block.sum(-1)
            if not bool((count == 1).all()):
                at = tuple(int(j) for j in (count != 1).nonzero()[0])
                return (
                    f"is not one-hot in sub-action {i}: the block at batch index {at} has "
                    f"{int(count[at])} ones, expected exactly 1"
                )
        return _masked_out_failure(value, self.mask)

    def project(self, value: Any) -> torch.Tensor:
        """Maps each block to the one-hot vector of its argmax (among valid choices)."""
        value = self._project_input(value).double()
        if value.shape != self.shape:  # leading batch dims: project element by element
            return self._for_value(value).project(value)
        big = torch.finfo(torch.float64).max
        scores = torch.nan_to_num(value, nan=-big, posinf=big, neginf=-big)
        if self.mask is not None:
            scores = scores.masked_fill(~self.mask, float("-inf"))
        indices = [block.argmax(-1) for block in scores.split(self._nvec, dim=-1)]
        return self._from_indices(torch.stack(indices, -1))

    def _indices(self, value: torch.Tensor) -> torch.Tensor:
        hot = value.to(torch.uint8) if value.dtype is torch.bool else value
        return torch.stack([b.argmax(-1) for b in hot.split(self._nvec, dim=-1)], -1)

    def encode(self, value: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """Converts one-hot blocks (shape ``self.shape``), or integer sub-action indices (shape
        ``(*self.shape[:-1], len(nvec))``), to a tensor of the spec.

        When both shapes coincide (every ``nvec`` is 1), an all-zero integer value is read as
        indices and anything else as one-hot blocks. Otherwise as :meth:`TensorSpec.encode`.
        """
        out = self._as_tensor(value, None, None if ignore_device else self.device)
        index_shape = (*self.shape[:-1], len(self._nvec))
        if out.shape == self.shape:
            if self._degenerate and self._is_index_dtype(out) and not bool(out.any()):
                return self._from_indices(out)  # every nvec is 1: all-zero indices
            return out.to(self._dtype)
        if out.shape == index_shape and self._is_index_dtype(out):
            return self._from_indices(out)
        self._raise_encode_shape(
            out.shape, f" (or sub-action indices of shape {_fmt_shape(index_shape)})"
        )

    def to_numpy(self, value: torch.Tensor, *, safe: bool = False) -> np.ndarray:
        """Converts one-hot blocks ``(..., sum(nvec))`` to int64 numpy sub-action *indices*
        ``(..., len(nvec))`` (a ``MultiDiscrete`` sample); :meth:`encode` maps them back.
        """
        if safe:
            self.assert_is_in(value)
        if not isinstance(value, torch.Tensor):
            raise TypeError(
                f"MultiOneHot.to_numpy: expected a torch.Tensor, got {type(value).__name__}."
            )
        return self._indices(value.detach()).cpu().numpy()

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Picks the value of each chosen sub-action, as :meth:`Categorical.index`: ``index`` and
        ``tensor_to_index`` are ``(*B, sum(nvec))``, the result ``(*B, len(nvec))``.
        """
        total = sum(self._nvec)
        _check_index_args(index, tensor_to_index, total, "MultiOneHot.index", event_size=total)
        indices = self._indices(index)
        parts = tensor_to_index.split(self._nvec, dim=-1)
        return torch.cat([p.gather(-1, indices[..., i : i + 1]) for i, p in enumerate(parts)], -1)

    def cardinality(self) -> int:
        """The number of distinct values, ``prod(nvec)``."""
        out = 1
        for n in self._nvec:
            out *= n
        return out

    def _repr_extra(self) -> list[str]:
        extra = [f"nvec={list(self._nvec)}"]
        if self.mask is not None:
            extra.append(f"mask={_fmt_values(self.mask)}")
        return extra
