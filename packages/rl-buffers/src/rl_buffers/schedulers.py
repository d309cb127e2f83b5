"""Schedulers of a replay buffer's sampler parameters (TorchRL's
``torchrl.data.replay_buffers.scheduler``): anneal a :class:`PrioritizedSampler`'s ``beta``
towards 1 as training goes on, for example.

A scheduler reads the parameter's value when it is built (its *initial value*); each
:meth:`ParameterScheduler.step` counts one step, computes the next value, clips it to
``[min_value, max_value]`` and sets it on the sampler.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

import torch

from rl_buffers.replay_buffers.replay_buffer import ReplayBuffer
from rl_buffers.samplers.sampler import Sampler

__all__ = [
    "LambdaScheduler",
    "LinearScheduler",
    "ParameterScheduler",
    "SchedulerList",
    "StepScheduler",
]

Number = int | float


class ParameterScheduler(ABC):
    """The base of the schedulers: sets ``sampler.<param_name>`` at each :meth:`step`.

    Subclasses implement :meth:`_step`, the parameter's next value (before clipping) from
    :attr:`step_count` (the steps taken, this one included) and :attr:`initial_value`.

    Args:
        obj: a :class:`ReplayBuffer` (its sampler is scheduled) or a :class:`Sampler`.
        param_name: the sampler's attribute to schedule, e.g. ``"beta"``.
        min_value: the lowest value set (None: no bound).
        max_value: the highest value set (None: no bound).

    Raises:
        TypeError: ``obj`` is neither a replay buffer nor a sampler, or the attribute is not
            a number or a tensor.
        ValueError: the sampler has no attribute ``param_name``, or ``min_value`` exceeds
            ``max_value``.
    """

    def __init__(
        self,
        obj: ReplayBuffer | Sampler,
        param_name: str,
        min_value: Number | None = None,
        max_value: Number | None = None,
    ) -> None:
        name = type(self).__name__
        if isinstance(obj, ReplayBuffer):
            sampler = obj.sampler
        elif isinstance(obj, Sampler):
            sampler = obj
        else:
            raise TypeError(
                f"{name}: expected obj to be a ReplayBuffer or a Sampler, got {type(obj).__name__}."
            )
        if not isinstance(param_name, str) or not hasattr(sampler, param_name):
            raise ValueError(
                f"{name}: {type(sampler).__name__} has no attribute {param_name!r} to schedule."
            )
        value = getattr(sampler, param_name)
        if isinstance(value, bool) or not isinstance(value, int | float | torch.Tensor):
            raise TypeError(
                f"{name}: expected {type(sampler).__name__}.{param_name} to be a number or a "
                f"tensor, got {type(value).__name__}."
            )
        if min_value is not None and max_value is not None and min_value > max_value:
            raise ValueError(
                f"{name}: expected min_value <= max_value, got {min_value} > {max_value}."
            )
        self.sampler = sampler
        self.param_name = param_name
        self.min_value = min_value
        self.max_value = max_value
        self.initial_value = value.clone() if isinstance(value, torch.Tensor) else value
        self.step_count = 0

    @property
    def value(self) -> Any:
        """The parameter's current value on the sampler."""
        return getattr(self.sampler, self.param_name)

    @abstractmethod
    def _step(self) -> Any:
        """The parameter's next value, before clipping."""

    def step(self) -> None:
        """Counts one step and sets the parameter to its next value (clipped)."""
        self.step_count += 1
        value = self._step()
        if isinstance(value, torch.Tensor):
            if self.min_value is not None or self.max_value is not None:
                value = value.clamp(min=self.min_value, max=self.max_value)
        else:
            if self.min_value is not None:
                value = max(value, self.min_value)
            if self.max_value is not None:
                value = min(value, self.max_value)
        setattr(self.sampler, self.param_name, value)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state (everything but the sampler)."""
        return {key: value for key, value in vars(self).items() if key != "sampler"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`.

        Raises:
            ValueError: the state schedules another parameter.
        """
        if state_dict.get("param_name") != self.param_name:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict: the state schedules "
                f"{state_dict.get('param_name')!r}, this scheduler {self.param_name!r}."
            )
        vars(self).update(state_dict)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({type(self.sampler).__name__}.{self.param_name}, "
            f"step_count={self.step_count}, value={self.value})"
        )


class LambdaScheduler(ParameterScheduler):
    """Sets the parameter to ``initial_value * lambda_fn(step_count)`` (as
    :class:`torch.optim.lr_scheduler.LambdaLR` does for learning rates).

    Args:
        obj: the replay buffer whose sampler to schedule, or the sampler.
        param_name: the sampler's attribute, e.g. ``"beta"``.
        lambda_fn: the factor of the initial value after ``step_count`` steps.
        min_value, max_value: bounds of the values set (None: none).

    Examples:
        >>> from rl_buffers import PrioritizedSampler
        >>> from rl_buffers.schedulers import LambdaScheduler
        >>> sampler = PrioritizedSampler(8, alpha=0.7, beta=0.4)
        >>> scheduler = LambdaScheduler(sampler, "beta", lambda n: 1 + n, max_value=1.0)
        >>> scheduler.step(); round(sampler.beta, 6)
        0.8
        >>> scheduler.step(); sampler.beta
        1.0
    """

    def __init__(
        self,
        obj: ReplayBuffer | Sampler,
        param_name: str,
        lambda_fn: Callable[[int], Number],
        min_value: Number | None = None,
        max_value: Number | None = None,
    ) -> None:
        if not callable(lambda_fn):
            raise TypeError(
                f"LambdaScheduler: expected lambda_fn to be callable, got "
                f"{type(lambda_fn).__name__}."
            )
        super().__init__(obj, param_name, min_value, max_value)
        self.lambda_fn = lambda_fn

    def _step(self) -> Any:
        return self.initial_value * self.lambda_fn(self.step_count)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state; ``lambda_fn`` is left out (it is code, as in
        :class:`torch.optim.lr_scheduler.LambdaLR`)."""
        state = super().state_dict()
        del state["lambda_fn"]
        return state


class LinearScheduler(ParameterScheduler):
    """Moves the parameter linearly from its initial value to ``final_value`` in
    ``num_steps`` steps, then holds it: after ``n`` steps the value is
    ``initial + (final - initial) * min(n, num_steps) / num_steps``.

    Args:
        obj: the replay buffer whose sampler to schedule, or the sampler.
        param_name: the sampler's attribute, e.g. ``"beta"``.
        final_value: the value reached after ``num_steps`` steps.
        num_steps: the number of steps to reach it (a positive int).

    Examples:
        >>> from rl_buffers import PrioritizedSampler
        >>> from rl_buffers.schedulers import LinearScheduler
        >>> sampler = PrioritizedSampler(8, alpha=0.7, beta=0.6)
        >>> scheduler = LinearScheduler(sampler, "beta", final_value=1.0, num_steps=4)
        >>> for _ in range(5):
        ...     scheduler.step()
        ...     print(round(sampler.beta, 6))
        0.7
        0.8
        0.9
        1.0
        1.0
    """

    def __init__(
        self,
        obj: ReplayBuffer | Sampler,
        param_name: str,
        final_value: Number,
        num_steps: int,
    ) -> None:
        if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
            raise ValueError(
                f"LinearScheduler: expected num_steps to be a positive int, got {num_steps!r}."
            )
        super().__init__(obj, param_name)
        if isinstance(self.initial_value, torch.Tensor):
            final_value = torch.as_tensor(final_value).to(self.initial_value)
        self.final_value = final_value
        self.num_steps = num_steps

    def _step(self) -> Any:
        if self.step_count >= self.num_steps:
            return self.final_value
        share = self.step_count / self.num_steps
        return self.initial_value + (self.final_value - self.initial_value) * share


class StepScheduler(ParameterScheduler):
    """Changes the parameter every ``n_steps`` steps: ``value * gamma``
    (``mode="multiplicative"``) or ``value + gamma`` (``mode="additive"``), within
    ``[min_value, max_value]``.

    Args:
        obj: the replay buffer whose sampler to schedule, or the sampler.
        param_name: the sampler's attribute, e.g. ``"beta"``.
        gamma: the factor or the increment. Defaults to 0.9.
        n_steps: steps between two changes (a positive int). Defaults to 1.
        mode: ``"multiplicative"`` (the default) or ``"additive"``.
        min_value, max_value: bounds of the values set (None: none).

    Examples:
        >>> from rl_buffers import PrioritizedSampler
        >>> from rl_buffers.schedulers import StepScheduler
        >>> sampler = PrioritizedSampler(8, alpha=0.7, beta=0.6)
        >>> scheduler = StepScheduler(
        ...     sampler, "beta", gamma=0.25, n_steps=2, mode="additive", max_value=1.0
        ... )
        >>> values = []
        >>> for _ in range(6):
        ...     scheduler.step()
        ...     values.append(round(sampler.beta, 6))
        >>> values
        [0.6, 0.85, 0.85, 1.0, 1.0, 1.0]
    """

    def __init__(
        self,
        obj: ReplayBuffer | Sampler,
        param_name: str,
        gamma: Number = 0.9,
        n_steps: int = 1,
        mode: str = "multiplicative",
        min_value: Number | None = None,
        max_value: Number | None = None,
    ) -> None:
        if mode not in ("multiplicative", "additive"):
            raise ValueError(
                f"StepScheduler: expected mode 'multiplicative' or 'additive', got {mode!r}."
            )
        if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
            raise ValueError(
                f"StepScheduler: expected n_steps to be a positive int, got {n_steps!r}."
            )
        super().__init__(obj, param_name, min_value, max_value)
        self.gamma = gamma
        self.n_steps = n_steps
        self.mode = mode

    def _step(self) -> Any:
        value = self.value
        if self.step_count % self.n_steps:
            return value
        return value * self.gamma if self.mode == "multiplicative" else value + self.gamma


class SchedulerList:
    """Several schedulers stepped together.

    Args:
        schedulers: the schedulers (or one scheduler).

    Raises:
        TypeError: an item is not a :class:`ParameterScheduler`.
    """

    def __init__(self, schedulers: Iterable[ParameterScheduler] | ParameterScheduler) -> None:
        if isinstance(schedulers, ParameterScheduler):
            schedulers = [schedulers]
        self.schedulers: list[ParameterScheduler] = []
        for scheduler in schedulers:
            self.append(scheduler)

    def append(self, scheduler: ParameterScheduler) -> None:
        """Adds ``scheduler`` (stepped after the others)."""
        if not isinstance(scheduler, ParameterScheduler):
            raise TypeError(
                f"SchedulerList: expected ParameterScheduler items, got {type(scheduler).__name__}."
            )
        self.schedulers.append(scheduler)

    def step(self) -> None:
        """Steps every scheduler, in order."""
        for scheduler in self.schedulers:
            scheduler.step()

    def state_dict(self) -> list[dict[str, Any]]:
        """Each scheduler's state, in order."""
        return [scheduler.state_dict() for scheduler in self.schedulers]

    def load_state_dict(self, state_dict: list[dict[str, Any]]) -> None:
        """Restores each scheduler's state from :meth:`state_dict`.

        Raises:
            ValueError: the list's length is not the number of schedulers.
        """
        if len(state_dict) != len(self.schedulers):
            raise ValueError(
                f"SchedulerList.load_state_dict: expected {len(self.schedulers)} states, got "
                f"{len(state_dict)}."
            )
        for scheduler, state in zip(self.schedulers, state_dict, strict=True):
            scheduler.load_state_dict(state)

    def __len__(self) -> int:
        return len(self.schedulers)
