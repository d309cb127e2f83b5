"""Value-decomposition Q-learning for cooperative agents: :class:`QMixerLoss`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C
from rl_objectives.utils import ValueEstimators, distance_loss

__all__ = ["QMixerLoss"]


class QMixerLoss(C.BootstrappedTargets, C.DetachedParamsCache, LossModule):
    """QMIX/VDN: a mixer turns the agents' chosen Q-values into a team value trained by TD.

    ``Q_tot(s, a) = mixer(Q_i(o_i, a_i), state)``; the target is ``r + gamma * (1 -
    terminated) * mixer_target(max_a Q_target_i(o'_i, a), state')`` with the team's reward
    and flags (root keys by default). ``loss = mean(d(Q_tot, target))``.

    Args:
        local_value_network: writes the per-agent action values at ``action_value``
            (``("agents", "action_value")``, ``[*B, n_agents, n_actions]``), e.g. a
            ``QValueActor`` over a ``MultiAgentMLP``.
        mixer_network: a TensorDict module reading ``local_value`` (``("agents",
            "chosen_action_value")``, ``[*B, n_agents, 1]``) and the global state, writing
            ``global_value`` (``"chosen_action_value"``, ``[*B, 1]``); e.g.
            ``TensorDictModule(QMixer(...), [("agents", "chosen_action_value"), "state"],
            ["chosen_action_value"])``.

    Keyword Args:
        loss_function: ``"l2"``, ``"l1"`` or ``"smooth_l1"``. Defaults to ``"l2"``.
        delay_value: target copies of both networks. Defaults to ``True``.
        gamma: discount (TD(0) estimator by default). Defaults to 0.99.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_core.modules import QValueActor
        >>> from rl_objectives.modules import MultiAgentMLP
        >>> from rl_objectives import QMixerLoss
        >>> from rl_objectives.mixers import VDNMixer
        >>> local = QValueActor(
        ...     MultiAgentMLP(4, 2, n_agents=3, centralized=False, share_params=True, depth=1, num_cells=8),
        ...     in_keys=[("agents", "observation")], action_space="categorical",
        ...     action_value_key=("agents", "action_value"),
        ... )
        >>> mixer = TensorDictModule(VDNMixer(3), [("agents", "chosen_action_value")], ["chosen_action_value"])
        >>> agents = TensorDict(observation=torch.randn(5, 3, 4), action=torch.randint(2, (5, 3)), batch_size=[5, 3])
        >>> td = TensorDict(
        ...     agents=agents,
        ...     next=TensorDict(
        ...         agents=TensorDict(observation=torch.randn(5, 3, 4), batch_size=[5, 3]),
        ...         reward=torch.ones(5, 1), done=torch.zeros(5, 1, dtype=torch.bool),
        ...         terminated=torch.zeros(5, 1, dtype=torch.bool), batch_size=[5],
        ...     ),
        ...     batch_size=[5],
        ... )
        >>> QMixerLoss(local, mixer)(td)["loss"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        advantage: NestedKey = K.ADVANTAGE
        value_target: NestedKey = K.VALUE_TARGET
        local_value: NestedKey = (K.AGENTS, K.CHOSEN_ACTION_VALUE)
        global_value: NestedKey = K.CHOSEN_ACTION_VALUE
        action_value: NestedKey = (K.AGENTS, K.ACTION_VALUE)
        action: NestedKey = (K.AGENTS, K.ACTION)
        priority: NestedKey = "td_error"
        reward: NestedKey = K.REWARD
        done: NestedKey = K.DONE
        terminated: NestedKey = K.TERMINATED

    default_value_estimator = ValueEstimators.TD0

    def __init__(
        self,
        local_value_network: torch.nn.Module,
        mixer_network: torch.nn.Module,
        *,
        loss_function: str = "l2",
        delay_value: bool = True,
        gamma: float | None = None,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        self.convert_to_functional(
            local_value_network, "local_value_network", create_target_params=delay_value
        )
        self.convert_to_functional(mixer_network, "mixer_network", create_target_params=delay_value)
        self.delay_value = delay_value
        self.loss_function = C.check_loss_function(owner, loss_function)
        self.gamma = gamma
        self.reduction = C.check_reduction(owner, reduction)
        self.make_value_estimator(**({} if gamma is None else {"gamma": gamma}))

    def _global_value(
        self, td: TensorDictBase, local: torch.Tensor, *, target: bool
    ) -> torch.Tensor:
        mix_td = td.copy().set(self.tensor_keys.local_value, local)
        with self.use_network("mixer_network", target=target) as net:
            return C.read_output(net, mix_td, self.tensor_keys.global_value)

    def _local_values(self, td: TensorDictBase, *, target: bool) -> torch.Tensor:
        with self.use_network("local_value_network", target=target) as net:
            return net(td.copy()).get(self.tensor_keys.action_value)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        local = self.tensor_keys.local_value
        local = local if isinstance(local, str) else tuple(local)
        mixer = [k for k in self._network_in_keys("mixer_network") if k != local]
        networks = ("local_value_network",)
        out = C.bootstrap_in_keys(self, tensordict, root=networks, following=networks)
        return [*out, *mixer, *[C.under_next(k) for k in mixer]]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss``; writes ``td_error`` (``[*B]``) into ``tensordict``."""
        keys = self.tensor_keys
        action_value = self._local_values(tensordict, target=False)
        try:
            chosen = C.gather_action_value(action_value, tensordict.get(keys.action))
        except ValueError as err:
            raise ValueError(f"QMixerLoss: {err}") from None
        pred = self._global_value(tensordict, chosen, target=False)
        with torch.no_grad():
            next_td = tensordict.get(K.NEXT)
            next_local = self._local_values(next_td, target=self.delay_value)
            next_local = next_local.max(-1, keepdim=True).values
            next_value = self._global_value(next_td, next_local, target=self.delay_value)
            target = C.bootstrap_target(self, tensordict, next_value)
        error = distance_loss(pred, target, self.loss_function)
        with torch.no_grad():
            td_error = (pred - target).abs()
            while td_error.dim() > tensordict.batch_dims:
                td_error = td_error.mean(-1)
            tensordict.set(keys.priority, td_error)
        return TensorDict(loss=C.reduce(error, self.reduction))
