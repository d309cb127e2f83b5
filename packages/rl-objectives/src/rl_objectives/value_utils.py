"""Value-target helpers of TorchRL's ``objectives.utils``: :func:`next_state_value` and
:func:`default_value_kwargs`."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor, nn

from rl_core import step_mdp
from rl_core.keys import DONE, NEXT, REWARD
from rl_objectives.losses._common import DEFAULT_GAMMA, DEFAULT_LMBDA
from rl_objectives.utils import ValueEstimators

__all__ = ["next_state_value", "default_value_kwargs"]


@torch.no_grad()
def next_state_value(
    tensordict: TensorDictBase,
    operator: nn.Module | None = None,
    next_val_key: str = "state_action_value",
    gamma: float = 0.99,
    pred_next_val: Tensor | None = None,
    **kwargs: Any,
) -> Tensor:
    """The one-step (or n-step) bootstrapped target ``r + gamma^k (1 - done) V(s')``, without
    gradient.

    ``r`` is ``("next", "reward")``, ``done`` is ``("next", "done")`` and ``k`` is the
    ``"steps_to_next_obs"`` entry when the batch has one (n-step returns), else 1. ``V(s')`` is
    ``pred_next_val`` when given, else ``operator`` run on the next state (``step_mdp`` of the
    batch), read at ``next_val_key``. When every transition is done, or ``gamma`` is 0, the
    target is the reward.

    Args:
        tensordict: the batch ``[*B]``.
        operator: the value network (writes ``next_val_key``); not needed with ``pred_next_val``.
        next_val_key: where ``operator`` writes its value. Defaults to ``"state_action_value"``.
        gamma: the discount, in ``[0, 1]``. Defaults to 0.99.
        pred_next_val: ``[*B]`` or ``[*B, 1]`` next-state values, instead of ``operator``.
        **kwargs: passed to ``operator``.

    Returns:
        ``[*B]`` targets (float).

    Raises:
        ValueError: ``gamma`` out of ``[0, 1]``, or neither ``operator`` nor ``pred_next_val``.
        KeyError: the batch has no ``("next", "reward")`` or ``("next", "done")``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives import next_state_value
        >>> td = TensorDict(batch_size=[2])
        >>> td["next", "reward"] = torch.tensor([[1.0], [2.0]])
        >>> td["next", "done"] = torch.tensor([[False], [True]])
        >>> next_state_value(td, gamma=0.5, pred_next_val=torch.tensor([[4.0], [4.0]]))
        tensor([3., 2.])
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"next_state_value: expected gamma in [0, 1], got {gamma!r}.")
    for key in ((NEXT, REWARD), (NEXT, DONE)):
        if tensordict.get(key, None) is None:
            raise KeyError(f"next_state_value: the batch has no {key!r} entry.")
    steps = tensordict.get("steps_to_next_obs", None)
    exponent = steps.squeeze(-1).to(torch.float) if steps is not None else 1.0
    reward = tensordict.get((NEXT, REWARD)).squeeze(-1).to(torch.float)
    done = tensordict.get((NEXT, DONE)).squeeze(-1)
    if bool(done.all()) or gamma == 0:
        return reward
    if pred_next_val is None:
        if operator is None:
            raise ValueError(
                "next_state_value: expected an operator (the value network) or pred_next_val, "
                "got neither."
            )
        next_td = step_mdp(tensordict)
        in_keys = getattr(operator, "in_keys", None)
        if in_keys is not None:
            next_td = next_td.select(*in_keys, strict=False)
        operator(next_td, **kwargs)
        next_value = next_td.get(next_val_key).squeeze(-1)
    else:
        next_value = pred_next_val.squeeze(-1)
    not_done = (~done.bool()).to(torch.float)
    return reward + (gamma**exponent) * not_done * next_value.to(torch.float)


def default_value_kwargs(value_type: ValueEstimators | str) -> dict[str, Any]:
    """The hyperparameters a loss's ``make_value_estimator(value_type)`` uses by default.

    ``{"gamma": 0.99}`` for TD(0), TD(1) and V-trace; ``{"gamma": 0.99, "lmbda": 0.95}`` for
    TD(lambda), GAE and multi-agent GAE. (TorchRL's dict also has ``differentiable=True``; the
    estimators here default to gradient-free targets, and the dict says what is used.)

    Args:
        value_type: a :class:`ValueEstimators` member or its name (``"GAE"``).

    Returns:
        A new dict.

    Raises:
        ValueError: ``value_type`` names no estimator.

    Examples:
        >>> from rl_objectives import ValueEstimators, default_value_kwargs
        >>> default_value_kwargs(ValueEstimators.TDLambda)
        {'gamma': 0.99, 'lmbda': 0.95}
    """
    member = (
        ValueEstimators.__members__.get(value_type) if isinstance(value_type, str) else value_type
    )
    if not isinstance(member, ValueEstimators):
        raise ValueError(
            f"default_value_kwargs: expected a ValueEstimators member or one of "
            f"{list(ValueEstimators.__members__)}, got {value_type!r}."
        )
    if member in (ValueEstimators.TDLambda, ValueEstimators.GAE, ValueEstimators.MAGAE):
        return {"gamma": DEFAULT_GAMMA, "lmbda": DEFAULT_LMBDA}
    return {"gamma": DEFAULT_GAMMA}
