"""Optimiser helpers: :class:`KLAdaptiveLR` and :func:`group_optimizers`."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

__all__ = ["KLAdaptiveLR", "group_optimizers"]


class KLAdaptiveLR:
    """Adapts an optimiser's learning rate to a target KL divergence between policy updates.

    After each update, :meth:`step` compares the measured mean KL divergence between the old
    and the new policy with ``target_kl``: above ``2 * target_kl`` every parameter group's
    learning rate is divided by ``factor``; positive but below ``target_kl / 2`` it is
    multiplied by ``factor``; otherwise (and for a KL of zero or less, a policy that did not
    move) it is unchanged. Learning rates stay within ``[min_lr, max_lr]``. This is the
    schedule of rsl_rl's PPO (Rudin et al. 2021); a PPO loss's ``kl_approx`` output can be
    passed to :meth:`step` as it is.

    Args:
        optimizer: the optimiser whose parameter groups are rescaled in place.
        target_kl: the desired mean KL divergence per update, ``> 0``.

    Keyword Args:
        factor: the multiplicative change, ``> 1``. Defaults to 1.5.
        min_lr: lower bound of the learning rate, ``> 0``. Defaults to 1e-5.
        max_lr: upper bound, ``>= min_lr``. Defaults to 1e-2.

    Raises:
        TypeError: ``optimizer`` is not a ``torch.optim.Optimizer``.
        ValueError: an argument out of its range.

    Examples:
        >>> import torch
        >>> from rl_objectives import KLAdaptiveLR
        >>> optim = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-3)
        >>> scheduler = KLAdaptiveLR(optim, target_kl=0.01)
        >>> scheduler.step(0.05)  # too large a step: lr / 1.5
        >>> round(optim.param_groups[0]["lr"], 8)
        0.00066667
        >>> scheduler.step(torch.tensor(0.001))  # too small: lr * 1.5
        >>> round(optim.param_groups[0]["lr"], 8)
        0.001
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        target_kl: float,
        *,
        factor: float = 1.5,
        min_lr: float = 1e-5,
        max_lr: float = 1e-2,
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"KLAdaptiveLR: expected optimizer to be a torch.optim.Optimizer, got "
                f"{type(optimizer).__name__}."
            )
        for name, value, ok, allowed in (
            ("target_kl", target_kl, target_kl > 0, "> 0"),
            ("factor", factor, factor > 1, "> 1"),
            ("min_lr", min_lr, min_lr > 0, "> 0"),
            ("max_lr", max_lr, max_lr >= min_lr, f">= min_lr ({min_lr})"),
        ):
            if not (math.isfinite(value) and ok):
                raise ValueError(f"KLAdaptiveLR: expected {name} {allowed}, got {value!r}.")
        self.optimizer = optimizer
        self.target_kl = float(target_kl)
        self.factor = float(factor)
        self.min_lr = float(min_lr)
        self.max_lr = float(max_lr)

    def step(self, kl: float | Tensor) -> None:
        """Rescales the learning rates after an update whose mean KL divergence was ``kl``.

        Args:
            kl: a number or a tensor (its mean is used).

        Raises:
            ValueError: ``kl`` is NaN or infinite.
        """
        value = float(kl.detach().float().mean()) if isinstance(kl, Tensor) else float(kl)
        if not math.isfinite(value):
            raise ValueError(f"KLAdaptiveLR.step: expected a finite KL divergence, got {value}.")
        if value > 2.0 * self.target_kl:
            scale = 1.0 / self.factor
        elif 0.0 < value < 0.5 * self.target_kl:
            scale = self.factor
        else:
            scale = 1.0
        for group in self.optimizer.param_groups:
            group["lr"] = min(self.max_lr, max(self.min_lr, group["lr"] * scale))

    def get_last_lr(self) -> list[float]:
        """The current learning rate of each parameter group."""
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """The schedule's settings (the learning rates live in the optimiser's state)."""
        return {
            "target_kl": self.target_kl,
            "factor": self.factor,
            "min_lr": self.min_lr,
            "max_lr": self.max_lr,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores settings saved by :meth:`state_dict`."""
        for key in ("target_kl", "factor", "min_lr", "max_lr"):
            setattr(self, key, float(state_dict[key]))


def group_optimizers(*optimizers: torch.optim.Optimizer | None) -> torch.optim.Optimizer:
    """One optimiser over the parameter groups of several optimisers of the same class.

    Each group keeps its own hyperparameters (a learning rate per network, say); ``None``
    entries are skipped. The optimisers' internal state (Adam's moments) is not carried over.

    Args:
        *optimizers: optimisers of one class, or ``None``.

    Returns:
        A new optimiser of that class over all their parameter groups.

    Raises:
        ValueError: no optimiser given, or optimisers of different classes.
        TypeError: an argument is neither an optimiser nor ``None``.

    Examples:
        >>> import torch
        >>> from rl_objectives import group_optimizers
        >>> a = torch.optim.Adam([torch.zeros(2, requires_grad=True)], lr=1e-3)
        >>> b = torch.optim.Adam([torch.zeros(3, requires_grad=True)], lr=1e-4)
        >>> both = group_optimizers(a, b)
        >>> [g["lr"] for g in both.param_groups]
        [0.001, 0.0001]
    """
    kept = [o for o in optimizers if o is not None]
    for i, optimizer in enumerate(kept):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"group_optimizers: expected torch.optim.Optimizer arguments, got "
                f"{type(optimizer).__name__} at position {i}."
            )
    if not kept:
        raise ValueError("group_optimizers: expected at least one optimizer, got none.")
    classes = {type(o).__name__ for o in kept}
    if len(classes) > 1:
        raise ValueError(
            f"group_optimizers: expected optimizers of one class, got {sorted(classes)}. Group "
            f"optimizers of the same class only."
        )
    groups = [dict(group) for o in kept for group in o.param_groups]
    return type(kept[0])(groups)
