"""PrioritizedSampler: proportional prioritized replay on sum and min trees (rl_buffers.trees)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from rl_buffers.samplers.sampler import Sampler, check_not_empty
from rl_buffers.storages.storage import Storage
from rl_buffers.trees import make_min_tree, make_sum_tree, min_tree_update_, segment_tree_capacity
from rl_core import ops

__all__ = ["PrioritizedSampler"]

# The ops' overloads, resolved once: the hot paths below build every argument themselves
# (right dtype, device and layout), so they skip the wrappers' checks and the overload
# lookup of ``torch.ops.rl_core.<name>(...)``.
_SAMPLE = torch.ops.rl_core.sum_tree_sample.default
_UPDATE = torch.ops.rl_core.sum_min_tree_update_.default
_PRIORITY_UPDATE = torch.ops.rl_core.sum_min_tree_priority_update_.default
_INF = float("inf")


def _check_fraction(where: str, name: str, value: Any, low_open: bool) -> float:
    if isinstance(value, Tensor) and value.numel() == 1 and not value.dtype.is_complex:
        value = value.item()  # TorchRL takes a one-element tensor too
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{where}: expected {name} to be a float, got {type(value).__name__}.")
    if value < 0 or (low_open and value == 0):
        bound = "> 0" if low_open else ">= 0"
        raise ValueError(f"{where}: expected {name} {bound}, got {value}.")
    return float(value)


def _cuda_device(storage: Storage) -> torch.device | None:
    """The device of a prioritized buffer's trees: its storage's when that is a CUDA device
    and a kernel package serves the fused tree ops there (rl-kernels built with CUDA), so
    that a GPU storage samples on the GPU, as TorchRL's buffers do with a CUDA build; else
    ``None`` (the CPU). rl_core's reference kernels on CUDA trees wait on the device several
    times per update: on an H100 they ran 164 iterations/s against 491 on CPU trees."""
    device = getattr(storage, "device", None)
    if device is None or torch.device(device).type != "cuda":
        return None
    ops.load_kernel_packages()
    compiled = torch._C._dispatch_has_kernel_for_dispatch_key(
        "rl_core::sum_min_tree_priority_update_", "CUDA"
    )
    return torch.device(device) if compiled else None


class PrioritizedSampler(Sampler):
    """Draws item ``i`` with probability ``p_i / sum_j p_j``, ``p_i = (priority_i + eps) ** alpha``.

    The priorities sit in a sum tree and a min tree (:mod:`rl_buffers.trees`) driven by the
    ``rl_core`` ops (``sum_min_tree_update_`` writes both, ``sum_tree_sample`` draws a batch
    with its importance weights): with ``rl-kernels`` installed the compiled kernels run, with no
    change here. New items get the highest priority seen so far (1.0 at first), so each is
    likely drawn soon. Each batch comes with importance weights
    ``w_i = (p_i / min_j p_j) ** -beta`` (at most 1) under ``"priority_weight"``, the
    minimum taken over the stored items.

    Args:
        max_capacity: the most items the storage holds (the tree's leaf count, rounded up to
            a power of two).
        alpha: priority exponent, >= 0 (0: uniform).
        beta: importance-sampling exponent, >= 0 (0: all weights 1).

    Keyword Args:
        eps: added to every priority so none is 0. Defaults to 1e-8.
        dtype: dtype of the tree. Defaults to ``torch.float``.
        reduction: how ``update_priority`` reduces a priority with more dims than the index
            (``"max"``, ``"sum"``, ``"mean"``, ``"min"``). Defaults to ``"max"``.
        device: where the trees live, and with them the draws, the sampled indices and the
            weights. Defaults to ``None``: torch's default device (the CPU unless
            ``torch.set_default_device`` chose another). The prioritized buffers pass their
            storage's device when it is a CUDA device and rl-kernels' CUDA kernels are
            installed, so a GPU storage samples on the GPU; indices and priorities from
            another device are moved to the trees.
        max_priority_within_buffer: new items get the largest priority among the stored
            items (found again when the item holding it is lowered) rather than the largest
            ever set (False, the default), as TorchRL's option.

    Raises:
        ValueError: an argument is out of range.

    Examples:
        >>> import torch
        >>> from rl_buffers import LazyTensorStorage, PrioritizedSampler
        >>> storage = LazyTensorStorage(8)
        >>> storage.set(torch.arange(4), torch.zeros(4, 1))
        >>> sampler = PrioritizedSampler(8, alpha=1.0, beta=1.0)
        >>> sampler.extend(torch.arange(4))
        >>> sampler.update_priority(torch.arange(4), torch.tensor([0.0, 0.0, 0.0, 1.0]))
        >>> index, info = sampler.sample(storage, 5)
        >>> index.tolist(), info["priority_weight"].shape
        ([3, 3, 3, 3, 3], torch.Size([5]))
    """

    def __init__(
        self,
        max_capacity: int,
        alpha: float,
        beta: float,
        *,
        eps: float = 1e-8,
        dtype: torch.dtype = torch.float,
        reduction: str = "max",
        device: torch.device | str | None = None,
        max_priority_within_buffer: bool = False,
    ) -> None:
        where = type(self).__name__
        if not isinstance(max_priority_within_buffer, bool):
            raise TypeError(
                f"{where}: expected max_priority_within_buffer to be a bool, got "
                f"{type(max_priority_within_buffer).__name__} ({max_priority_within_buffer!r})."
            )
        if isinstance(max_capacity, bool) or not isinstance(max_capacity, int) or max_capacity < 1:
            raise ValueError(f"{where}: expected max_capacity >= 1, got {max_capacity!r}.")
        if reduction not in ("max", "min", "sum", "mean"):
            raise ValueError(
                f"{where}: expected reduction in ['max', 'mean', 'min', 'sum'], got {reduction!r}."
            )
        self.max_capacity = max_capacity
        self.alpha = _check_fraction(where, "alpha", alpha, low_open=False)
        self.beta = _check_fraction(where, "beta", beta, low_open=False)
        self.eps = _check_fraction(where, "eps", eps, low_open=True)
        self.dtype = dtype
        self.reduction = reduction
        self._capacity = segment_tree_capacity(max_capacity)
        self._tree = make_sum_tree(self._capacity, dtype, device=device)
        # the smallest stored priority, for the importance weights, without a scan per sample
        self._min_tree = make_min_tree(self._capacity, dtype, device=device)
        # the largest value written so far (1.0 at first), in a tensor the update op raises
        self._device = self._tree.device  # the draws, indices and weights live there too
        self._max_value = torch.ones(1, dtype=dtype, device=self._device)
        self.max_priority_within_buffer = max_priority_within_buffer
        # (within the buffer) a row holding _max_value, -1 if none is known
        self._max_row = -1
        # one past the highest item ever written (extend/add): priorities may only be set
        # below it, so a draw never lands on a slot that holds no item
        self._written = 0
        # the calls below go to torch.ops directly (no per-call argument checks), so the
        # kernels of an installed kernel package are loaded here rather than on a first call
        ops.load_kernel_packages()

    @property
    def default_priority(self) -> float:
        """The priority (after ``eps`` and ``alpha``) that new items get."""
        return self._max_value.item()

    # ---------------------------------------------------------------- writes
    def _check_index(self, where: str, index: Tensor, bound: int, what: str) -> tuple[Tensor, int]:
        """``index`` as a flat int64 tensor on the trees' device, and its largest value (-1
        if empty), after checking it against ``[0, bound)`` (``what`` names the bound)."""
        # indices from another device (a batch of a CUDA storage, CPU trees) go to the trees'
        index = torch.as_tensor(index, dtype=torch.long, device=self._device).reshape(-1)
        if not index.numel():
            return index, -1
        low, high = (int(value) for value in torch.aminmax(index))
        if low < 0 or high >= bound:
            raise IndexError(
                f"{where}: expected indices in [0, {bound}) ({what}), got values in "
                f"[{low}, {high}]."
            )
        return index, high

    def extend(self, index: Tensor) -> None:
        index, high = self._check_index(
            f"{type(self).__name__}.extend", index, self.max_capacity, "max_capacity"
        )
        if high >= self._written:
            self._written = high + 1
        self._write(
            index,
            torch.full(index.shape, self._max_value.item(), dtype=self.dtype, device=index.device),
        )
        if self.max_priority_within_buffer and high >= 0:
            self._max_row = high  # a new item holds the largest stored value

    def _write(self, index: Tensor, value: Tensor) -> None:
        _UPDATE(self._tree, self._min_tree, index, value)

    def add(self, index: int) -> None:
        self.extend(torch.tensor([index]))

    def update_priority(self, index: Tensor, priority: Tensor | float) -> None:
        """Sets the priorities of items ``index`` (raw, before ``eps`` and ``alpha``).

        Args:
            index: flat item numbers, any shape.
            priority: one value per index, a scalar, or ``[*index.shape, ...]`` reduced
                over the extra dims with ``reduction``.

        Raises:
            ValueError: a priority is negative, NaN or infinite, or shapes do not match.
            IndexError: an index is outside ``[0, n)``, ``n`` the number of items written
                so far (``extend``/``add``): a slot that holds no item gets no priority.
        """
        if (
            not self.max_priority_within_buffer
            and type(index) is Tensor
            and type(priority) is Tensor
            and index.dtype == torch.int64
            and priority.dtype == self.dtype
            and index.dim() == 1
            and priority.shape == index.shape
            and not priority.requires_grad
            and index.device == priority.device == self._device
            and (not priority.numel() or float(priority.max()) < _INF)
        ):
            # A sampled batch's index and new priorities (the training loop's case), finite
            # (checked above: the op accepts +inf): one op checks them (indices against the
            # items written, priorities >= 0), takes the powers and writes both trees. It writes nothing when a check fails: the generic path
            # below then raises with this sampler's message.
            try:
                _PRIORITY_UPDATE(
                    self._tree,
                    self._min_tree,
                    self._max_value,
                    index,
                    priority,
                    self.eps,
                    self.alpha,
                    self._written,
                )
                return
            except (IndexError, ValueError):
                pass
        where = f"{type(self).__name__}.update_priority"
        index = torch.as_tensor(index)
        priority = torch.as_tensor(priority)
        if priority.requires_grad:
            priority = priority.detach()
        if priority.device != self._device:
            priority = priority.to(self._device)
        if priority.shape == index.shape and index.dim() == 1:
            pass  # one priority per index (the common case): nothing to reduce or expand
        elif priority.dim() > index.dim() and priority.numel() != index.numel():
            if priority.shape[: index.dim()] != index.shape:
                raise ValueError(
                    f"{where}: expected priority of shape {tuple(index.shape)} (or with extra "
                    f"trailing dims), got {tuple(priority.shape)}."
                )
            flat = priority.reshape(*index.shape, -1)
            priority = getattr(
                flat, {"max": "amax", "min": "amin"}.get(self.reduction, self.reduction)
            )(-1)
        if priority.numel() == 1:
            priority = priority.reshape(()).expand(index.shape)
        elif priority.numel() != index.numel():
            raise ValueError(
                f"{where}: expected {index.numel()} priorities for {index.numel()} indices, got "
                f"shape {tuple(priority.shape)}."
            )
        index, _ = self._check_index(
            where,
            index,
            self._written,
            "the items written so far: a slot that holds no item gets no priority",
        )
        priority = priority.reshape(-1)
        if priority.dtype != self.dtype:
            priority = priority.to(self.dtype)
        low = float(priority.min()) if priority.numel() else 0.0
        if not low >= 0:
            raise ValueError(
                f"{where}: expected priorities >= 0 (e.g. |td_error|), got a minimum of {low}."
            )
        high = float(priority.max()) if priority.numel() else 0.0
        if high == _INF:
            raise ValueError(
                f"{where}: expected finite priorities, got inf (an infinite priority would "
                f"take every draw). Clip the priorities (e.g. |td_error|.clamp(max=...))."
            )
        value = (priority + self.eps).pow(self.alpha)
        if self.max_priority_within_buffer:
            self._write(index, value)
            self._track_stored_max(index, value)
            return
        if value.numel():
            torch.maximum(self._max_value, value.max(), out=self._max_value)
        self._write(index, value)

    def _track_stored_max(self, index: Tensor, value: Tensor) -> None:
        """(``max_priority_within_buffer``) keeps ``_max_value`` the largest stored value
        after ``value`` was written at ``index``: a scan of the stored items when the row
        holding it was rewritten, else the larger of it and the new values."""
        if not value.numel():
            return
        if self._max_row >= 0 and bool((index == self._max_row).any()):
            top, row = self._leaves(self._written).max(0)
            self._max_value.fill_(float(top))
            self._max_row = int(row)
            return
        top, position = value.max(0)
        if self._max_row < 0 or float(top) > float(self._max_value):
            self._max_value.fill_(float(top))
            self._max_row = int(index[position])

    # ---------------------------------------------------------------- reads
    def _leaves(self, n: int) -> Tensor:
        return self._tree[self._capacity : self._capacity + n]

    def sample(self, storage: Storage, batch_size: int) -> tuple[Tensor, dict[str, Any]]:
        n = len(storage)
        if not n:  # (the message is only built when it is needed)
            check_not_empty(f"{type(self).__name__}.sample", storage)
        if n > self.max_capacity:
            raise RuntimeError(
                f"{type(self).__name__}.sample: the storage holds {n} items but max_capacity "
                f"is {self.max_capacity}. Build the sampler with max_capacity >= the storage's "
                f"max_size."
            )
        rng = self._rng
        if rng is None or rng.device == self._device:
            uniform = torch.rand(batch_size, dtype=self.dtype, device=self._device, generator=rng)
        else:  # (a generator draws on its own device)
            uniform = torch.rand(batch_size, dtype=self.dtype, device=rng.device, generator=rng)
            uniform = uniform.to(self._device)
        index, weight = _SAMPLE(self._tree, self._min_tree, uniform, self.beta)
        return index, {"priority_weight": weight}

    def weights(self, index: Tensor, n: int) -> Tensor:
        """Importance weights ``(p_i / min_j p_j) ** -beta`` of items ``index`` among ``n``."""
        smallest = self._min_tree[1]  # the min over the stored items (unwritten leaves: +inf)
        leaves = self._tree[self._capacity :]
        return (
            leaves.index_select(0, index.reshape(-1))
            .div_(smallest)
            .pow_(-self.beta)
            .view(index.shape)
        )

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        return {"tree": self._tree.clone(), "max_priority": self._max_value.item()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        tree = state_dict["tree"].to(self._device)
        if tree.shape != self._tree.shape:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: the saved tree has "
                f"{tree.shape[0] // 2} leaves, this sampler {self._capacity} (max_capacity="
                f"{self.max_capacity})."
            )
        self._tree.copy_(tree)
        self._min_tree.fill_(float("inf"))
        written = (tree[self._capacity :] > 0).nonzero().reshape(-1)  # priorities are >= eps
        min_tree_update_(self._min_tree, written, tree[self._capacity + written])
        self._written = int(written.max()) + 1 if written.numel() else 0
        self._max_value.fill_(float(state_dict["max_priority"]))
        self._max_row = -1
        if self.max_priority_within_buffer and self._written:
            top, row = self._leaves(self._written).max(0)
            self._max_value.fill_(float(top))
            self._max_row = int(row)

    def _empty(self) -> None:
        self._tree.zero_()
        self._min_tree.fill_(float("inf"))
        self._max_value.fill_(1.0)
        self._written = 0
        self._max_row = -1

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_capacity={self.max_capacity}, alpha={self.alpha}, "
            f"beta={self.beta}, eps={self.eps}, device={self._device})"
        )
