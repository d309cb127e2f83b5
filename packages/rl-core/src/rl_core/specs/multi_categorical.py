"""MultiCategorical: several independent choices, each an index in ``[0, nvec[i])``."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_dtype, _as_size, _fmt_shape
from rl_core.specs._discrete import (
    _check_index_args,
    _check_index_dtype,
    _check_mask,
    _check_nvec,
    _nearest_valid,
    _sample_masked,
)
from rl_core.specs._leaf import _fmt_values, _LeafSpec


def _check_multi_dtype(nvec: torch.Tensor, dtype: torch.dtype, where: str) -> None:
    _check_index_dtype(dtype, where)
    if int(nvec.max()) - 1 > torch.iinfo(dtype).max:
        raise ValueError(f"{where}: nvec={nvec.tolist()} does not fit dtype {dtype}.")


class MultiCategorical(_LeafSpec):
    """Several independent choices along the last dim: entry ``i`` is an index in ``[0, nvec[i])``.

    The gym ``MultiDiscrete`` space. The last dim (of size ``len(nvec)``) is the event dim:
    it is never indexed, squeezed or reshaped.

    Args:
        nvec: the number of choices of each sub-action (a 1-d sequence or tensor of ints).
        shape: the full shape of a value; ``shape[-1]`` must be ``len(nvec)``. Defaults to
            ``(len(nvec),)``.
        device: the device of the values, or ``None`` for none pinned. Defaults to ``None``.
        dtype: an integer dtype. Defaults to ``torch.int64`` (also for ``None``).

    Keyword Args:
        mask: a bool tensor broadcastable to ``(*shape[:-1], sum(nvec))`` (the masks of the
            sub-actions, concatenated), True for valid choices, or ``None``.

    Attributes:
        nvec: the choice counts, a 1-d int64 tensor on the CPU.

    Raises:
        TypeError: bad ``nvec`` or ``dtype``, or the mask is not a bool tensor.
        ValueError: an ``nvec`` entry is below 1, ``shape[-1] != len(nvec)``, or the mask
            has the wrong shape or leaves a sub-action without a valid choice.

    Examples:
        >>> import torch
        >>> from rl_core.specs import MultiCategorical
        >>> spec = MultiCategorical([3, 2])
        >>> spec
        MultiCategorical(shape=(2,), dtype=int64, nvec=[3, 2])
        >>> spec.is_in(torch.tensor([2, 1])), spec.is_in(torch.tensor([2, 2]))
        (True, False)
        >>> spec.cardinality()
        6
        >>> spec.index(torch.tensor([2, 0]), torch.tensor([0.1, 0.2, 0.3, 1.0, 2.0]))
        tensor([0.3000, 1.0000])
    """

    _params = ("mask",)
    _attrs = ("_nvec",)
    _event_ndim = 1

    def __init__(
        self,
        nvec: Any,
        shape: ShapeLike | None = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str | None = torch.int64,
        *,
        mask: torch.Tensor | None = None,
    ) -> None:
        nvec_t = _check_nvec(nvec, "MultiCategorical")
        k = len(nvec_t)
        size = torch.Size((k,)) if shape is None else _as_size(shape, "MultiCategorical")
        if not size or size[-1] != k:
            raise ValueError(
                f"MultiCategorical: expected shape[-1] == len(nvec) == {k}, got "
                f"shape={_fmt_shape(size)}. Use shape=(*batch, {k})."
            )
        dtype = _as_dtype(dtype, "MultiCategorical", default=torch.int64)
        _check_multi_dtype(nvec_t, dtype, "MultiCategorical")
        device = _as_device(device, "MultiCategorical")
        super().__init__(size, device, dtype)
        self.nvec = nvec_t
        self._refresh()
        self.mask = _check_mask(mask, self._mask_shape(), device, "MultiCategorical", nvec_t)

    def _refresh(self) -> None:
        self._nvec = tuple(self.nvec.tolist())
        self._nvec_dev = self.nvec.to(self.device) if self.device is not None else self.nvec

    def _mask_shape(self) -> torch.Size:
        return torch.Size((*self.shape[:-1], sum(self._nvec)))

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets the action mask in place.

        Args:
            mask: a bool tensor broadcastable to ``(*shape[:-1], sum(nvec))``, or ``None``.

        Raises:
            TypeError: the mask is not a bool tensor.
            ValueError: wrong shape, or a sub-action without any valid choice.
        """
        self.mask = _check_mask(
            mask, self._mask_shape(), self.device, "MultiCategorical.update_mask", self.nvec
        )

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples valid sub-actions uniformly and independently.

        Args:
            shape: leading dims to prepend. Defaults to ``()``.

        Returns:
            An integer tensor of shape ``(*shape, *self.shape)``.
        """
        size = self._full(shape)
        if self.mask is None:
            u = torch.rand(size, dtype=torch.float64, device=self.device)
            nvec = self._nvec_dev.to(u.device)
            return torch.minimum((u * nvec).floor(), nvec - 1).to(self._dtype)
        parts = self.mask.split(self._nvec, dim=-1)
        picks = [_sample_masked(m, size[:-1]) for m in parts]
        return torch.stack(picks, -1).to(self._dtype)

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        nvec = self._nvec_dev.to(value.device)
        inside = (value >= 0) & (value < nvec)
        if not bool(inside.all()):
            at = tuple(int(i) for i in (~inside).nonzero()[0])
            return (
                f"is outside [0, nvec - 1]: {value[at].item()} at index {at} "
                f"(nvec={list(self._nvec)})"
            )
        if self.mask is not None:
            for i, m in enumerate(self.mask.split(self._nvec, dim=-1)):
                valid = m.gather(-1, value[..., i : i + 1].long()).squeeze(-1)
                if not bool(valid.all()):
                    at = (*(int(j) for j in (~valid).nonzero()[0]), i)
                    return f"is a masked-out action: {value[at].item()} at index {at}"
        return None

    def project(self, value: Any) -> torch.Tensor:
        """Rounds and clamps each sub-action into ``[0, nvec[i] - 1]``; masked-out ones move
        to the closest valid choice (the lower on ties).

        Args:
            value: a tensor (or array-like) of shape ``self.shape``, or with leading batch dims
                ``(*batch, *self.shape)`` (projected element by element).

        Returns:
            A tensor of the spec's dtype that :meth:`is_in` accepts.

        Raises:
            ValueError: the shape does not end with ``self.shape``.
        """
        value = self._project_input(value)
        if value.shape != self.shape:  # leading batch dims: project element by element
            return self._for_value(value).project(value)
        if value.is_floating_point():
            value = torch.nan_to_num(value.double().round(), nan=0.0)
        nvec = self._nvec_dev.to(value.device)
        value = torch.minimum(value.long().clamp_min(0), nvec - 1)
        if self.mask is not None:
            parts = self.mask.split(self._nvec, dim=-1)
            value = torch.stack([_nearest_valid(value[..., i], m) for i, m in enumerate(parts)], -1)
        return value.to(self._dtype)

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Picks the value of each chosen sub-action: one value per sub-action.

        Args:
            index: sub-actions of shape ``(*B, len(nvec))``.
            tensor_to_index: the values of all choices, concatenated per sub-action, of
                shape ``(*B, sum(nvec))``.

        Returns:
            A tensor of shape ``(*B, len(nvec))``.

        Raises:
            TypeError: an argument is not a tensor.
            ValueError: the shapes do not match.
        """
        _check_index_args(
            index,
            tensor_to_index,
            sum(self._nvec),
            "MultiCategorical.index",
            event_size=len(self._nvec),
        )
        parts = tensor_to_index.split(self._nvec, dim=-1)
        picks = [p.gather(-1, index[..., i : i + 1].long()) for i, p in enumerate(parts)]
        return torch.cat(picks, -1)

    def cardinality(self) -> int:
        """The number of distinct sub-action vectors, ``prod(nvec)``."""
        out = 1
        for n in self._nvec:
            out *= n
        return out

    def _repr_extra(self) -> list[str]:
        extra = [f"nvec={list(self._nvec)}"]
        if self.mask is not None:
            extra.append(f"mask={_fmt_values(self.mask)}")
        return extra
