"""DreamerV3's whole objective, :class:`DreamerV3Loss`: the world-model, actor and critic losses
on one replayed batch, and the critic's replay term.

Hafner et al., "Mastering Diverse Domains through World Models" (DreamerV3,
https://arxiv.org/abs/2301.04104), section "Critic learning": besides the imagined
trajectories, the critic is trained on the replayed sequences, towards lambda-returns of the
real rewards bootstrapped with its own values of the posterior states, with loss weight 0.3
and the discount ``1 - 1 / 333``. That term reaches the world model through the posterior
states; imagination starts from them detached.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import Tensor

from rl_core.keys import NEXT
from rl_core.objectives import LossModule
from rl_objectives.losses.dreamer import _check_weight, _refuse_non_finite
from rl_objectives.losses.dreamer_v3 import (
    DreamerV3ActorLoss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
)
from rl_objectives.modules.dreamer_v3_utils import symlog, two_hot_cross_entropy

__all__ = ["DreamerV3Loss"]


def _replay_lambda_returns(
    reward: Tensor,
    value: Tensor,
    terminated: Tensor,
    done: Tensor,
    gamma: float,
    lmbda: float,
) -> tuple[Tensor, Tensor]:
    """Lambda-returns along replayed sequences, and the steps they train.

    Step ``t`` of a sequence (``[*B, T, 1]`` each) holds ``value[t]``, the value of the state
    reached by that step, and ``reward[t]``, ``terminated[t]``, ``done[t]`` of the step that
    reached it. With ``c = 1 - terminated``: ``G[T-1] = value[T-1]``;
    ``G[t] = value[t]`` where ``done[t]`` (the next step belongs to another episode), else
    ``G[t] = reward[t+1] + gamma * c[t+1] * ((1 - lmbda) * value[t+1] + lmbda * G[t+1])``.
    The weight of step ``t`` is 1 where ``t < T - 1`` and not ``done[t]``, else 0.

    Returns:
        ``(returns, weights)``, both ``[*B, T, 1]`` in the dtype of ``value``.
    """
    cont = 1.0 - terminated.to(value.dtype)
    end = done.to(torch.bool) | terminated.to(torch.bool)
    steps = value.shape[-2]
    returns = [value[..., steps - 1, :]]
    for t in range(steps - 2, -1, -1):
        bootstrap = (1 - lmbda) * value[..., t + 1, :] + lmbda * returns[-1]
        ret = reward[..., t + 1, :] + gamma * cont[..., t + 1, :] * bootstrap
        returns.append(torch.where(end[..., t, :], value[..., t, :], ret))
    returns = torch.stack(returns[::-1], dim=-2)
    weights = (~end).to(value.dtype)
    weights[..., steps - 1, :] = 0
    return returns, weights


class DreamerV3Loss(LossModule):
    """DreamerV3's objective: its model, actor and value losses, and the replay-value term.

    On a batch of replayed sequences ``[B, T]``:

    1. ``model_loss`` runs the world model; its terms (``loss_model_*``) are returned as they
       are.
    2. Imagination starts from the posterior latents it wrote (``("next", state)`` and
       ``("next", belief)``, the keys of ``actor_loss``), detached and flattened
       (``imagination_starts`` of them drawn at random when set); ``actor_loss`` gives
       ``loss_actor`` (and its diagnostics), ``value_loss`` the critic's ``loss_value`` on the
       imagined trajectory.
    3. With ``replay_value_loss_weight > 0``: ``value_loss``'s value model runs on the
       posterior latents (not detached: this term trains the world model too), and
       ``loss_value_replay = replay_value_loss_weight * sum_t w_t l_t / max(sum_t w_t, 1)``,
       ``l_t`` the value loss's per-step loss (two-hot cross-entropy of the value logits, or
       the symlog squared error) against the lambda-returns ``G_t`` of the batch's rewards
       (``("next", reward)``, ``done`` and ``terminated`` of ``model_loss``'s keys), with the
       discount ``1 - 1 / continuation_horizon``, ``lmbda`` and the detached values
       (``_replay_lambda_returns`` gives ``G`` and the weights ``w``).

    The output also holds ``replay_context``: the posterior latents, detached, ``[B, T]``.
    Sum the entries whose names start with ``loss_`` to train: the actor's gradient does not
    reach the world model or the critic (they are held out in imagination).

    Args:
        model_loss: the world model's loss; built with ``detach_output=False`` when
            ``replay_value_loss_weight > 0``.
        actor_loss: the actor's loss, imagining with the world model's dynamics.
        value_loss: the critic's loss.

    Keyword Args:
        replay_value_loss_weight: weight of the replay-value term; 0 turns it off. Defaults
            to 0.3.
        continuation_horizon: the replay returns' horizon ``H``, discount ``1 - 1 / H``;
            at least 1. Defaults to 333.0.
        lmbda: the replay returns' lambda, in ``[0, 1]``. Defaults to 0.95.
        imagination_starts: how many posterior latents (drawn without replacement) start
            imagination; ``None`` for all of them. Not in TorchRL. Defaults to None.

    Raises:
        TypeError: a component that is not the DreamerV3 loss it stands for.
        ValueError: a weight, horizon, ``lmbda`` or ``imagination_starts`` out of range, a
            ``model_loss`` with ``detach_output=True`` and a replay weight; (when called)
            a batch without a time dim of at least 2 steps for the replay term, or a NaN or
            infinite replay term (naming the source).

    Examples:
        See ``examples/dreamer.py --v3``, which trains with it::

            loss = DreamerV3Loss(model_loss, actor_loss, value_loss, imagination_starts=256)
            losses = loss(batch)  # [B, T] replayed sequences
            sum(v for k, v in losses.items() if k.startswith("loss_")).backward()
    """

    @dataclass
    class _AcceptedKeys:
        """None of its own: the components' keys are read (``model_loss``'s ``reward``,
        ``done`` and ``terminated``, ``actor_loss``'s ``state`` and ``belief``,
        ``value_loss``'s ``value`` and ``value_logits``)."""

    def __init__(
        self,
        model_loss: DreamerV3ModelLoss,
        actor_loss: DreamerV3ActorLoss,
        value_loss: DreamerV3ValueLoss,
        *,
        replay_value_loss_weight: float = 0.3,
        continuation_horizon: float = 333.0,
        lmbda: float = 0.95,
        imagination_starts: int | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        for name, value, cls in (
            ("model_loss", model_loss, DreamerV3ModelLoss),
            ("actor_loss", actor_loss, DreamerV3ActorLoss),
            ("value_loss", value_loss, DreamerV3ValueLoss),
        ):
            if not isinstance(value, cls):
                raise TypeError(
                    f"{owner}: expected {name} as a {cls.__name__}, got {type(value).__name__}."
                )
        _check_weight(owner, "replay_value_loss_weight", replay_value_loss_weight)
        _check_weight(owner, "lmbda", lmbda, at_most=1.0)
        if (
            not isinstance(continuation_horizon, (int, float))
            or isinstance(continuation_horizon, bool)
            or not math.isfinite(continuation_horizon)
            or continuation_horizon < 1
        ):
            raise ValueError(
                f"{owner}: expected continuation_horizon as a finite number >= 1 (the discount "
                f"is 1 - 1 / continuation_horizon), got {continuation_horizon!r}."
            )
        if imagination_starts is not None and (
            not isinstance(imagination_starts, int)
            or isinstance(imagination_starts, bool)
            or imagination_starts < 1
        ):
            raise ValueError(
                f"{owner}: expected imagination_starts as a positive int or None, got "
                f"{imagination_starts!r}."
            )
        if replay_value_loss_weight > 0 and model_loss.detach_output:
            raise ValueError(
                f"{owner}: the replay-value term (replay_value_loss_weight="
                f"{replay_value_loss_weight}) trains the world model through the posterior "
                f"latents, but model_loss detaches its output (detach_output=True). Build the "
                f"model loss with detach_output=False, or pass replay_value_loss_weight=0."
            )
        self.model_loss = model_loss
        self.actor_loss = actor_loss
        self.value_loss = value_loss
        self.replay_value_loss_weight = replay_value_loss_weight
        self.continuation_horizon = float(continuation_horizon)
        self.lmbda = lmbda
        self.imagination_starts = imagination_starts

    @property
    def replay_gamma(self) -> float:
        """The replay returns' discount, ``1 - 1 / continuation_horizon``."""
        return 1.0 - 1.0 / self.continuation_horizon

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[Any]:
        return self.model_loss._in_keys(tensordict)

    def _latents(self, model_out: TensorDictBase) -> TensorDictBase:
        keys = self.actor_loss.tensor_keys
        nxt = model_out.get(NEXT)
        return TensorDict(
            {keys.state: nxt.get(keys.state), keys.belief: nxt.get(keys.belief)},
            batch_size=model_out.batch_size,
        )

    def replay_value_loss(self, tensordict: TensorDictBase, latents: TensorDictBase) -> Tensor:
        """The unweighted replay term: the critic on ``latents`` (the posterior latents of the
        batch, ``[B, T]``) against the lambda-returns of the batch's rewards."""
        owner = type(self).__name__
        if latents.batch_dims < 2 or latents.batch_size[-1] < 2:
            raise ValueError(
                f"{owner}: the replay-value term needs sequences [..., T] with T >= 2, got a "
                f"batch of size {tuple(latents.batch_size)}. Sample sequences, or pass "
                f"replay_value_loss_weight=0."
            )
        mkeys, vkeys = self.model_loss.tensor_keys, self.value_loss.tensor_keys
        out = self.value_loss._value_output(latents)
        value = out.get(vkeys.value)
        reward = tensordict.get((NEXT, mkeys.reward))
        flags = [tensordict.get((NEXT, k), None) for k in (mkeys.terminated, mkeys.done)]
        terminated, done = (
            torch.zeros_like(reward, dtype=torch.bool) if f is None else f.reshape(reward.shape)
            for f in flags
        )
        if value.shape != reward.shape:
            raise ValueError(
                f"{owner}: expected the critic's {vkeys.value!r} on the posterior latents and "
                f"the batch's ('next', {mkeys.reward!r}) of one shape [..., T, 1], got "
                f"{tuple(value.shape)} and {tuple(reward.shape)}."
            )
        returns, weights = _replay_lambda_returns(
            reward, value.detach(), terminated, done, self.replay_gamma, self.lmbda
        )
        if self.value_loss.value_loss == "two_hot":
            logits = out.get(vkeys.value_logits)
            per_step = two_hot_cross_entropy(logits, returns, self.value_loss.value_bins)
            per_step = per_step.unsqueeze(-1)
        else:
            per_step = (symlog(value) - symlog(returns)).pow(2)
        loss = (weights * per_step).sum() / weights.sum().clamp_min(1.0)
        _refuse_non_finite(
            owner,
            {"loss_value_replay": loss},
            [
                (f"the batch's ('next', {mkeys.reward!r})", reward),
                (f"the critic's {vkeys.value!r} on the posterior latents", value),
            ],
        )
        return loss

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        model_losses, model_out = self.model_loss(tensordict)
        latents = self._latents(model_out)
        start = latents.detach().reshape(-1)
        if self.imagination_starts is not None and self.imagination_starts < start.shape[0]:
            index = torch.randperm(start.shape[0], device=start.device)
            start = start[index[: self.imagination_starts]]
        actor_losses, imagined = self.actor_loss(start)
        value_losses, _ = self.value_loss(imagined)
        losses = TensorDict()
        losses.update(model_losses)
        losses.update(actor_losses)
        losses.update(value_losses)
        if self.replay_value_loss_weight > 0:
            replay = self.replay_value_loss(tensordict, latents)
            losses.set("loss_value_replay", self.replay_value_loss_weight * replay)
        losses.set("replay_context", latents.detach())
        return losses
