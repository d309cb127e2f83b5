"""Invertible scalar transforms of value targets: :class:`ValueTransform` and its kinds.

A value network trained on a transformed scale predicts ``f(G)`` for a return ``G``; its
prediction is read back with ``f^-1``. Two transforms compress large returns:

- ``symlog(x) = sign(x) * ln(|x| + 1)`` with inverse ``symexp`` (Hafner et al. 2023,
  DreamerV3; :func:`~rl_objectives.modules.symlog`);
- Pohlen et al. 2018 ("Observe and Look Further", https://arxiv.org/abs/1805.11593):
  ``h(x) = sign(x) * (sqrt(|x| + 1) - 1) + epsilon * x`` (:func:`signed_hyperbolic`) and its
  closed-form inverse (:func:`signed_parabolic`)
  ``h^-1(y) = sign(y) * (((sqrt(1 + 4 * epsilon * (|y| + 1 + epsilon)) - 1) / (2 * epsilon))**2
  - 1)``.

Both functions are written so that autograd gives the true derivative at 0 (``1 / 2 +
epsilon`` for ``h``, its reciprocal for ``h^-1``) rather than the zero slope of ``sign``.
"""

from __future__ import annotations

import abc
import math

import torch
from torch import nn

from rl_objectives.modules.dreamer_v3_utils import symexp, symlog

__all__ = [
    "ValueTransform",
    "IdentityValueTransform",
    "SymLogValueTransform",
    "SignedHyperbolicValueTransform",
    "ComposeValueTransform",
    "signed_hyperbolic",
    "signed_parabolic",
]


def _check_epsilon(where: str, epsilon: float) -> float:
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, (int, float))
        or not math.isfinite(epsilon)
        or epsilon <= 0
    ):
        raise ValueError(
            f"{where}: expected epsilon as a finite number > 0 (the linear term that keeps the "
            f"inverse Lipschitz; Pohlen et al. use 1e-3), got {epsilon!r}."
        )
    return float(epsilon)


def signed_hyperbolic(value: torch.Tensor, epsilon: float = 1e-3) -> torch.Tensor:
    """Pohlen et al.'s ``h(x) = sign(x) * (sqrt(|x| + 1) - 1) + epsilon * x``, element-wise.

    Computed as ``x / (sqrt(|x| + 1) + 1) + epsilon * x`` (the same value, without the
    cancellation of ``sqrt(|x| + 1) - 1`` near 0, and with the true slope ``1/2 + epsilon`` at
    0 under autograd).

    Args:
        value: any shape, floating point.
        epsilon: the linear term, > 0. Defaults to 1e-3.

    Returns:
        ``h(value)``, same shape and dtype.

    Raises:
        ValueError: ``epsilon`` is not a finite number > 0.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import signed_hyperbolic
        >>> signed_hyperbolic(torch.tensor([-3.0, 0.0, 8.0], dtype=torch.float64)).tolist()
        [-1.003, 0.0, 2.008]
    """
    epsilon = _check_epsilon("signed_hyperbolic", epsilon)
    return value / (torch.sqrt(value.abs() + 1) + 1) + epsilon * value


def signed_parabolic(value: torch.Tensor, epsilon: float = 1e-3) -> torch.Tensor:
    """The inverse of :func:`signed_hyperbolic` with the same ``epsilon``, element-wise.

    With ``m = |y|`` and ``d = sqrt(1 + 4 * epsilon * (m + 1 + epsilon))``, the root
    ``r = (d - 1) / (2 * epsilon)`` of Pohlen et al.'s closed form is evaluated as
    ``2 * (m + 1 + epsilon) / (d + 1)`` (equal, since ``(d - 1) * (d + 1) = 4 * epsilon *
    (m + 1 + epsilon)``, and free of cancellation for small ``epsilon``); the result is
    ``sign(y) * (r**2 - 1)``. At ``y = 0`` the value is 0 with slope ``1 / (1/2 + epsilon)``.

    Args:
        value: any shape, floating point, in the scale of :func:`signed_hyperbolic`.
        epsilon: the linear term, > 0. Defaults to 1e-3.

    Returns:
        ``h^-1(value)``, same shape and dtype.

    Raises:
        ValueError: ``epsilon`` is not a finite number > 0.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import signed_hyperbolic, signed_parabolic
        >>> x = torch.tensor([-250.0, 0.0, 1e4], dtype=torch.float64)
        >>> torch.allclose(signed_parabolic(signed_hyperbolic(x)), x)
        True
    """
    epsilon = _check_epsilon("signed_parabolic", epsilon)
    magnitude = value.abs()
    shifted = magnitude + 1 + epsilon
    root = 2 * shifted / (torch.sqrt(1 + 4 * epsilon * shifted) + 1)
    inverse = torch.sign(value) * (root.square() - 1)
    # sign() has slope 0; at 0 the value is 0 and the slope that of the linearised inverse
    return torch.where(value == 0, value / (0.5 + epsilon), inverse)


class ValueTransform(nn.Module, abc.ABC):
    """An invertible element-wise transform of value targets: ``forward`` and ``inverse``.

    A subclass implements both; ``inverse(forward(x)) == x`` up to rounding.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import ValueTransform
        >>> class Halve(ValueTransform):
        ...     def forward(self, value):
        ...         return value / 2
        ...     def inverse(self, value):
        ...         return value * 2
        >>> Halve().inverse(Halve()(torch.tensor([3.0]))).tolist()
        [3.0]
    """

    @abc.abstractmethod
    def forward(self, value: torch.Tensor) -> torch.Tensor:
        """The transformed values, same shape."""

    @abc.abstractmethod
    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        """The values whose transform is ``value``, same shape."""


class IdentityValueTransform(ValueTransform):
    """``f(x) = x``: the untransformed scale.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import IdentityValueTransform
        >>> IdentityValueTransform()(torch.tensor([-2.0, 5.0])).tolist()
        [-2.0, 5.0]
    """

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return value

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        return value


class SymLogValueTransform(ValueTransform):
    """DreamerV3's ``symlog`` scale; ``inverse`` is ``symexp``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import SymLogValueTransform
        >>> t = SymLogValueTransform()
        >>> x = torch.tensor([-100.0, 0.0, 1000.0], dtype=torch.float64)
        >>> torch.allclose(t.inverse(t(x)), x)
        True
    """

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return symlog(value)

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        return symexp(value)


class SignedHyperbolicValueTransform(ValueTransform):
    """Pohlen et al.'s ``h`` (:func:`signed_hyperbolic`); ``inverse`` is ``h^-1``
    (:func:`signed_parabolic`), as in R2D2 and the MuZero family.

    Args:
        epsilon: the linear term, > 0. Defaults to 1e-3.

    Raises:
        ValueError: ``epsilon`` is not a finite number > 0.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import SignedHyperbolicValueTransform
        >>> t = SignedHyperbolicValueTransform(epsilon=0.01)
        >>> t(torch.tensor([8.0], dtype=torch.float64)).tolist()  # 3 - 1 + 0.08
        [2.08]
    """

    def __init__(self, epsilon: float = 1e-3) -> None:
        super().__init__()
        self.epsilon = _check_epsilon(type(self).__name__, epsilon)

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return signed_hyperbolic(value, self.epsilon)

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        return signed_parabolic(value, self.epsilon)

    def extra_repr(self) -> str:
        return f"epsilon={self.epsilon}"


class ComposeValueTransform(ValueTransform):
    """Transforms applied in order; ``inverse`` undoes them in the reverse order.

    Args:
        *transforms: :class:`ValueTransform` instances, applied first to last.

    Raises:
        TypeError: an argument is not a :class:`ValueTransform`.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import (
        ...     ComposeValueTransform, SignedHyperbolicValueTransform, SymLogValueTransform)
        >>> t = ComposeValueTransform(SignedHyperbolicValueTransform(), SymLogValueTransform())
        >>> x = torch.tensor([-40.0, 7.0], dtype=torch.float64)
        >>> torch.allclose(t.inverse(t(x)), x), len(t.transforms)
        (True, 2)
    """

    def __init__(self, *transforms: ValueTransform) -> None:
        super().__init__()
        for position, transform in enumerate(transforms):
            if not isinstance(transform, ValueTransform):
                raise TypeError(
                    f"ComposeValueTransform: expected ValueTransform instances, got "
                    f"{type(transform).__name__} at position {position}. Wrap the function in "
                    f"a ValueTransform subclass with forward and inverse."
                )
        self.transforms = nn.ModuleList(transforms)

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        for transform in self.transforms:
            value = transform(value)
        return value

    def inverse(self, value: torch.Tensor) -> torch.Tensor:
        for transform in reversed(self.transforms):
            value = transform.inverse(value)
        return value
