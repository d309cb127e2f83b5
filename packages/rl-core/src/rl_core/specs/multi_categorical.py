"""MultiCategorical: several independent choices, each an index in ``[0, nvec[i])``."""

from __future__ import annotations

from typing import Any

import torch

from rl_core.specs._base import DeviceLike, ShapeLike, _as_device, _as_dtype, _as_size, _fmt_shape
from rl_core.specs._box import Box, BoxList
from rl_core.specs._discrete import (
    _check_index_args,
    _check_index_dtype,
    _check_mask,
    _check_nvec,
    _nearest_valid,
    _sample_masked,
)
from rl_core.specs._leaf import _fmt_values, _LeafSpec


def _check_nd_nvec(nvec: Any, where: str) -> torch.Tensor:
    """Validates ``nvec``: ints >= 1, one dim (one count per sub-action) or more (leading batch
    dims, a count per batch element as in TorchRL); returns it as a CPU int64 tensor."""
    try:
        t = torch.as_tensor(nvec)
    except (TypeError, ValueError, RuntimeError):
        t = None
    if t is None or t.ndim == 0 or t.dtype is torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(
            f"{where}: expected nvec to be a sequence of ints (e.g. [3, 2]) or an integer "
            f"tensor of shape (*batch, n_sub_actions), got {nvec!r}."
        )
    if t.ndim == 1:
        return _check_nvec(t, where)
    if t.numel() == 0 or bool((t < 1).any()):
        raise ValueError(f"{where}: expected a non-empty nvec of ints >= 1, got {t.tolist()}.")
    return t.to(torch.int64).cpu().clone()


def _uniform_counts(nvec: torch.Tensor) -> tuple[int, ...] | None:
    """The per-sub-action counts if every batch element has the same ones, else ``None``."""
    rows = nvec.reshape(-1, nvec.shape[-1])
    if rows.shape[0] == 0:
        return None
    first = rows[0]
    return tuple(first.tolist()) if bool((rows == first).all()) else None


def _check_multi_dtype(nvec: torch.Tensor, dtype: torch.dtype, where: str) -> None:
    _check_index_dtype(dtype, where)
    if int(nvec.max()) - 1 > torch.iinfo(dtype).max:
        raise ValueError(f"{where}: nvec={nvec.tolist()} does not fit dtype {dtype}.")


class MultiCategorical(_LeafSpec):
    """Several independent choices along the last dim: entry ``i`` is an index in ``[0, nvec[i])``.

    The gym ``MultiDiscrete`` space. The last dim (of size ``len(nvec)``) is the event dim:
    it is never indexed, squeezed or reshaped.

    Args:
        nvec: the number of choices of each sub-action: a 1-d sequence or tensor of ints, or,
            as in TorchRL, a tensor of shape ``(*batch, n_sub_actions)`` whose leading dims
            give each batch element its own counts (it broadcasts to ``shape``).
        shape: the full shape of a value; ``shape[-1]`` must be ``nvec.shape[-1]``. Defaults
            to ``nvec.shape``.
        device: the device of the values, or ``None`` for none pinned. Defaults to ``None``.
        dtype: an integer dtype. Defaults to ``torch.int64`` (also for ``None``).

    Keyword Args:
        mask: a bool tensor broadcastable to ``(*shape[:-1], sum(nvec))`` (the masks of the
            sub-actions, concatenated), True for valid choices, or ``None``. It needs the
            same counts for every batch element (as do :meth:`index` and
            :meth:`cardinality`).

    Attributes:
        nvec: the choice counts, an int64 tensor on the CPU: 1-d when every batch element
            has the same counts, else of shape ``shape``.

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
        >>> per_row = MultiCategorical(torch.tensor([[2, 3], [4, 5]]))
        >>> per_row.shape, bool((per_row.rand((1000,)) < torch.tensor([[2, 3], [4, 5]])).all())
        (torch.Size([2, 2]), True)
    """

    _params = ("mask", "_nvec_full")
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
        where = "MultiCategorical"
        nvec_t = _check_nd_nvec(nvec, where)
        k = nvec_t.shape[-1]
        size = nvec_t.shape if shape is None else _as_size(shape, where)
        if not size or size[-1] != k:
            raise ValueError(
                f"{where}: expected shape[-1] == {'len(nvec)' if nvec_t.ndim == 1 else 'nvec.shape[-1]'} == {k}, got "
                f"shape={_fmt_shape(size)}. Use shape=(*batch, {k})."
            )
        try:
            full = nvec_t.expand(size)
        except RuntimeError:
            raise ValueError(
                f"{where}: nvec of shape {_fmt_shape(nvec_t.shape)} does not broadcast to "
                f"shape={_fmt_shape(size)}."
            ) from None
        dtype = _as_dtype(dtype, where, default=torch.int64)
        _check_multi_dtype(nvec_t, dtype, where)
        device = _as_device(device, where)
        super().__init__(size, device, dtype)
        self._nvec_full = full if device is None else full.to(device)
        counts = _uniform_counts(nvec_t)
        self._nvec = counts
        self.nvec = nvec_t if counts is None else torch.tensor(counts, dtype=torch.int64)
        self._refresh()
        if mask is not None and self._nvec is None:
            raise ValueError(
                f"{where}: a mask needs the same nvec for every batch element (the blocks of "
                f"the mask are the sub-actions' counts), got nvec of shape "
                f"{_fmt_shape(nvec_t.shape)} with different rows."
            )
        self.mask = (
            None
            if mask is None
            else _check_mask(mask, self._mask_shape(), device, where, self.nvec)
        )

    def _refresh(self) -> None:
        # The same counts for every batch element stay so under shape operations; different
        # ones may become the same (e.g. ``spec[0]``), so they are looked at again.
        if self._nvec is None:
            counts = _uniform_counts(self._nvec_full)
            if counts is not None:
                self._nvec = counts
                self.nvec = torch.tensor(counts, dtype=torch.int64)
            else:
                self.nvec = self._nvec_full.cpu()

    @property
    def space(self) -> Box:
        """TorchRL's ``BoxList.from_nvec(nvec)``: a ``CategoricalBox`` per sub-action."""
        return BoxList.from_nvec(self.nvec)

    def _check_dtype(self, dtype: torch.dtype, where: str) -> None:
        _check_multi_dtype(self._nvec_full, dtype, where)

    def _counts(self, where: str) -> tuple[int, ...]:
        """The per-sub-action counts shared by every batch element.

        Raises:
            ValueError: the batch elements have different counts.
        """
        if self._nvec is None:
            raise ValueError(
                f"{where}: needs the same nvec for every batch element, got nvec of shape "
                f"{_fmt_shape(self._nvec_full.shape)} with different rows; index the spec "
                f"to one batch element first."
            )
        return self._nvec

    def _mask_shape(self) -> torch.Size:
        return torch.Size((*self.shape[:-1], sum(self._counts("MultiCategorical mask"))))

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets the action mask in place: a bool tensor broadcastable to
        ``(*shape[:-1], sum(nvec))``, or ``None``. ``TypeError`` for a non-bool mask,
        ``ValueError`` for a wrong shape or a sub-action without any valid choice.
        """
        self.mask = _check_mask(
            mask, self._mask_shape(), self.device, "MultiCategorical.update_mask", self.nvec
        )

    def rand(self, shape: ShapeLike = ()) -> torch.Tensor:
        """Samples valid sub-actions uniformly and independently."""
        size = self._full(shape)
        if self.mask is None:
            u = torch.rand(size, dtype=torch.float64, device=self.device)
            nvec = self._nvec_full.to(u.device)
            return torch.minimum((u * nvec).floor(), nvec - 1).to(self._dtype)
        parts = self.mask.split(self._nvec, dim=-1)
        picks = [_sample_masked(m, size[:-1]) for m in parts]
        return torch.stack(picks, -1).to(self._dtype)

    def _domain_failure(self, value: torch.Tensor) -> str | None:
        nvec = self._nvec_full.to(value.device)
        inside = (value >= 0) & (value < nvec)
        if not bool(inside.all()):
            at = tuple(int(i) for i in (~inside).nonzero()[0])
            counts = f"{nvec[at].item()} there" if self._nvec is None else list(self._nvec)
            return f"is outside [0, nvec - 1]: {value[at].item()} at index {at} (nvec={counts})"
        if self.mask is not None:
            for i, m in enumerate(self.mask.split(self._nvec, dim=-1)):
                valid = m.gather(-1, value[..., i : i + 1].long()).squeeze(-1)
                if not bool(valid.all()):
                    at = (*(int(j) for j in (~valid).nonzero()[0]), i)
                    return f"is a masked-out action: {value[at].item()} at index {at}"
        return None

    def project(self, value: Any) -> torch.Tensor:
        """Rounds and clamps each sub-action into ``[0, nvec[i] - 1]``; masked-out ones move to the
        closest valid choice (the lower on ties).
        """
        value = self._project_input(value)
        if value.shape != self.shape:  # leading batch dims: project element by element
            return self._for_value(value).project(value)
        if value.is_floating_point():
            value = torch.nan_to_num(value.double().round(), nan=0.0)
        nvec = self._nvec_full.to(value.device)
        value = torch.minimum(value.long().clamp_min(0), nvec - 1)
        if self.mask is not None:
            parts = self.mask.split(self._nvec, dim=-1)
            value = torch.stack([_nearest_valid(value[..., i], m) for i, m in enumerate(parts)], -1)
        return value.to(self._dtype)

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Picks the value of each chosen sub-action, as :meth:`Categorical.index`.

        ``index`` holds sub-actions ``(*B, len(nvec))``, ``tensor_to_index`` the values of all
        choices concatenated per sub-action ``(*B, sum(nvec))``; the result is ``(*B, len(nvec))``.
        """
        counts = self._counts("MultiCategorical.index")
        _check_index_args(
            index,
            tensor_to_index,
            sum(counts),
            "MultiCategorical.index",
            event_size=len(counts),
        )
        parts = tensor_to_index.split(counts, dim=-1)
        picks = [p.gather(-1, index[..., i : i + 1].long()) for i, p in enumerate(parts)]
        return torch.cat(picks, -1)

    def cardinality(self) -> int:
        """The number of distinct sub-action vectors, ``prod(nvec)``.

        Raises:
            ValueError: the batch elements have different counts.
        """
        out = 1
        for n in self._counts("MultiCategorical.cardinality"):
            out *= n
        return out

    def _repr_extra(self) -> list[str]:
        if self._nvec is None:
            extra = [f"nvec={_fmt_values(self._nvec_full)}"]
        else:
            extra = [f"nvec={list(self._nvec)}"]
        if self.mask is not None:
            extra.append(f"mask={_fmt_values(self.mask)}")
        return extra
