"""PILCO's saturating cost: :func:`expected_saturating_cost` and the
:class:`ExponentialQuadraticCost` loss around it."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C

__all__ = ["ExponentialQuadraticCost", "expected_saturating_cost"]


def expected_saturating_cost(mean: Tensor, cov: Tensor, target: Tensor, weights: Tensor) -> Tensor:
    """``E[1 - exp(-1/2 (x - target)^T W (x - target))]`` for ``x ~ N(mean, cov)``.

    In closed form (Deisenroth & Rasmussen 2011, Eqs. 24-25):
    ``1 - |I + cov W|^{-1/2} exp(-1/2 (mean - target)^T W (I + cov W)^{-1} (mean - target))``.

    Args:
        mean: ``[*B, D]``.
        cov: ``[*B, D, D]`` (zeros give the cost at ``mean``).
        target: ``[D]`` (or broadcastable to ``mean``).
        weights: ``[D, D]``, the symmetric positive semi-definite ``W``.

    Returns:
        ``[*B]``, each in ``[0, 1]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.losses.pilco import expected_saturating_cost
        >>> round(expected_saturating_cost(torch.ones(1), torch.zeros(1, 1), torch.zeros(1),
        ...     torch.eye(1)).item(), 4)
        0.3935
    """
    eye = torch.eye(mean.shape[-1], dtype=mean.dtype, device=mean.device)
    a = eye + cov @ weights  # I + S W
    diff = (mean - target).unsqueeze(-1)
    # W (I + S W)^{-1} = (I + W S)^{-1} W: solve against the transpose of `a`
    solved = torch.linalg.solve(a.mT, weights @ diff)
    quad = (diff * solved).sum((-1, -2))
    log_det = torch.linalg.slogdet(a)[1]
    return 1.0 - torch.exp(-0.5 * log_det - 0.5 * quad)


class ExponentialQuadraticCost(LossModule):
    """PILCO's expected saturating cost of a Gaussian state, as a loss.

    Reads a state's mean ``[*B, D]`` (``tensor_keys.loc``) and covariance ``[*B, D, D]``
    (``tensor_keys.scale``) and writes ``loss_cost``, the expectation of
    ``1 - exp(-1/2 (x - target)^T W (x - target))`` (:func:`expected_saturating_cost`),
    reduced over the batch. Summed over an imagined rollout it is the objective PILCO's
    policy search minimises.

    Args:
        target: ``[D]`` target state. Defaults to the origin.
        weights: ``[D, D]`` weight (precision) matrix ``W``, symmetric positive
            semi-definite. Defaults to the identity.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Raises:
        ValueError: ``target`` is not a vector, ``weights`` is not a square symmetric matrix
            of its size, or ``reduction`` is unknown; at call time, a state whose size is not
            the target's.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.losses import ExponentialQuadraticCost
        >>> cost = ExponentialQuadraticCost(reduction="none")
        >>> td = TensorDict(batch_size=[2])
        >>> td["observation", "mean"] = torch.zeros(2, 3)
        >>> td["observation", "var"] = torch.zeros(2, 3, 3)
        >>> cost(td)["loss_cost"]
        tensor([0., 0.])
    """

    @dataclass
    class _AcceptedKeys:
        loc: NestedKey = ("observation", "mean")
        scale: NestedKey = ("observation", "var")
        loss_cost: NestedKey = "loss_cost"

    default_keys = _AcceptedKeys

    def __init__(
        self,
        target: Tensor | None = None,
        weights: Tensor | None = None,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        self.reduction = C.check_reduction(type(self).__name__, reduction)
        if target is not None:
            target = torch.as_tensor(target)
            if target.dim() != 1:
                raise ValueError(
                    f"ExponentialQuadraticCost: expected target to be a vector of shape (D,), "
                    f"got shape {tuple(target.shape)}."
                )
        if weights is not None:
            weights = torch.as_tensor(weights)
            size = weights.shape[-1] if weights.dim() else 0
            if weights.dim() != 2 or weights.shape[0] != size:
                raise ValueError(
                    f"ExponentialQuadraticCost: expected weights to be a square (D, D) matrix, "
                    f"got shape {tuple(weights.shape)}."
                )
            if target is not None and size != target.shape[0]:
                raise ValueError(
                    f"ExponentialQuadraticCost: expected weights of shape ({target.shape[0]}, "
                    f"{target.shape[0]}) to match the target, got {tuple(weights.shape)}."
                )
            if not torch.allclose(weights, weights.mT):
                raise ValueError(
                    "ExponentialQuadraticCost: expected symmetric weights, got an asymmetric matrix."
                )
        self.register_buffer("target", target)
        self.register_buffer("weights", weights)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [self.tensor_keys.loc, self.tensor_keys.scale]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns a TensorDict with ``loss_cost`` (a scalar, or ``[*B]`` for ``"none"``)."""
        mean = tensordict.get(self.tensor_keys.loc)
        cov = tensordict.get(self.tensor_keys.scale)
        d = mean.shape[-1]
        target = self.target if self.target is not None else mean.new_zeros(d)
        weights = (
            self.weights
            if self.weights is not None
            else torch.eye(d, dtype=mean.dtype, device=mean.device)
        )
        if target.shape[-1] != d or cov.shape[-2:] != (d, d):
            raise ValueError(
                f"ExponentialQuadraticCost: expected a state mean (*B, {target.shape[-1]}) and "
                f"covariance (*B, {target.shape[-1]}, {target.shape[-1]}) at "
                f"{self.tensor_keys.loc!r} and {self.tensor_keys.scale!r}, got "
                f"{tuple(mean.shape)} and {tuple(cov.shape)}."
            )
        cost = expected_saturating_cost(mean, cov, target.to(mean.dtype), weights.to(mean.dtype))
        loss = C.reduce(cost, self.reduction)
        batch = cost.shape if self.reduction == "none" else ()
        return TensorDict({self.tensor_keys.loss_cost: loss}, batch_size=batch)
