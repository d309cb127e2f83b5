"""Backpropagates loss terms and steps one optimizer: :class:`OptimizerHook`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_objectives.trainers.hooks.common import TrainerHookBase


class OptimizerHook(TrainerHookBase):
    """Minimises some loss terms with one optimizer, at the trainer's ``"optimizer"`` point.

    At each optimisation step the trainer hands the loss module's output to every
    ``"optimizer"`` op in registration order. This one sets its parameters' gradients to
    those of the sum of its terms (other parameters' gradients are left alone), clips the gradients as the trainer says
    (``clip_norm``/``clip_grad_norm``), steps its optimizer and returns the gradient norm it saw
    (before clipping) as ``grad_norm`` (the first hook) or ``grad_norm_{index}`` (the others).
    A :class:`~rl_objectives.trainers.Trainer` built with an ``optimizer`` registers one such
    hook over every ``loss*`` term; build it with ``optimizer=None`` and register several to
    train an actor and a critic with optimizers of their own.

    Args:
        optimizer: the optimizer to step.
        loss_components: the names of the loss terms to minimise. ``None`` (default) takes
            every entry whose name starts with ``"loss"``.

    Raises:
        TypeError: ``optimizer`` is not a ``torch.optim.Optimizer``.
        ValueError: ``loss_components`` is empty.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import OptimizerHook
        >>> w = torch.nn.Parameter(torch.ones(()))
        >>> hook = OptimizerHook(torch.optim.SGD([w], lr=0.5), ["loss_a"])
        >>> logs = hook(TensorDict(loss_a=w * 2, loss_b=w * 100))
        >>> print(w.item(), logs["grad_norm"].item())
        0.0 2.0
    """

    def __init__(
        self, optimizer: torch.optim.Optimizer, loss_components: Sequence[str] | None = None
    ) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(
                f"OptimizerHook: optimizer must be a torch.optim.Optimizer, got "
                f"{type(optimizer).__name__}."
            )
        if loss_components is not None:
            loss_components = list(loss_components)
            if not loss_components:
                raise ValueError(
                    "OptimizerHook: loss_components is empty; pass None to minimise every "
                    "'loss*' term."
                )
        self.optimizer = optimizer
        self.loss_components = loss_components
        self.clip_grad_norm = True
        self.clip_norm: float | None = None
        self.index = 0

    def _terms(self, losses: TensorDictBase) -> list[torch.Tensor]:
        keys = [k for k in losses.keys() if isinstance(k, str)]
        if self.loss_components is None:
            names = [k for k in keys if k.startswith("loss")]
            if not names:
                raise ValueError(
                    f"OptimizerHook: the loss returned no entry whose name starts with 'loss' "
                    f"(got {sorted(keys)})."
                )
        else:
            missing = [k for k in self.loss_components if k not in keys]
            if missing:
                raise KeyError(
                    f"OptimizerHook: loss_components {missing} are not in the loss output "
                    f"(got {sorted(keys)}). Name terms the loss module returns."
                )
            names = self.loss_components
        terms = []
        for name in names:
            value = losses.get(name)
            if value.numel() != 1:
                raise ValueError(
                    f"OptimizerHook: loss term {name!r} must be a scalar, got shape "
                    f"{tuple(value.shape)}. Reduce it in the loss (reduction='mean')."
                )
            terms.append(value.reshape(()))
        return terms

    def __call__(self, losses: TensorDictBase) -> dict[str, torch.Tensor]:
        """Zeroes, backpropagates, clips and steps; returns ``{"grad_norm[_i]": norm}``."""
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        self.optimizer.zero_grad(set_to_none=True)
        # Gradients of this hook's terms for this optimizer's parameters only, keeping the
        # graph: the next optimizer hook backpropagates its own terms through shared parts.
        grads = torch.autograd.grad(
            sum(self._terms(losses)), params, retain_graph=True, allow_unused=True
        )
        for param, grad in zip(params, grads):
            param.grad = grad
        grads = [g for g in grads if g is not None]
        if self.clip_norm is not None and self.clip_grad_norm:
            norm = nn.utils.clip_grad_norm_(params, self.clip_norm)
        else:
            norm = (
                torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
                if grads
                else torch.zeros(())
            )
            if self.clip_norm is not None:
                nn.utils.clip_grad_value_(params, self.clip_norm)
        self.optimizer.step()
        name = "grad_norm" if self.index == 0 else f"grad_norm_{self.index}"
        return {name: norm.detach()}

    def register(self, trainer: Any, name: str | None = None) -> None:
        """Registers at ``"optimizer"`` (taking the trainer's clipping) and the optimizer's state."""
        self.clip_grad_norm = trainer.clip_grad_norm
        self.clip_norm = trainer.clip_norm
        self.index = trainer.optimizer_hook_count()
        trainer.register_op("optimizer", self)
        if self.optimizer is not getattr(trainer, "optimizer", None):  # else the trainer saves it
            trainer.register_module(name or f"optimizer_{self.index}", self)

    def state_dict(self) -> dict[str, Any]:
        """``{"optimizer": optimizer.state_dict()}``."""
        return {"optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the optimizer's state."""
        self.optimizer.load_state_dict(state_dict["optimizer"])
