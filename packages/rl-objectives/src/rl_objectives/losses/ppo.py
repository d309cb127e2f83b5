"""The PPO family's base loss: :class:`PPOLoss` (unclipped importance-weighted objective)."""

from __future__ import annotations

from rl_objectives.losses._policy_gradient import _PolicyGradientLoss

__all__ = ["PPOLoss"]


class PPOLoss(_PolicyGradientLoss):
    """PPO without clipping: ``loss_objective = -mean(exp(log_pi - log_pi_old) * A)``.

    Also the common machinery of :class:`~rl_objectives.ClipPPOLoss` and
    :class:`~rl_objectives.KLPENPPOLoss`: the advantage (computed with the value estimator,
    GAE by default, when the data has none), its optional normalisation, the entropy bonus
    and the critic loss.

    Args:
        actor_network: a probabilistic actor (``get_dist``); it must have written the
            behaviour log-probabilities at ``sample_log_prob`` during collection.
        critic_network: a value module writing ``"state_value"``, or ``None`` when the data
            carries the advantage (then no critic loss).

    Keyword Args:
        entropy_bonus: add ``loss_entropy = -entropy_coeff * entropy``. Defaults to ``True``.
        samples_mc_entropy: samples of the Monte-Carlo entropy estimate for distributions
            without an analytic entropy. Defaults to 1.
        entropy_coeff: weight of the entropy bonus; ``None`` means the default. Defaults to
            0.01.
        critic_coeff: weight of the critic loss; ``None`` means the default. Defaults to 1.0.
        loss_critic_type: ``"l1"``, ``"l2"`` or ``"smooth_l1"``. Defaults to ``"smooth_l1"``.
        normalize_advantage: standardise the advantage over the batch. Defaults to ``False``.
        gamma: discount of the default value estimator. Defaults to 0.99.
        clip_value: clip the new value to ``old ± clip_value`` in the critic loss and take the
            worse of the two errors (reads the old value at ``value``). Defaults to ``None``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``. Defaults to ``"mean"``.
        separate_losses: parameters the critic shares with the actor (a common trunk) are
            trained by the policy terms only: the critic loss sees them detached. Defaults
            to ``False`` (both losses train them).
        functional: ``False`` keeps the actor and critic modules themselves (as submodules
            running with their own parameters, e.g. DDP-wrapped) instead of structure-only
            copies fed the loss's parameters. Defaults to ``True``.
        device: where the loss's own tensors live (``KLPENPPOLoss``'s ``beta``); the
            networks are not moved. Defaults to the actor's device.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import NormalParamExtractor, TensorDictModule
        >>> from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
        >>> from rl_objectives import PPOLoss
        >>> net = TensorDictModule(
        ...     torch.nn.Sequential(MLP(3, 4, depth=1, num_cells=8), NormalParamExtractor()),
        ...     ["observation"], ["loc", "scale"],
        ... )
        >>> actor = ProbabilisticActor(net, ["loc", "scale"], distribution_class=TanhNormal)
        >>> critic = ValueOperator(MLP(3, 1, depth=1, num_cells=8), ["observation"])
        >>> loss = PPOLoss(actor, critic)
        >>> td = TensorDict(
        ...     observation=torch.randn(4, 3), action=torch.rand(4, 2) * 1.8 - 0.9,
        ...     action_log_prob=torch.zeros(4), advantage=torch.randn(4, 1),
        ...     value_target=torch.randn(4, 1), batch_size=[4],
        ... )
        >>> out = loss(td)
        >>> sorted(out.keys())
        ['entropy', 'kl_approx', 'loss_critic', 'loss_entropy', 'loss_objective']
    """
