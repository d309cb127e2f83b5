"""Names shared by the losses: the :class:`ValueEstimators` enum and ``distance_loss``."""

from __future__ import annotations

import enum

from torch import Tensor
from torch.nn import functional as F

__all__ = ["ValueEstimators", "distance_loss"]


class ValueEstimators(enum.Enum):
    """The value estimators a loss can build with ``make_value_estimator(value_type)``.

    Examples:
        >>> from rl_objectives import ValueEstimators
        >>> ValueEstimators.GAE.name
        'GAE'
    """

    TD0 = "Bootstrapped TD (1-step return)"
    TD1 = "TD(1) (infinity-step return)"
    TDLambda = "TD(lambda)"
    GAE = "Generalized advantage estimate"
    VTrace = "V-trace"
    MAGAE = "Multi-agent generalized advantage estimate"


def distance_loss(
    prediction: Tensor,
    target: Tensor,
    loss_function: str = "smooth_l1",
    *,
    strict_shape: bool = True,
) -> Tensor:
    """Elementwise distance between a prediction and a target (no reduction).

    Args:
        prediction: the predicted values.
        target: the targets; same shape as ``prediction`` when ``strict_shape``.
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.

    Keyword Args:
        strict_shape: raise on a shape mismatch instead of broadcasting. Defaults to ``True``.

    Returns:
        The elementwise loss, shaped like the broadcast of the inputs.

    Raises:
        ValueError: unknown ``loss_function`` or a shape mismatch under ``strict_shape``.

    Examples:
        >>> import torch
        >>> from rl_objectives.utils import distance_loss
        >>> distance_loss(torch.tensor([0.0, 3.0]), torch.zeros(2), "l2")
        tensor([0., 9.])
    """
    if strict_shape and prediction.shape != target.shape:
        raise ValueError(
            f"distance_loss: prediction has shape {tuple(prediction.shape)} but target has "
            f"{tuple(target.shape)}; they must match (pass strict_shape=False to broadcast)."
        )
    if loss_function == "l2":
        return F.mse_loss(prediction, target, reduction="none")
    if loss_function == "l1":
        return F.l1_loss(prediction, target, reduction="none")
    if loss_function == "smooth_l1":
        return F.smooth_l1_loss(prediction, target, reduction="none")
    raise ValueError(
        f"distance_loss: unknown loss_function {loss_function!r}; expected 'l2', 'l1' or "
        f"'smooth_l1'."
    )
