"""Categorical (C51) distributional Q-learning: :class:`DistributionalDQNLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import ValueEstimators

__all__ = ["DistributionalDQNLoss"]


def project_distribution(
    probs: torch.Tensor, support: torch.Tensor, reward: torch.Tensor, discount: torch.Tensor
) -> torch.Tensor:
    """Projects the distribution of ``reward + discount * Z`` onto ``support`` (C51).

    Args:
        probs: ``[N, atoms]`` probabilities of ``Z`` on ``support``.
        support: ``[atoms]`` evenly spaced atoms.
        reward: ``[N, 1]``.
        discount: ``[N, 1]`` (``gamma * (1 - terminated)``).

    Returns:
        ``[N, atoms]`` probabilities on ``support``.
    """
    v_min, v_max = support[0], support[-1]
    delta = (v_max - v_min) / (support.numel() - 1)
    tz = (reward + discount * support.unsqueeze(0)).clamp(v_min, v_max)
    b = (tz - v_min) / delta
    low, up = b.floor().long(), b.ceil().long()
    # a point that lands exactly on an atom gives it all its mass
    exact = low == up
    out = torch.zeros_like(probs)
    out.scatter_add_(-1, low, probs * (up.to(probs.dtype) - b + exact.to(probs.dtype)))
    out.scatter_add_(-1, up, probs * (b - low.to(probs.dtype)))
    return out


class DistributionalDQNLoss(C.EstimatorChoice, LossModule):
    """C51 (Bellemare et al., 2017): cross-entropy to the projected Bellman target distribution.

    The network writes ``action_value`` as log-probabilities over the atoms of ``support`` for
    every action, ``[*B, atoms, n_actions]`` (log-softmax over the atom dim). The next action
    is greedy in the target network's mean values; the target ``r + gamma * (1 - terminated) *
    Z'`` is projected onto the support; ``loss = -mean(sum_atoms m * log p(s, a_data))``.
    Only this one-step target is built: ``make_value_estimator`` takes TD(0) alone (its
    ``gamma`` becomes the loss's discount), as TorchRL's.

    Args:
        value_network: a TensorDict module writing ``action_value`` as above.
        gamma: discount factor in ``[0, 1]``.

    Keyword Args:
        support: ``[atoms]`` evenly spaced atoms (e.g. ``torch.linspace(-10, 10, 51)``).
            Defaults to the network's own ``support`` (a ``DistributionalQValueActor``'s), as
            in TorchRL.
        delay_value: bootstrap from a target copy. Defaults to ``True``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Raises:
        ValueError: ``gamma`` outside ``[0, 1]`` or a support with fewer than 2 atoms.
        TypeError: no ``support`` given and the network has none.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives import DistributionalDQNLoss
        >>> class Net(torch.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.linear = torch.nn.Linear(3, 11 * 2)
        ...     def forward(self, obs):
        ...         return self.linear(obs).view(*obs.shape[:-1], 11, 2).log_softmax(-2)
        >>> net = TensorDictModule(Net(), ["observation"], ["action_value"])
        >>> loss = DistributionalDQNLoss(net, 0.99, support=torch.linspace(-5, 5, 11))
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 3), action=torch.tensor([0, 1, 1, 0]),
        ...     next=TensorDict(
        ...         observation=torch.randn(4, 3), reward=torch.ones(4, 1),
        ...         done=torch.zeros(4, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(4, 1, dtype=torch.bool),
        ...     ),
        ...     batch_size=[4],
        ... )
        >>> loss(td)["loss"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        action_value: NestedKey = K.ACTION_VALUE
        action: NestedKey = K.ACTION
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.TD0  # TorchRL's: its one estimator

    def __init__(
        self,
        value_network: torch.nn.Module,
        gamma: float,
        *,
        support: torch.Tensor | None = None,
        delay_value: bool = True,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        if not 0.0 <= float(gamma) <= 1.0:
            raise ValueError(f"{owner}: expected gamma in [0, 1], got {gamma}.")
        if support is None:
            support = getattr(value_network, "support", None)
            if not isinstance(support, torch.Tensor):
                raise TypeError(
                    f"{owner}: expected support= (the atoms' values, e.g. "
                    f"torch.linspace(-10, 10, 51)) or a value_network with a support buffer "
                    f"(a DistributionalQValueActor), got neither."
                )
        if support.dim() != 1 or support.numel() < 2:
            raise ValueError(
                f"{owner}: expected a 1-D support of at least 2 atoms, got shape {tuple(support.shape)}."
            )
        self.convert_to_functional(value_network, "value_network", create_target_params=delay_value)
        self.gamma = float(gamma)
        self.delay_value = delay_value
        self.register_buffer("support", support.detach().clone())
        self.reduction = C.check_reduction(owner, reduction)

    def _make_value_estimator(self, value_type: object, **hyperparams: object) -> object:
        allowed = (ValueEstimators.TD0,)
        estimator = C.build_estimator(self, value_type, dict(hyperparams), None, allowed=allowed)
        self.gamma = float(estimator.gamma)  # the projection below discounts with it
        return estimator

    def _log_probs(self, td: TensorDictBase, *, target: bool) -> torch.Tensor:
        with self.use_network("value_network", target=target) as net:
            return C.read_output(net, td, self.tensor_keys.action_value)

    def _taken(self, log_probs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``[*B, atoms, n]`` and a one-hot or index action -> ``[*B, atoms]``."""
        if action.shape == log_probs.shape[:-2] + log_probs.shape[-1:]:  # one-hot
            index = action.to(torch.long).argmax(-1)
        else:
            index = action.long().reshape(log_probs.shape[:-2])
        index = index.unsqueeze(-1).unsqueeze(-1).expand(*log_probs.shape[:-1], 1)
        return log_probs.gather(-1, index).squeeze(-1)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        keys = self.tensor_keys
        return [
            keys.action,
            *self._network_in_keys("value_network"),
            *self._network_in_keys("value_network", under=K.NEXT),
            C.under_next(keys.reward),
            C.under_next(keys.terminated),
        ]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss``; writes ``td_error`` (the per-sample cross-entropy)."""
        keys = self.tensor_keys
        log_p = self._taken(self._log_probs(tensordict, target=False), tensordict.get(keys.action))
        with torch.no_grad():
            next_td = tensordict.get(K.NEXT)
            next_p = self._log_probs(next_td, target=self.delay_value).exp()
            means = (next_p * self.support.view(-1, 1)).sum(-2)
            next_probs = self._taken(next_p, means.argmax(-1))
            reward = next_td.get(keys.reward).to(log_p.dtype)
            discount = self.gamma * (~next_td.get(keys.terminated)).to(log_p.dtype)
            atoms = self.support.numel()
            target = project_distribution(
                next_probs.reshape(-1, atoms),
                self.support,
                reward.reshape(-1, 1),
                discount.reshape(-1, 1),
            ).reshape(next_probs.shape)
        cross_entropy = -(target * log_p).sum(-1)
        tensordict.set(keys.priority, cross_entropy.detach())
        return TensorDict(loss=C.reduce(cross_entropy, self.reduction))
