"""Point masses, for deterministic policies: :class:`Delta` and :class:`TanhDelta`."""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import distributions as D
from torch.distributions import constraints

from rl_core.modules.distributions._checks import bounds_like, check_event_dims, validating

_size = torch.Size
_NO_SAMPLE_SHAPE = torch.Size()


def _split_shape(
    param: torch.Tensor,
    batch_shape: torch.Size | tuple[int, ...] | None,
    event_shape: torch.Size | tuple[int, ...] | None,
) -> tuple[torch.Size, torch.Size]:
    shape = param.shape
    if batch_shape is None and event_shape is None:
        event_shape = shape[-1:]
    if batch_shape is None:
        event_shape = _size(event_shape)
        batch_shape = shape[: len(shape) - len(event_shape)]
    elif event_shape is None:
        batch_shape = _size(batch_shape)
        event_shape = shape[len(batch_shape) :]
    batch_shape, event_shape = _size(batch_shape), _size(event_shape)
    if batch_shape + event_shape != shape:
        raise ValueError(
            f"Delta: batch_shape {tuple(batch_shape)} + event_shape {tuple(event_shape)} must "
            f"equal the shape of param {tuple(shape)}. Pass only one of them, or shapes that "
            f"split param's shape."
        )
    return batch_shape, event_shape


class Delta(D.Distribution):
    """A point mass at ``param``: every sample is ``param``.

    It lets a deterministic policy (DDPG, TD3) sit in the same probabilistic-module machinery
    as a stochastic one. :meth:`log_prob` is ``0`` for a value equal to ``param`` within
    ``atol``/``rtol`` (as :func:`torch.isclose`) over the whole event, and ``-inf`` otherwise.
    :meth:`rsample` keeps the gradient to ``param``; :meth:`sample` detaches it.

    Every exploration type gives ``param``: ``RANDOM`` samples it, and ``mode``, ``mean`` and
    ``deterministic_sample`` are ``param``. No entropy is defined (it is ``-inf`` for a point
    mass in a continuous space).

    Args:
        param: the point, shape ``[*batch_shape, *event_shape]``.
        atol: absolute tolerance of the equality test of :meth:`log_prob`. Defaults to ``1e-6``.
        rtol: relative tolerance. Defaults to ``1e-6``.
        batch_shape: the batch part of ``param``'s shape. Defaults to all but the last
            ``len(event_shape)`` dimensions.
        event_shape: the event part. Defaults to ``param.shape[-1:]`` when ``batch_shape`` is
            not given, else to what follows ``batch_shape``.

    Keyword Args:
        validate_args: forwarded to :class:`torch.distributions.Distribution`.

    Raises:
        ValueError: ``batch_shape`` and ``event_shape`` do not split ``param``'s shape.

    Examples:
        >>> import torch
        >>> from rl_core.modules.distributions import Delta
        >>> dist = Delta(torch.tensor([[0.5, -1.0], [2.0, 0.0]]))
        >>> dist.batch_shape, dist.event_shape
        (torch.Size([2]), torch.Size([2]))
        >>> print(dist.sample())
        tensor([[ 0.5000, -1.0000],
                [ 2.0000,  0.0000]])
        >>> print(dist.log_prob(torch.tensor([[0.5, -1.0], [2.0, 1.0]])))
        tensor([0., -inf])
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"param": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(
        self,
        param: torch.Tensor,
        atol: float = 1e-6,
        rtol: float = 1e-6,
        batch_shape: torch.Size | tuple[int, ...] | None = None,
        event_shape: torch.Size | tuple[int, ...] | None = None,
        *,
        validate_args: bool | None = None,
    ) -> None:
        batch_shape, event_shape = _split_shape(param, batch_shape, event_shape)
        self.param = param
        self.atol, self.rtol = atol, rtol
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def rsample(
        self, sample_shape: torch.Size | tuple[int, ...] = _NO_SAMPLE_SHAPE
    ) -> torch.Tensor:
        """``param`` expanded to ``[*sample_shape, *param.shape]``, differentiable."""
        return self.param.expand(_size(sample_shape) + self.param.shape)

    def sample(self, sample_shape: torch.Size | tuple[int, ...] = _NO_SAMPLE_SHAPE) -> torch.Tensor:
        """``param`` expanded to ``[*sample_shape, *param.shape]``, detached."""
        return self.rsample(sample_shape).detach()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """``0`` where ``value`` equals ``param`` within tolerance over the event, else ``-inf``."""
        if self._validate_args:
            self._validate_sample(value)
        close = torch.isclose(value, self.param, rtol=self.rtol, atol=self.atol)
        if self.event_shape:
            close = close.flatten(-len(self.event_shape)).all(-1)
        zero = torch.zeros((), dtype=self.param.dtype, device=self.param.device)
        return torch.where(close, zero, zero - math.inf)

    @property
    def mode(self) -> torch.Tensor:
        """``param``."""
        return self.param

    @property
    def mean(self) -> torch.Tensor:
        """``param``."""
        return self.param

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """``param``: the action of ``ExplorationType.DETERMINISTIC``."""
        return self.param


class TanhDelta(Delta):
    """A point mass at ``tanh(param)`` mapped to the box ``[low, high]``.

    The deterministic counterpart of :class:`~rl_core.modules.distributions.TanhNormal`: a
    network's unbounded output becomes an action inside the bounds,
    ``low + (high - low) * (tanh(param) + 1) / 2``. Everything else is as in :class:`Delta`,
    with the squashed point in place of ``param`` (which stays available as
    :attr:`pre_tanh_param`).

    Args:
        param: the unbounded point, shape ``[*batch, *event]``.
        low: lower bound, a float or a tensor broadcastable to ``param``. Defaults to ``-1.0``.
        high: upper bound, above ``low``. Defaults to ``1.0``.

    Keyword Args:
        event_dims: number of trailing dimensions that form one action. Defaults to ``1``.
        atol: absolute tolerance of :meth:`log_prob`. Defaults to ``1e-6``.
        rtol: relative tolerance of :meth:`log_prob`. Defaults to ``1e-6``.
        validate_args: forwarded to :class:`torch.distributions.Distribution`.

    Raises:
        ValueError: ``low`` is not below ``high`` everywhere (tensor bounds are compared only
            with argument validation on), the bounds do not broadcast to
            ``param``, or ``event_dims`` exceeds ``param.dim()``.
        TypeError: ``event_dims`` is not an int.

    Examples:
        >>> import torch
        >>> from rl_core.modules.distributions import TanhDelta
        >>> dist = TanhDelta(torch.tensor([0.0, 100.0]), low=0.0, high=4.0)
        >>> print(dist.sample())
        tensor([2., 4.])
        >>> print(dist.log_prob(torch.tensor([2.0, 4.0])))
        tensor(0.)
    """

    def __init__(
        self,
        param: torch.Tensor,
        low: float | torch.Tensor = -1.0,
        high: float | torch.Tensor = 1.0,
        *,
        event_dims: int = 1,
        atol: float = 1e-6,
        rtol: float = 1e-6,
        validate_args: bool | None = None,
    ) -> None:
        check_event_dims("TanhDelta", event_dims, param, "param")
        low_t, high_t = bounds_like(
            "TanhDelta", low, high, param, "param", validate=validating(validate_args)
        )
        self.pre_tanh_param = param
        self.low, self.high = low_t, high_t
        squashed = (high_t + low_t) / 2 + (high_t - low_t) / 2 * torch.tanh(param)
        split = param.dim() - event_dims
        super().__init__(
            squashed,
            atol,
            rtol,
            batch_shape=param.shape[:split],
            event_shape=param.shape[split:],
            validate_args=validate_args,
        )
