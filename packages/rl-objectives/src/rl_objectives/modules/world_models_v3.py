"""DreamerV3's RSSM with discrete latents: :class:`RSSMPriorV3` and :class:`RSSMPosteriorV3`.

Hafner et al., "Mastering Diverse Domains through World Models" (DreamerV3,
https://arxiv.org/abs/2301.04104). The stochastic state is ``num_categoricals`` one-hot
vectors of ``num_classes`` classes each (32 x 32 in the paper), flattened to
``[*B, num_categoricals * num_classes]``:

- probabilities ``p = (1 - unimix) * softmax(logits) + unimix / num_classes`` (the paper mixes
  1% of the uniform distribution into every categorical so that its KL stays finite);
- a one-hot sample ``z`` of each categorical, drawn by inverse CDF from a uniform ``u``
  (class ``k`` is the number of cumulative probabilities below ``u``);
- straight-through gradients: the returned state is ``p + (z - p).detach()``, equal to ``z``
  in value with the gradient of ``p``.

Both networks return the raw logits (``[*B, num_categoricals, num_classes]``), which the KL
terms of ``DreamerV3ModelLoss`` read. Their recurrent core is a ``GRUCell`` with SiLU
projections (TorchRL's ``recurrent_model="gru"``); the block GRU and RMS-normalised layers of
the paper's larger models are in :mod:`rl_objectives.modules.dreamer_v3_nets`
(:class:`~rl_objectives.modules.DreamerV3BlockGRUCell`). :class:`RSSMRolloutV3` (an
:class:`~rl_objectives.modules.RSSMRollout` that zeroes the latents at episode starts) filters a
sequence through them.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.utils import unravel_key
from torch import nn

from rl_objectives.modules.dreamer_v3_nets import DreamerV3BlockGRUCell, _norm_layer
from rl_objectives.modules.world_models import RSSMRollout

__all__ = ["RSSMPriorV3", "RSSMPosteriorV3", "RSSMRolloutV3"]


def _check_unimix(where: str, unimix: float) -> float:
    if not 0.0 <= unimix < 1.0:
        raise ValueError(f"{where}: expected unimix in [0, 1), got {unimix!r}.")
    return float(unimix)


def _check_sizes(where: str, **values: Any) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{where}: expected {name} as a positive int, got {value!r}.")


def _unimix_probs(logits: torch.Tensor, unimix: float) -> torch.Tensor:
    """``(1 - unimix) * softmax(logits, -1) + unimix / num_classes``, any shape."""
    probs = torch.softmax(logits, dim=-1)
    if unimix:
        probs = (1.0 - unimix) * probs + unimix / logits.shape[-1]
    return probs


def _straight_through_sample(
    logits: torch.Tensor, unimix: float, uniform: torch.Tensor | None, where: str
) -> torch.Tensor:
    """A one-hot sample of each categorical of ``logits`` ``[*B, C, K]``, flattened to
    ``[*B, C * K]``, with the gradient of the (unimixed) probabilities."""
    probs = _unimix_probs(logits, unimix)
    if uniform is None:
        uniform = torch.rand(probs.shape[:-1], device=probs.device, dtype=probs.dtype)
    elif uniform.shape != probs.shape[:-1]:
        raise ValueError(
            f"{where}: expected uniform of shape {tuple(probs.shape[:-1])} (one draw per "
            f"categorical), got {tuple(uniform.shape)}."
        )
    index = (uniform.unsqueeze(-1) > probs.cumsum(-1)).sum(-1).clamp_max(probs.shape[-1] - 1)
    one_hot = torch.zeros_like(probs).scatter_(-1, index.unsqueeze(-1), 1.0)
    state = probs + (one_hot - probs).detach()
    return state.flatten(-2)


class RSSMPriorV3(nn.Module):
    """DreamerV3's prior (sequence model and dynamics predictor) over discrete latents.

    ``belief' = GRUCell(SiLU(Linear([state, action])), belief)``, then
    ``prior_logits = Linear(SiLU(Linear(belief')))`` viewed as
    ``[*B, num_categoricals, num_classes]`` and a straight-through one-hot sample ``state'``
    (see the module docstring for ``unimix``). Any number of leading batch dims.

    Args:
        action_spec: the action spec; its last dim is the action size (unless ``action_dim``
            is given; with neither, the first layer is lazy).
        hidden_dim: width of the projections (the GRU's input size). Defaults to 512.
        rnn_hidden_dim: size of the belief (the GRU's state). Defaults to 512.
        num_categoricals: number of categorical variables of the state. Defaults to 32.
        num_classes: classes of each categorical. Defaults to 32.
        action_dim: size of the action; overrides ``action_spec``.
        device: device of the parameters.

    Keyword Args:
        action_shape: the action's shape, instead of ``action_spec`` (not both).
        recurrent_model: ``"gru"`` (above) or ``"block_gru"``: the paper's core,
            ``belief' = DreamerV3BlockGRUCell([state, action / max(1, |action|)], belief)``
            with projections of ``hidden_dim`` (one projection of the state and action
            together, where the reference implementation projects them apart), and prior
            logits from ``prior_num_layers`` ``SiLU(RMSNorm(Linear))`` layers and a linear
            output. Defaults to ``"gru"``.
        num_blocks: blocks of the block GRU. Defaults to 8.
        num_layers: hidden layers of the block GRU. Defaults to 1.
        prior_num_layers: hidden layers of the block GRU's prior head. Defaults to 2.
        norm_eps: the RMS norms' epsilon. Defaults to 1e-4.
        unimix: share of the uniform distribution mixed into the probabilities. Defaults to
            0.0 (TorchRL's default; the paper uses 0.01).

    Raises:
        ValueError: both ``action_spec`` and ``action_shape`` given, ``unimix`` outside
            ``[0, 1)``, a size that is not a positive int, an unknown ``recurrent_model``, or
            ``"block_gru"`` without an action size.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import RSSMPriorV3
        >>> prior = RSSMPriorV3(action_dim=2, hidden_dim=16, rnn_hidden_dim=8,
        ...                     num_categoricals=4, num_classes=3, unimix=0.01)
        >>> logits, state, belief = prior(torch.zeros(5, 12), torch.zeros(5, 8), torch.zeros(5, 2))
        >>> logits.shape, state.shape, belief.shape
        (torch.Size([5, 4, 3]), torch.Size([5, 12]), torch.Size([5, 8]))
        >>> state.view(5, 4, 3).sum(-1).unique().tolist()  # one class per categorical
        [1.0]
    """

    def __init__(
        self,
        action_spec: Any = None,
        hidden_dim: int = 512,
        rnn_hidden_dim: int = 512,
        num_categoricals: int = 32,
        num_classes: int = 32,
        action_dim: int | None = None,
        device: torch.device | str | None = None,
        *,
        action_shape: torch.Size | tuple[int, ...] | None = None,
        recurrent_model: str = "gru",
        num_blocks: int = 8,
        num_layers: int = 1,
        prior_num_layers: int = 2,
        norm_eps: float = 1e-4,
        unimix: float = 0.0,
    ) -> None:
        super().__init__()
        where = type(self).__name__
        _check_sizes(where, hidden_dim=hidden_dim, rnn_hidden_dim=rnn_hidden_dim,
                     num_categoricals=num_categoricals, num_classes=num_classes)  # fmt: skip
        if recurrent_model not in ("gru", "block_gru"):
            raise ValueError(
                f"{where}: expected recurrent_model 'gru' or 'block_gru', got {recurrent_model!r}."
            )
        if action_spec is not None and action_shape is not None:
            raise ValueError(f"{where}: pass action_spec or action_shape, not both.")
        if action_spec is not None:
            action_shape = getattr(action_spec, "shape", None)
        self.action_shape = None if action_shape is None else torch.Size(action_shape)
        if action_dim is None and self.action_shape is not None:
            if len(self.action_shape) == 0:
                raise ValueError(
                    f"{where}: expected an action shape with a feature dim ([..., action_dim]), "
                    f"got {tuple(self.action_shape)}. Pass action_dim= instead."
                )
            action_dim = int(self.action_shape[-1])
        self.unimix = _check_unimix(where, unimix)
        self.num_categoricals = num_categoricals
        self.num_classes = num_classes
        self.rnn_hidden_dim = rnn_hidden_dim
        self.action_dim = action_dim
        self.recurrent_model = recurrent_model
        state_dim = num_categoricals * num_classes
        if recurrent_model == "block_gru":
            if action_dim is None:
                raise ValueError(
                    f"{where}: recurrent_model='block_gru' needs the action size: pass "
                    f"action_dim, action_spec or action_shape."
                )
            _check_sizes(where, prior_num_layers=prior_num_layers)
            self.rnn = DreamerV3BlockGRUCell(
                state_dim + action_dim,
                rnn_hidden_dim,
                projection_size=hidden_dim,
                num_blocks=num_blocks,
                num_layers=num_layers,
                norm_eps=norm_eps,
                device=device,
            )
            head: list[nn.Module] = []
            width = rnn_hidden_dim
            for _ in range(prior_num_layers):
                head.append(_norm_layer(width, hidden_dim, norm_eps, device))
                width = hidden_dim
            self.rnn_to_prior_projector = nn.Sequential(
                *head, nn.Linear(width, state_dim, device=device)
            )
            return
        first = (
            nn.LazyLinear(hidden_dim, device=device)
            if action_dim is None
            else nn.Linear(state_dim + action_dim, hidden_dim, device=device)
        )
        self.action_state_projector = nn.Sequential(first, nn.SiLU())
        self.rnn = nn.GRUCell(hidden_dim, rnn_hidden_dim, device=device)
        self.rnn_to_prior_projector = nn.Sequential(
            nn.Linear(rnn_hidden_dim, hidden_dim, device=device),
            nn.SiLU(),
            nn.Linear(hidden_dim, state_dim, device=device),
        )

    def forward(
        self,
        state: torch.Tensor,
        belief: torch.Tensor,
        action: torch.Tensor,
        *,
        uniform: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns ``(prior_logits, next_state, next_belief)``.

        Args:
            state: ``[*B, num_categoricals * num_classes]``, the previous stochastic state.
            belief: ``[*B, rnn_hidden_dim]``, the previous belief.
            action: ``[*B, action_dim]``, the action taken (cast to the belief's dtype).

        Keyword Args:
            uniform: optional ``[*B, num_categoricals]`` draws in ``[0, 1)`` for the sample.
        """
        next_belief = self.next_belief(state, belief, action)
        logits = self.rnn_to_prior_projector(next_belief).unflatten(
            -1, (self.num_categoricals, self.num_classes)
        )
        next_state = _straight_through_sample(logits, self.unimix, uniform, "RSSMPriorV3")
        return logits, next_state, next_belief

    def next_belief(
        self, state: torch.Tensor, belief: torch.Tensor, action: torch.Tensor
    ) -> torch.Tensor:
        """The recurrent step alone: the next belief ``[*B, rnn_hidden_dim]``, without the
        prior's logits or sample (what acting needs before the posterior)."""
        if not action.is_floating_point():
            action = action.to(belief.dtype)
        if self.recurrent_model == "block_gru":
            action = action / action.detach().abs().clamp_min(1)
            return self.rnn(torch.cat([state, action], dim=-1), belief)
        projected = self.action_state_projector(torch.cat([state, action], dim=-1))
        batch = projected.shape[:-1]
        return self.rnn(
            projected.reshape(-1, projected.shape[-1]), belief.reshape(-1, belief.shape[-1])
        ).reshape(*batch, self.rnn_hidden_dim)


class RSSMPosteriorV3(nn.Module):
    """DreamerV3's posterior (representation model) over discrete latents.

    ``posterior_logits = Linear(SiLU(Linear([belief, obs_embedding])))`` viewed as
    ``[*B, num_categoricals, num_classes]``, and a straight-through one-hot sample ``state``.

    Args:
        hidden_dim: width of the hidden layer. Defaults to 512.
        num_categoricals: number of categorical variables of the state. Defaults to 32.
        num_classes: classes of each categorical. Defaults to 32.
        rnn_hidden_dim: size of the belief; with ``obs_embed_dim`` the first layer is a plain
            ``Linear``, else lazy.
        obs_embed_dim: size of the encoded observation.
        device: device of the parameters.

    Keyword Args:
        unimix: share of the uniform distribution mixed into the probabilities. Defaults to
            0.0 (TorchRL's default; the paper uses 0.01).

    Raises:
        ValueError: ``unimix`` outside ``[0, 1)`` or a size that is not a positive int.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import RSSMPosteriorV3
        >>> post = RSSMPosteriorV3(hidden_dim=16, num_categoricals=4, num_classes=3,
        ...                        rnn_hidden_dim=8, obs_embed_dim=6)
        >>> logits, state = post(torch.zeros(2, 7, 8), torch.zeros(2, 7, 6))
        >>> logits.shape, state.shape
        (torch.Size([2, 7, 4, 3]), torch.Size([2, 7, 12]))
    """

    def __init__(
        self,
        hidden_dim: int = 512,
        num_categoricals: int = 32,
        num_classes: int = 32,
        rnn_hidden_dim: int | None = None,
        obs_embed_dim: int | None = None,
        device: torch.device | str | None = None,
        *,
        unimix: float = 0.0,
    ) -> None:
        super().__init__()
        where = type(self).__name__
        _check_sizes(where, hidden_dim=hidden_dim, num_categoricals=num_categoricals,
                     num_classes=num_classes)  # fmt: skip
        self.unimix = _check_unimix(where, unimix)
        self.num_categoricals = num_categoricals
        self.num_classes = num_classes
        first = (
            nn.Linear(rnn_hidden_dim + obs_embed_dim, hidden_dim, device=device)
            if rnn_hidden_dim is not None and obs_embed_dim is not None
            else nn.LazyLinear(hidden_dim, device=device)
        )
        self.obs_rnn_to_post_projector = nn.Sequential(
            first, nn.SiLU(), nn.Linear(hidden_dim, num_categoricals * num_classes, device=device)
        )

    def forward(
        self,
        belief: torch.Tensor,
        obs_embedding: torch.Tensor,
        *,
        uniform: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns ``(posterior_logits, state)``; ``uniform`` as in :class:`RSSMPriorV3`."""
        logits = self.obs_rnn_to_post_projector(torch.cat([belief, obs_embedding], dim=-1))
        logits = logits.unflatten(-1, (self.num_categoricals, self.num_classes))
        state = _straight_through_sample(logits, self.unimix, uniform, "RSSMPosteriorV3")
        return logits, state


class RSSMRolloutV3(RSSMRollout):
    """:class:`~rl_objectives.modules.RSSMRollout` for DreamerV3's networks, restarting the
    latents at episode starts.

    At each step where the boolean ``reset_key`` entry (``"is_init"``, written by
    ``InitTracker``) is True, the entries the prior reads (``"state"``, ``"belief"`` and
    ``"action"`` with the usual keys) are zeroed before the prior runs, so that a sequence
    sampled across an episode boundary does not carry the previous episode's latents. Steps
    without the entry (or ``reset_key=None``) filter as :class:`RSSMRollout`.

    Args:
        rssm_prior: a TensorDict module around :class:`RSSMPriorV3`.
        rssm_posterior: a TensorDict module around :class:`RSSMPosteriorV3`.
        reset_key: the boolean entry marking an episode's first step, or ``None``. Defaults to
            ``"is_init"``.

    Raises:
        TypeError: a module has no ``in_keys``/``out_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives.modules import RSSMPosteriorV3, RSSMPriorV3, RSSMRolloutV3
        >>> prior = TensorDictModule(
        ...     RSSMPriorV3(action_dim=2, hidden_dim=8, rnn_hidden_dim=8, num_categoricals=4,
        ...                 num_classes=4),
        ...     in_keys=["state", "belief", "action"],
        ...     out_keys=[("next", "prior_logits"), "_", ("next", "belief")])
        >>> post = TensorDictModule(
        ...     RSSMPosteriorV3(hidden_dim=8, num_categoricals=4, num_classes=4,
        ...                     rnn_hidden_dim=8, obs_embed_dim=6),
        ...     in_keys=[("next", "belief"), ("next", "encoded_latents")],
        ...     out_keys=[("next", "posterior_logits"), ("next", "state")])
        >>> td = TensorDict(state=torch.zeros(2, 4, 16), belief=torch.zeros(2, 4, 8),
        ...                 action=torch.randn(2, 4, 2), is_init=torch.zeros(2, 4, 1, dtype=torch.bool),
        ...                 batch_size=[2, 4])
        >>> td["next", "encoded_latents"] = torch.randn(2, 4, 6)
        >>> td["is_init"][:, 2] = True  # a new episode starts at step 2
        >>> out = RSSMRolloutV3(prior, post)(td)
        >>> out.shape, out["belief"][:, 2].abs().sum().item()
        (torch.Size([2, 4]), 0.0)
    """

    def __init__(
        self,
        rssm_prior: nn.Module,
        rssm_posterior: nn.Module,
        reset_key: Any = "is_init",
    ) -> None:
        super().__init__(rssm_prior, rssm_posterior)
        self.reset_key = None if reset_key is None else unravel_key(reset_key)
        if self.reset_key is not None and self.reset_key not in self.in_keys:
            self.in_keys = [*self.in_keys, self.reset_key]

    def _step_input(self, step: TensorDictBase) -> TensorDictBase:
        if self.reset_key is None:
            return step
        reset = step.get(self.reset_key, None)
        if reset is None:
            return step
        # one flag per step of the batch ([*B] or [*B, 1]), broadcast over each entry's features
        reset = reset.to(torch.bool).reshape(step.batch_size)
        for key in self.rssm_prior.in_keys:
            value = step.get(key, None)
            if value is None:
                continue
            mask = reset.reshape(*reset.shape, *([1] * (value.ndim - reset.ndim)))
            step.set(key, torch.where(mask, torch.zeros_like(value), value))
        return step
