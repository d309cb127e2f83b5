"""DreamerV3's optimisation pieces (TorchRL's ``torchrl.trainers.algorithms``): its optimizer
(:class:`DreamerV3Optimizer`), its learner step (:class:`DreamerV3OptimizationStepper`) and its
replay ratio (:class:`DreamerV3UpdateRatio`).

Reference: Hafner et al., "Mastering Diverse Domains through World Models" (2023),
https://arxiv.org/abs/2301.04104.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_objectives.trainers._utils import sum_loss_terms
from rl_objectives.trainers.checkpoint import GlobalRNGState
from rl_objectives.trainers.hooks.optimization_stepper import OptimizationStepper

__all__ = ["DreamerV3OptimizationStepper", "DreamerV3Optimizer", "DreamerV3UpdateRatio"]

_COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def _check_unit(owner: str, name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise ValueError(f"{owner}: {name} must be a number in [0, 1), got {value!r}.")


def _check_nonneg(owner: str, name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{owner}: {name} must be a number >= 0, got {value!r}.")


class DreamerV3Optimizer(torch.optim.Optimizer):
    """DreamerV3's optimizer: adaptive gradient clipping, RMS scaling, momentum and a linear
    learning-rate warm-up.

    At update ``t`` (counted per parameter group) each parameter ``p`` with gradient ``g``:

    1. clipping (``agc > 0``): ``g *= m / max(|g|, m)`` with ``m = agc * max(|p|,
       parameter_norm_min)`` (``|.|`` the L2 norm of the whole tensor);
    2. RMS scaling: ``v = beta2 v + (1 - beta2) g^2``,
       ``u = g / (sqrt(v / (1 - beta2^t)) + eps)``;
    3. momentum: ``m1 = beta1 m1 + (1 - beta1) u``, ``p -= lr_t m1 / (1 - beta1^t)`` with
       ``lr_t = lr * min(1, (t - 1) / warmup_steps)`` (``lr`` when ``warmup_steps=0``): the
       first update has a zero learning rate when warming up.

    The moments are kept in float32. Parameters without a gradient are skipped; a step where
    no parameter has a gradient raises.

    Args:
        parameters: the parameters, or parameter-group dicts (their options override the
            defaults below; each group counts its own updates).

    Keyword Args:
        lr: the learning rate after warm-up. Defaults to ``4e-5``.
        agc: the largest gradient norm as a fraction of the parameter norm; 0 disables
            clipping. Defaults to ``0.3``.
        parameter_norm_min: the floor of the parameter norm in the clipping. Defaults to
            ``1e-3``.
        beta1: the momentum decay. Defaults to ``0.9``.
        beta2: the squared-gradient decay. Defaults to ``0.999``.
        eps: added to the RMS denominator. Defaults to ``1e-20``.
        warmup_steps: updates until the full learning rate; 0 disables the warm-up. Defaults
            to ``1000``.

    Raises:
        ValueError: a negative ``lr``/``agc``/``eps``/``parameter_norm_min``, a beta outside
            ``[0, 1)``, or ``warmup_steps`` not an int >= 0.

    Examples:
        >>> import torch
        >>> w = torch.nn.Parameter(torch.tensor([1.0, -1.0]))
        >>> opt = DreamerV3Optimizer([w], lr=0.01, warmup_steps=0)
        >>> w.square().sum().backward()
        >>> opt.step()
        >>> print(w.detach().tolist())  # each moves by lr (normalised, bias-corrected)
        [0.9900000095367432, -0.9900000095367432]
    """

    def __init__(
        self,
        parameters: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        *,
        lr: float = 4e-5,
        agc: float = 0.3,
        parameter_norm_min: float = 1e-3,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-20,
        warmup_steps: int = 1000,
    ) -> None:
        owner = "DreamerV3Optimizer"
        for name, value in (("lr", lr), ("agc", agc), ("eps", eps),
                            ("parameter_norm_min", parameter_norm_min)):  # fmt: skip
            _check_nonneg(owner, name, value)
        _check_unit(owner, "beta1", beta1)
        _check_unit(owner, "beta2", beta2)
        if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
            raise ValueError(f"{owner}: warmup_steps must be an int >= 0, got {warmup_steps!r}.")
        defaults = {"lr": lr, "agc": agc, "parameter_norm_min": parameter_norm_min,
                    "beta1": beta1, "beta2": beta2, "eps": eps, "warmup_steps": warmup_steps,
                    "step": 0}  # fmt: skip
        super().__init__(parameters, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], torch.Tensor] | None = None) -> torch.Tensor | None:
        """One update of every parameter with a gradient.

        Args:
            closure: recomputes the loss and its gradients; its loss is returned.

        Returns:
            The closure's loss, or None.

        Raises:
            RuntimeError: no parameter has a gradient.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if not any(p.grad is not None for g in self.param_groups for p in g["params"]):
            raise RuntimeError(
                "DreamerV3Optimizer.step: no parameter has a gradient; call backward() on the "
                "loss first."
            )
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            group["step"] += 1
            t = group["step"]
            warmup = group["warmup_steps"]
            lr = group["lr"] * (min(1.0, (t - 1) / warmup) if warmup else 1.0)
            beta1, beta2 = group["beta1"], group["beta2"]
            for p in params:
                grad = p.grad.float()
                if group["agc"]:
                    limit = group["agc"] * p.detach().float().norm().clamp_min(
                        group["parameter_norm_min"]
                    )
                    grad = grad * (limit / torch.maximum(grad.norm(), limit))
                state = self.state[p]
                if not state:
                    state["rms"] = torch.zeros_like(p, dtype=torch.float32)
                    state["momentum"] = torch.zeros_like(p, dtype=torch.float32)
                rms, momentum = state["rms"], state["momentum"]
                rms.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                update = grad / ((rms / (1 - beta2**t)).sqrt() + group["eps"])
                momentum.mul_(beta1).add_(update, alpha=1 - beta1)
                p.add_((momentum / (1 - beta1**t)).to(p.dtype), alpha=-lr)
        return loss


class DreamerV3UpdateRatio:
    """How many learner updates to run after each collection: ``ratio`` updates per driver
    record (env frame), carried over between calls.

    The first call returns 1 and starts the count at its ``record_count``; each later call
    returns ``floor((record_count - counted) * ratio)`` and moves ``counted`` on by the records
    those updates pay for (``updates / ratio``), so the fraction left over counts towards the
    next call. Over any run, the updates after the first total
    ``floor((last_count - first_count) * ratio)``. A ratio <= 0 never updates.

    Args:
        ratio: learner updates per driver record (DreamerV3's train ratio divided by the
            replayed sequence length times the batch size).

    Raises:
        TypeError: ``ratio`` is not a number.

    Examples:
        >>> schedule = DreamerV3UpdateRatio(0.25)
        >>> schedule(4), schedule(6), schedule(8), schedule(20)
        (1, 0, 1, 3)
    """

    def __init__(self, ratio: float) -> None:
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or math.isnan(ratio):
            raise TypeError(f"DreamerV3UpdateRatio: ratio must be a number, got {ratio!r}.")
        self.ratio = float(ratio)
        self._counted: float | None = None

    def __call__(self, record_count: int) -> int:
        """The number of updates owed after ``record_count`` driver records in all."""
        if isinstance(record_count, bool) or not isinstance(record_count, int) or record_count < 0:
            raise ValueError(
                f"DreamerV3UpdateRatio: record_count must be an int >= 0 (the records collected "
                f"so far), got {record_count!r}."
            )
        if self.ratio <= 0:
            return 0
        if self._counted is None:
            self._counted = float(record_count)
            return 1
        updates = int((record_count - self._counted) * self.ratio)
        self._counted += updates / self.ratio
        return max(updates, 0)

    def reset(self, record_count: int) -> None:
        """Forgets the updates owed and counts from ``record_count`` on (after a resume that
        refills the replay buffer, so its warm-up frames do not turn into a burst of
        updates)."""
        self._counted = float(record_count)

    def state_dict(self) -> dict[str, float | None]:
        """``{"ratio": ..., "counted": ...}`` (the records paid for, fractions included)."""
        return {"ratio": self.ratio, "counted": self._counted}

    def load_state_dict(self, state_dict: Mapping[str, float | None]) -> None:
        """Restores a :meth:`state_dict`."""
        missing = {"ratio", "counted"} - set(state_dict)
        if missing:
            raise KeyError(f"DreamerV3UpdateRatio.load_state_dict: missing {sorted(missing)}.")
        self.ratio = float(state_dict["ratio"])  # type: ignore[arg-type]
        counted = state_dict["counted"]
        self._counted = None if counted is None else float(counted)


class DreamerV3OptimizationStepper(OptimizationStepper):
    """A complete DreamerV3 learner update: the loss's forward and backward, an optimizer
    step (a :class:`DreamerV3Optimizer`, which clips the gradients itself) and the target
    update.

    Registered with a :class:`~rl_objectives.trainers.Trainer` (built with
    ``optimizer=None``), it steps on the losses the trainer computed (``__call__``). In a loop
    of one's own, :meth:`step` runs the whole update on a replayed batch; with
    ``compile_train_step`` or ``cudagraph`` call :meth:`warmup` first with a batch of the same
    shapes. Each update writes the loss's detached ``"replay_context"`` (the posterior
    latents) into the batch, when the loss returns one.

    Args:
        loss_module: the loss (e.g. :class:`~rl_objectives.DreamerV3Loss`): returns a
            TensorDict whose ``loss*`` entries are summed.
        optimizer: the optimizer of the loss's parameters.
        target_updater: stepped after each optimizer step (None: no target networks).

    Keyword Args:
        compile_train_step: ``torch.compile`` the forward/backward of :meth:`step`.
        compile_mode: ``torch.compile``'s mode.
        cudagraph: capture the forward/backward of :meth:`step` in a CUDA graph
            (``tensordict.nn.CudaGraphModule``); CUDA inputs only.
        warmup_steps: forward/backward calls :meth:`warmup` runs. Defaults to 5.
        mixed_precision: bfloat16 autocast of the forward on CUDA (no effect on the CPU).

    Raises:
        TypeError: ``optimizer`` is not an optimizer, or ``loss_module`` not callable.
        ValueError: ``warmup_steps`` below 1 or an unknown ``compile_mode``.
    """

    def __init__(
        self,
        loss_module: Any,
        optimizer: torch.optim.Optimizer,
        target_updater: Any = None,
        *,
        compile_train_step: bool = False,
        compile_mode: str = "default",
        cudagraph: bool = False,
        warmup_steps: int = 5,
        mixed_precision: bool = False,
    ) -> None:
        super().__init__(optimizer)
        owner = "DreamerV3OptimizationStepper"
        if not callable(loss_module):
            raise TypeError(f"{owner}: loss_module must be callable, got {type(loss_module)}.")
        if target_updater is not None and not callable(getattr(target_updater, "step", None)):
            raise TypeError(
                f"{owner}: target_updater must have a step() method, got "
                f"{type(target_updater).__name__}."
            )
        if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 1:
            raise ValueError(f"{owner}: warmup_steps must be an int >= 1, got {warmup_steps!r}.")
        if compile_mode not in _COMPILE_MODES:
            raise ValueError(
                f"{owner}: compile_mode must be one of {list(_COMPILE_MODES)}, got "
                f"{compile_mode!r}."
            )
        self.loss_module = loss_module
        self.target_updater = target_updater
        self.compile_train_step = bool(compile_train_step)
        self.compile_mode = compile_mode
        self.cudagraph = bool(cudagraph)
        self.warmup_steps = warmup_steps
        self.mixed_precision = bool(mixed_precision)
        self._ready = not (self.compile_train_step or self.cudagraph)
        self._train_step: Callable[[TensorDictBase], TensorDictBase] = self._forward_backward

    def _device_type(self) -> str:
        first = next(self._params(), None)
        return "cpu" if first is None else first.device.type

    def forward_context(self) -> contextlib.AbstractContextManager[Any]:
        """bfloat16 autocast on CUDA with ``mixed_precision``, else none."""
        device_type = self._device_type()
        return torch.autocast(
            device_type, dtype=torch.bfloat16,
            enabled=self.mixed_precision and device_type == "cuda",
        )  # fmt: skip

    def _backward(self, losses: TensorDictBase) -> None:
        total, _ = sum_loss_terms(type(self).__name__, losses)
        self.optimizer.zero_grad(set_to_none=False)
        total.backward()

    def _forward_backward(self, sample: TensorDictBase) -> TensorDictBase:
        with self.forward_context():
            losses = self.loss_module(sample)
        self._backward(losses)
        return losses.detach()

    def _update(self) -> None:
        if not any(p.grad is not None for p in self._params()):
            raise RuntimeError(
                "DreamerV3OptimizationStepper: the update produced no gradient of the "
                "optimizer's parameters; does the optimizer hold the loss's parameters?"
            )
        self.optimizer.step()
        if self.target_updater is not None:
            self.target_updater.step()

    def __call__(self, losses: TensorDictBase) -> dict[str, torch.Tensor]:
        """The trainer's ``"optimizer"`` hook: backpropagates the ``loss*`` terms, steps the
        optimizer and the targets; returns nothing more to log (the trainer logs the terms)."""
        self._backward(losses)
        self._update()
        return {}

    def warmup(self, sample: TensorDictBase) -> None:
        """Compiles / captures the forward/backward on ``sample`` (``warmup_steps`` calls),
        leaving the parameters, optimizer, targets, the loss's buffers and the global RNG
        states as they were.

        Raises:
            RuntimeError: ``cudagraph`` with a sample that is not on CUDA.
        """
        first = next(iter(sample.values(True, True)), None)
        if self.cudagraph and (first is None or first.device.type != "cuda"):
            raise RuntimeError(
                "DreamerV3OptimizationStepper.warmup: cudagraph=True captures CUDA work only; "
                "the sample is not on CUDA. Move it (and the loss) to CUDA or set "
                "cudagraph=False."
            )
        self._ready = False
        train_step: Callable[[TensorDictBase], TensorDictBase] = self._forward_backward
        if self.compile_train_step:
            train_step = torch.compile(train_step, mode=self.compile_mode)
        if self.cudagraph:
            from tensordict.nn import CudaGraphModule

            train_step = CudaGraphModule(train_step, warmup=self.warmup_steps, device=first.device)
        rng = GlobalRNGState()
        rng_state = rng.state_dict()
        buffers = []
        if isinstance(self.loss_module, torch.nn.Module):
            buffers = [(b, b.detach().clone()) for b in self.loss_module.buffers()]
        try:
            for _ in range(self.warmup_steps):
                train_step(sample)
            self.optimizer.zero_grad(set_to_none=False)
        finally:
            with torch.no_grad():
                for buffer, saved in buffers:
                    buffer.copy_(saved)
            rng.load_state_dict(rng_state)
        self._train_step = train_step
        self._ready = True

    def step(self, trainer: Any, sub_batch: TensorDictBase) -> TensorDictBase:
        """One learner update on ``sub_batch``; returns the loss's tensors, detached.

        Args:
            trainer: the trainer that owns this stepper, or None in a loop of one's own; a
                trainer must hold this stepper's loss.
            sub_batch: the replayed sequences; the loss's ``"replay_context"`` is written
                into it.

        Raises:
            ValueError: the trainer's loss is another module.
            RuntimeError: compiled or captured updates before :meth:`warmup`.
        """
        if trainer is not None and getattr(trainer, "loss_module", None) is not self.loss_module:
            raise ValueError(
                "DreamerV3OptimizationStepper.step: the trainer's loss_module is not this "
                "stepper's; build both with the same loss."
            )
        if not self._ready:
            raise RuntimeError(
                "DreamerV3OptimizationStepper.step: call warmup(sample) first when "
                "compile_train_step or cudagraph is set."
            )
        result = self._train_step(sub_batch)
        self._update()
        context = result.get("replay_context", None)
        if context is not None:
            sub_batch.set("replay_context", context)
        return result.select(*(k for k, v in result.items() if isinstance(v, torch.Tensor)))

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state, and the target updater's when it has one."""
        state: dict[str, Any] = {"optimizer": self.optimizer.state_dict()}
        if callable(getattr(self.target_updater, "state_dict", None)):
            state["target_updater"] = self.target_updater.state_dict()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a :meth:`state_dict`."""
        self.optimizer.load_state_dict(state_dict["optimizer"])
        if "target_updater" in state_dict and self.target_updater is not None:
            self.target_updater.load_state_dict(state_dict["target_updater"])
