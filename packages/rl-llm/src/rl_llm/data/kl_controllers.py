"""KL coefficient controllers for RLHF/GRPO-style training (Ziegler et al., 2019)."""

from __future__ import annotations

import abc
import math
import warnings
from collections.abc import Sequence
from typing import Any


class KLControllerBase(abc.ABC):
    """A KL coefficient that ``update`` changes from observed KL values.

    ``coef`` holds the coefficient; with a ``model`` (anything with a ``kl_coef`` attribute,
    e.g. a loss or a transform), the
    controller also writes it there after each update.
    """

    def __init__(self, coef: float, model: Any = None, attribute: str = "kl_coef") -> None:
        self.coef = float(coef)
        self.model = model
        self.attribute = attribute
        self._write()

    def _write(self) -> None:
        if self.model is not None:
            if not hasattr(self.model, self.attribute):
                raise AttributeError(
                    f"{type(self).__name__}: the model {type(self.model).__name__} has no "
                    f"{self.attribute!r} attribute to control."
                )
            setattr(self.model, self.attribute, self.coef)

    @abc.abstractmethod
    def update(self, kl_values: Sequence[float]) -> float:
        """Updates (and returns) ``coef`` from the KL values observed since the last update."""


class ConstantKLController(KLControllerBase):
    """A KL coefficient that never changes.

    Args:
        kl_coef: the coefficient.
        model: optional object whose ``kl_coef`` attribute is set to the coefficient.

    Examples:
        >>> from rl_llm.data import ConstantKLController
        >>> ConstantKLController(kl_coef=0.1).update([5.0, 7.0])
        0.1
    """

    def __init__(self, *, kl_coef: float | None = None, model: Any = None) -> None:
        if kl_coef is None:
            raise ValueError("ConstantKLController: expected kl_coef (a float), got None.")
        super().__init__(kl_coef, model)

    def update(self, kl_values: Sequence[float] = ()) -> float:
        self._write()
        return self.coef


class AdaptiveKLController(KLControllerBase):
    """The adaptive KL coefficient of Ziegler et al. (2019), Section 2.2.

    After ``n`` observed KL values with mean ``KL``::

        error = clip(KL / target - 1, -0.2, 0.2)
        coef <- coef * (1 + error * min(n / horizon, 1))

    so the coefficient grows when the policy strays further than ``target`` from the
    reference and shrinks when it stays closer. The step factor ``n / horizon`` is the
    paper's; it is clamped to 1 so that one update never corrects by more than the clip
    range (a factor between 0.8 and 1.2): an update that saw ``horizon`` values or more has
    seen a whole horizon. Without the clamp, 100 values of KL 0 with ``horizon=10`` would
    multiply the coefficient by ``1 - 0.2 * 10 = -1`` and turn the penalty into a bonus.

    Non-finite KL values (NaN, inf) are skipped with a ``RuntimeWarning``: ``n`` and the
    mean count the finite ones only, and an update with none leaves the coefficient as it
    was.

    Args:
        init_kl_coef: the starting coefficient.
        target: the desired KL.
        horizon: how many KL values a full 20 % correction is spread over.
        model: optional object whose ``kl_coef`` attribute follows the coefficient.

    Examples:
        >>> from rl_llm.data import AdaptiveKLController
        >>> ctl = AdaptiveKLController(init_kl_coef=0.2, target=6.0, horizon=10)
        >>> round(ctl.update([12.0, 12.0]), 6)  # error clipped to 0.2: 0.2 * (1 + 0.2 * 2 / 10)
        0.208
        >>> round(ctl.update([0.0] * 40), 6)  # 40 values >= horizon: 0.208 * (1 - 0.2)
        0.1664
    """

    def __init__(
        self, *, init_kl_coef: float, target: float, horizon: int, model: Any = None
    ) -> None:
        if target <= 0:
            raise ValueError(f"AdaptiveKLController: expected target > 0, got {target}.")
        if horizon <= 0:
            raise ValueError(f"AdaptiveKLController: expected horizon > 0, got {horizon}.")
        super().__init__(init_kl_coef, model)
        self.target = float(target)
        self.horizon = horizon

    def update(self, kl_values: Sequence[float]) -> float:
        values = [float(v) for v in kl_values]
        if not values:
            raise ValueError(
                "AdaptiveKLController.update: expected at least one KL value, got none."
            )
        finite = [v for v in values if math.isfinite(v)]
        if len(finite) < len(values):
            warnings.warn(
                f"AdaptiveKLController.update: skipped {len(values) - len(finite)} non-finite "
                f"kl value(s) of {len(values)}; the coefficient follows the finite ones only.",
                RuntimeWarning,
                stacklevel=2,
            )
        if finite:
            kl = sum(finite) / len(finite)
            error = min(max(kl / self.target - 1.0, -0.2), 0.2)
            self.coef *= 1.0 + error * min(len(finite) / self.horizon, 1.0)
        self._write()
        return self.coef
