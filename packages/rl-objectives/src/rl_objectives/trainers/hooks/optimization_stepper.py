"""Optimisation steppers: :class:`OptimizationStepper`, :class:`DefaultOptimizationStepper` and
:class:`MixedPrecisionOptimizationStepper` (TorchRL's names)."""

from __future__ import annotations

import contextlib
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_objectives.trainers._utils import check_positive_int, sum_loss_terms
from rl_objectives.trainers.hooks.common import TrainerHookBase


class OptimizationStepper(TrainerHookBase):
    """The base of the steppers: one optimiser step at the trainer's ``"optimizer"`` point.

    A stepper owns its optimizer (build the trainer with ``optimizer=None`` and register the
    stepper), its state is saved with the trainer's, and it may wrap the trainer's loss forward
    in a context (:meth:`forward_context`, e.g. autocast). Subclasses define
    :meth:`__call__`, which takes the loss module's output and returns scalars to log.

    Args:
        optimizer: the optimizer to step.

    Raises:
        TypeError: ``optimizer`` is not a ``torch.optim.Optimizer``.
    """

    def __init__(self, optimizer: torch.optim.Optimizer) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"{type(self).__name__}: optimizer must be a torch.optim.Optimizer, got "
                f"{type(optimizer).__name__}."
            )
        self.optimizer = optimizer
        self.clip_norm: float | None = None
        self.clip_grad_norm = True

    @abstractmethod
    def __call__(self, losses: TensorDictBase) -> dict[str, torch.Tensor]:
        """Steps on ``losses`` (the loss module's output); returns scalars to log."""

    def forward_context(self) -> contextlib.AbstractContextManager[Any]:
        """The context the trainer runs the loss module in (none here)."""
        return contextlib.nullcontext()

    def _params(self) -> Iterator[nn.Parameter]:
        return (p for group in self.optimizer.param_groups for p in group["params"])

    def _clip(self) -> torch.Tensor:
        """Clips the gradients as configured and returns their norm before clipping."""
        params = [p for p in self._params() if p.grad is not None]
        if self.clip_norm is not None and self.clip_grad_norm:
            return nn.utils.clip_grad_norm_(params, self.clip_norm)
        norm = nn.utils.clip_grad_norm_(params, float("inf"))
        if self.clip_norm is not None:
            nn.utils.clip_grad_value_(params, self.clip_norm)
        return norm

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers at ``"optimizer"`` and as the trainer's forward context; takes the trainer's
        clipping unless the stepper set its own; saves the stepper's state under ``name``.

        Raises:
            ValueError: the trainer steps an optimizer of its own (build it with
                ``optimizer=None``), which would step the parameters twice.
        """
        if getattr(trainer, "optimizer", None) is not None:
            raise ValueError(
                f"{type(self).__name__}.register: the trainer was built with an optimizer, "
                f"which it steps itself; build it with optimizer=None to step through the "
                f"stepper."
            )
        if self.clip_norm is None:
            self.clip_norm = trainer.clip_norm
            self.clip_grad_norm = trainer.clip_grad_norm
        trainer.register_op("optimizer", self)
        trainer.forward_context = self.forward_context
        trainer.register_module(name or "optimization_stepper", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"optimizer": optimizer.state_dict()}``."""
        return {"optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the optimizer's state."""
        self.optimizer.load_state_dict(state_dict["optimizer"])


class DefaultOptimizationStepper(OptimizationStepper):
    """Zeroes the gradients, backpropagates the sum of the ``loss*`` terms, clips (the
    trainer's ``clip_norm``) and steps: what a trainer built with an optimizer does through
    its :class:`~rl_objectives.trainers.OptimizerHook`.

    Args:
        optimizer: the optimizer to step.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> w = torch.nn.Parameter(torch.ones(()))
        >>> stepper = DefaultOptimizationStepper(torch.optim.SGD([w], lr=0.25))
        >>> logs = stepper(TensorDict(loss_a=2 * w, loss_b=w))
        >>> print(w.item(), logs["grad_norm"].item())
        0.25 3.0
    """

    def __call__(self, losses: TensorDictBase) -> dict[str, torch.Tensor]:
        """Zeroes, backpropagates, clips and steps; returns ``{"grad_norm": norm}``."""
        total, _ = sum_loss_terms(type(self).__name__, losses)
        self.optimizer.zero_grad(set_to_none=True)
        total.backward()
        norm = self._clip()
        self.optimizer.step()
        return {"grad_norm": norm.detach()}


class MixedPrecisionOptimizationStepper(OptimizationStepper):
    """An optimisation step with mixed precision and gradient accumulation.

    The trainer runs the loss module under ``torch.autocast(device_type, autocast_dtype)`` when
    ``mixed_precision``; a float16 autocast also scales the loss with a
    ``torch.amp.GradScaler`` (bfloat16 needs none). Each call backpropagates the sum of the
    ``loss*`` terms divided by ``gradient_accumulation_steps``, so that after that many calls
    the gradient is the mean of theirs; only then are the gradients unscaled, clipped to
    ``clip_norm``, stepped and zeroed (``grad_norm`` is logged on those calls).

    Args:
        optimizer: the optimizer to step.

    Keyword Args:
        mixed_precision: run the loss forward under autocast. Defaults to ``False``.
        autocast_dtype: the autocast dtype. Defaults to ``torch.bfloat16``.
        gradient_accumulation_steps: calls per optimiser step. Defaults to 1.
        clip_norm: the maximum gradient norm (None: no clipping). Defaults to 1.0.
        device_type: autocast's and the scaler's device type. Defaults to the device type of
            the optimizer's first parameter.

    Raises:
        TypeError: ``optimizer`` is not an optimizer, or ``autocast_dtype`` is neither
            ``torch.bfloat16`` nor ``torch.float16``.
        ValueError: ``gradient_accumulation_steps`` is not a positive int.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> w = torch.nn.Parameter(torch.zeros(()))
        >>> stepper = MixedPrecisionOptimizationStepper(
        ...     torch.optim.SGD([w], lr=1.0), gradient_accumulation_steps=2, clip_norm=None
        ... )
        >>> _ = stepper(TensorDict(loss=2 * w))
        >>> w.item()  # accumulating
        0.0
        >>> _ = stepper(TensorDict(loss=4 * w))
        >>> w.item()  # one step on the mean gradient, (2 + 4) / 2
        -3.0
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        *,
        mixed_precision: bool = False,
        autocast_dtype: torch.dtype = torch.bfloat16,
        gradient_accumulation_steps: int = 1,
        clip_norm: float | None = 1.0,
        device_type: str | None = None,
    ) -> None:
        super().__init__(optimizer)
        if autocast_dtype not in (torch.bfloat16, torch.float16):
            raise TypeError(
                f"MixedPrecisionOptimizationStepper: autocast_dtype must be torch.bfloat16 or "
                f"torch.float16, got {autocast_dtype}."
            )
        self.mixed_precision = mixed_precision
        self.autocast_dtype = autocast_dtype
        self.gradient_accumulation_steps = check_positive_int(
            "MixedPrecisionOptimizationStepper",
            "gradient_accumulation_steps",
            gradient_accumulation_steps,
        )
        self.clip_norm = clip_norm
        if device_type is None:
            first = next(self._params(), None)
            device_type = "cpu" if first is None else first.device.type
        self.device_type = device_type
        self.scaler = torch.amp.GradScaler(
            device_type, enabled=mixed_precision and autocast_dtype == torch.float16
        )
        self.micro_steps = 0

    def register(self, trainer: Any, name: str | None = None) -> None:
        """As :meth:`OptimizationStepper.register`, keeping this stepper's ``clip_norm``."""
        clip_norm = self.clip_norm
        super().register(trainer, name)
        self.clip_norm = clip_norm
        self.clip_grad_norm = True

    def forward_context(self) -> contextlib.AbstractContextManager[Any]:
        """``torch.autocast(device_type, autocast_dtype)`` with ``mixed_precision``, else none."""
        if not self.mixed_precision:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.autocast_dtype)

    def __call__(self, losses: TensorDictBase) -> dict[str, torch.Tensor]:
        """Accumulates this call's gradients; steps every ``gradient_accumulation_steps``
        calls, returning ``{"grad_norm": norm}`` then (and nothing otherwise)."""
        total, _ = sum_loss_terms(type(self).__name__, losses)
        if self.micro_steps == 0:
            self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(total.float() / self.gradient_accumulation_steps).backward()
        self.micro_steps += 1
        if self.micro_steps < self.gradient_accumulation_steps:
            return {}
        self.micro_steps = 0
        self.scaler.unscale_(self.optimizer)
        params = [p for p in self._params() if p.grad is not None]
        norm = nn.utils.clip_grad_norm_(
            params, float("inf") if self.clip_norm is None else self.clip_norm
        )
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return {"grad_norm": norm.detach()}

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's, the scaler's and the accumulation count."""
        return {
            "optimizer": self.optimizer.state_dict(),
            "scaler": self.scaler.state_dict(),
            "micro_steps": self.micro_steps,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a :meth:`state_dict`."""
        self.optimizer.load_state_dict(state_dict["optimizer"])
        self.scaler.load_state_dict(state_dict["scaler"])
        self.micro_steps = state_dict["micro_steps"]
