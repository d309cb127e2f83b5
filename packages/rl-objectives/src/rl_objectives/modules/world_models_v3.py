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
the paper's larger models are not built here. :class:`~rl_objectives.modules.RSSMRollout` filters a
sequence through them as through the V1 networks.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["RSSMPriorV3", "RSSMPosteriorV3"]


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
        unimix: share of the uniform distribution mixed into the probabilities. Defaults to
            0.0 (TorchRL's default; the paper uses 0.01).

    Raises:
        ValueError: both ``action_spec`` and ``action_shape`` given, ``unimix`` outside
            ``[0, 1)``, or a size that is not a positive int.

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
        unimix: float = 0.0,
    ) -> None:
        super().__init__()
        where = type(self).__name__
        _check_sizes(where, hidden_dim=hidden_dim, rnn_hidden_dim=rnn_hidden_dim,
                     num_categoricals=num_categoricals, num_classes=num_classes)  # fmt: skip
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
        state_dim = num_categoricals * num_classes
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
        if not action.is_floating_point():
            action = action.to(belief.dtype)
        projected = self.action_state_projector(torch.cat([state, action], dim=-1))
        batch = projected.shape[:-1]
        next_belief = self.rnn(
            projected.reshape(-1, projected.shape[-1]), belief.reshape(-1, belief.shape[-1])
        ).reshape(*batch, self.rnn_hidden_dim)
        logits = self.rnn_to_prior_projector(next_belief).unflatten(
            -1, (self.num_categoricals, self.num_classes)
        )
        next_state = _straight_through_sample(logits, self.unimix, uniform, "RSSMPriorV3")
        return logits, next_state, next_belief


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
