"""Dreamer's recurrent state-space model (RSSM): prior, posterior, rollout, world-model wrapper.

The RSSM of Hafner et al. ("Learning Latent Dynamics for Planning from Pixels",
https://arxiv.org/abs/1811.04551; "Dream to Control", https://arxiv.org/abs/1912.01603) keeps a
deterministic *belief* ``h`` (a GRU state) and a stochastic *state* ``s`` (a diagonal Gaussian):

- prior (imagination): ``h' = GRU(h, ELU(W [s, a]))`` and ``s' ~ N(mu(h'), sigma(h'))``;
- posterior (filtering): ``s' ~ N(mu(h', e'), sigma(h', e'))`` with ``e'`` the encoded next
  observation.

Scales are ``softplus(x)`` clamped below at ``scale_lb`` (TorchRL's ``NormalParamExtractor``
with ``scale_mapping="softplus"``). Sampling is reparameterised: ``s' = mu + sigma * noise``,
``noise ~ N(0, I)`` unless given.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase, TensorDictSequential
from tensordict.utils import unravel_key
from torch import nn
from torch.nn import functional as F

from rl_core.keys import key_path

__all__ = ["RSSMPrior", "RSSMPosterior", "RSSMRollout", "WorldModelWrapper"]


def _normal_params(x: torch.Tensor, scale_lb: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Splits ``x`` in two along the last dim: ``(loc, softplus(raw).clamp_min(scale_lb))``."""
    loc, raw = x.chunk(2, -1)
    return loc, F.softplus(raw).clamp_min(scale_lb)


def _sample(mean: torch.Tensor, std: torch.Tensor, noise: torch.Tensor | None, where: str):
    if noise is None:
        noise = torch.randn_like(std)
    elif noise.shape != std.shape:
        raise ValueError(
            f"{where}: expected noise of shape {tuple(std.shape)} (the state's), got "
            f"{tuple(noise.shape)}."
        )
    return mean + noise * std


def _positive(where: str, **values: Any) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{where}: expected {name} as a positive int, got {value!r}.")


class RSSMPrior(nn.Module):
    """The RSSM's prior (transition) network: the next belief and a prior over the next state.

    ``belief' = GRUCell(ELU(Linear([state, action])), belief)``; an MLP of ``belief'``
    (``Linear -> ELU -> Linear``) gives ``prior_mean`` and ``prior_std`` (``softplus``
    clamped at ``scale_lb``), and ``state' = prior_mean + noise * prior_std``. Any number of
    leading batch dims.

    Args:
        action_spec: the action spec; its last dim is the action size (unless ``action_dim``
            is given; with neither, the first layer is lazy).
        hidden_dim: width of the projections (the GRU's input size). Defaults to 200.
        rnn_hidden_dim: size of the belief (the GRU's state). Defaults to 200.
        state_dim: size of the stochastic state. Defaults to 30.
        scale_lb: lower bound of the prior's scale. Defaults to 0.1.
        action_dim: size of the action; overrides ``action_spec``.
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import RSSMPrior
        >>> from rl_core.specs import Bounded
        >>> prior = RSSMPrior(Bounded(-1.0, 1.0, shape=(2,)), hidden_dim=8, rnn_hidden_dim=6,
        ...                   state_dim=4)
        >>> mean, std, state, belief = prior(torch.zeros(5, 4), torch.zeros(5, 6), torch.zeros(5, 2))
        >>> state.shape, belief.shape, bool((std >= 0.1).all())
        (torch.Size([5, 4]), torch.Size([5, 6]), True)
    """

    def __init__(
        self,
        action_spec: Any = None,
        hidden_dim: int = 200,
        rnn_hidden_dim: int = 200,
        state_dim: int = 30,
        scale_lb: float = 0.1,
        action_dim: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        _positive("RSSMPrior", hidden_dim=hidden_dim, rnn_hidden_dim=rnn_hidden_dim,
                  state_dim=state_dim)  # fmt: skip
        if action_dim is None and action_spec is not None:
            shape = getattr(action_spec, "shape", None)
            if shape is None or len(shape) == 0:
                raise ValueError(
                    f"RSSMPrior: expected an action spec with a feature dim (shape [..., "
                    f"action_dim]), got {action_spec!r}. Pass action_dim= instead."
                )
            action_dim = int(shape[-1])
        self.state_dim = state_dim
        self.rnn_hidden_dim = rnn_hidden_dim
        self.action_dim = action_dim
        self.scale_lb = scale_lb
        first = (
            nn.LazyLinear(hidden_dim, device=device)
            if action_dim is None
            else nn.Linear(state_dim + action_dim, hidden_dim, device=device)
        )
        self.action_state_projector = nn.Sequential(first, nn.ELU())
        self.rnn = nn.GRUCell(hidden_dim, rnn_hidden_dim, device=device)
        self.rnn_to_prior_projector = nn.Sequential(
            nn.Linear(rnn_hidden_dim, hidden_dim, device=device),
            nn.ELU(),
            nn.Linear(hidden_dim, 2 * state_dim, device=device),
        )

    def forward(
        self,
        state: torch.Tensor,
        belief: torch.Tensor,
        action: torch.Tensor,
        noise: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns ``(prior_mean, prior_std, next_state, next_belief)``.

        Args:
            state: ``[*B, state_dim]``, the previous stochastic state.
            belief: ``[*B, rnn_hidden_dim]``, the previous belief.
            action: ``[*B, action_dim]``, the action taken.
            noise: optional ``[*B, state_dim]`` standard-normal draw for the sample.
        """
        projected = self.action_state_projector(torch.cat([state, action], dim=-1))
        batch = projected.shape[:-1]
        next_belief = self.rnn(
            projected.reshape(-1, projected.shape[-1]), belief.reshape(-1, belief.shape[-1])
        ).reshape(*batch, self.rnn_hidden_dim)
        mean, std = _normal_params(self.rnn_to_prior_projector(next_belief), self.scale_lb)
        return mean, std, _sample(mean, std, noise, "RSSMPrior"), next_belief


class RSSMPosterior(nn.Module):
    """The RSSM's posterior (representation) network: a state given the belief and the
    encoded observation.

    ``[belief, obs_embedding] -> Linear -> ELU -> Linear`` gives ``posterior_mean`` and
    ``posterior_std`` (``softplus`` clamped at ``scale_lb``); ``state = mean + noise * std``.

    Args:
        hidden_dim: width of the hidden layer. Defaults to 200.
        state_dim: size of the stochastic state. Defaults to 30.
        scale_lb: lower bound of the posterior's scale. Defaults to 0.1.
        rnn_hidden_dim: size of the belief; with ``obs_embed_dim`` the first layer is a plain
            ``Linear``, else lazy.
        obs_embed_dim: size of the encoded observation.
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import RSSMPosterior
        >>> post = RSSMPosterior(hidden_dim=8, state_dim=4, rnn_hidden_dim=6, obs_embed_dim=3)
        >>> mean, std, state = post(torch.zeros(2, 7, 6), torch.zeros(2, 7, 3))
        >>> state.shape
        torch.Size([2, 7, 4])
    """

    def __init__(
        self,
        hidden_dim: int = 200,
        state_dim: int = 30,
        scale_lb: float = 0.1,
        rnn_hidden_dim: int | None = None,
        obs_embed_dim: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        _positive("RSSMPosterior", hidden_dim=hidden_dim, state_dim=state_dim)
        self.state_dim = state_dim
        self.scale_lb = scale_lb
        first = (
            nn.Linear(rnn_hidden_dim + obs_embed_dim, hidden_dim, device=device)
            if rnn_hidden_dim is not None and obs_embed_dim is not None
            else nn.LazyLinear(hidden_dim, device=device)
        )
        self.obs_rnn_to_post_projector = nn.Sequential(
            first, nn.ELU(), nn.Linear(hidden_dim, 2 * state_dim, device=device)
        )

    def forward(
        self,
        belief: torch.Tensor,
        obs_embedding: torch.Tensor,
        noise: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Returns ``(posterior_mean, posterior_std, state)``."""
        mean, std = _normal_params(
            self.obs_rnn_to_post_projector(torch.cat([belief, obs_embedding], dim=-1)),
            self.scale_lb,
        )
        return mean, std, _sample(mean, std, noise, "RSSMPosterior")


def _key_tuple(key: Any) -> tuple[str, ...]:
    return key_path(unravel_key(key))


class RSSMRollout(TensorDictModuleBase):
    """Filters a sequence through the RSSM: prior then posterior at every step.

    Reads a TensorDict of batch ``[*B, T]`` holding the first step's latents (``"state"``,
    ``"belief"``), the actions and the encoded next observations (the keys are those of
    ``rssm_prior`` and ``rssm_posterior``, usually ``["state", "belief", "action"]`` and
    ``[("next", "belief"), ("next", "encoded_latents")]``). At step ``t`` the prior runs on the
    root latents and the action, the posterior on the prior's next belief and the encoded next
    observation; the posterior's ``("next", ...)`` latents then become the root latents of step
    ``t + 1`` (the values stored there are replaced). Returns the ``[*B, T]`` stack of the steps.

    Args:
        rssm_prior: a TensorDict module around :class:`RSSMPrior`, writing (under ``"next"``)
            the prior's parameters and the next belief.
        rssm_posterior: a TensorDict module around :class:`RSSMPosterior`, writing (under
            ``"next"``) the posterior's parameters and the next state.

    Raises:
        TypeError: a module has no ``in_keys``/``out_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives.modules import RSSMPosterior, RSSMPrior, RSSMRollout
        >>> prior = TensorDictModule(
        ...     RSSMPrior(action_dim=1, hidden_dim=8, rnn_hidden_dim=6, state_dim=4),
        ...     in_keys=["state", "belief", "action"],
        ...     out_keys=[("next", "prior_mean"), ("next", "prior_std"), "_", ("next", "belief")])
        >>> post = TensorDictModule(
        ...     RSSMPosterior(hidden_dim=8, state_dim=4, rnn_hidden_dim=6, obs_embed_dim=3),
        ...     in_keys=[("next", "belief"), ("next", "encoded_latents")],
        ...     out_keys=[("next", "posterior_mean"), ("next", "posterior_std"), ("next", "state")])
        >>> td = TensorDict(state=torch.zeros(2, 5, 4), belief=torch.zeros(2, 5, 6),
        ...                 action=torch.randn(2, 5, 1), batch_size=[2, 5])
        >>> td["next", "encoded_latents"] = torch.randn(2, 5, 3)
        >>> out = RSSMRollout(prior, post)(td)
        >>> out["next", "state"].shape, bool((out["belief"][:, 1] == out["next", "belief"][:, 0]).all())
        (torch.Size([2, 5, 4]), True)
    """

    def __init__(self, rssm_prior: nn.Module, rssm_posterior: nn.Module) -> None:
        super().__init__()
        for name, module in (("rssm_prior", rssm_prior), ("rssm_posterior", rssm_posterior)):
            if not hasattr(module, "in_keys") or not hasattr(module, "out_keys"):
                raise TypeError(
                    f"RSSMRollout: expected {name} as a TensorDict module (with in_keys and "
                    f"out_keys, e.g. TensorDictModule(RSSMPrior(...), in_keys=..., "
                    f"out_keys=...)), got {type(module).__name__}."
                )
        self.rssm_prior = rssm_prior
        self.rssm_posterior = rssm_posterior
        self.in_keys = list(
            dict.fromkeys(unravel_key(k) for k in (*rssm_prior.in_keys, *rssm_posterior.in_keys))
        )
        self.out_keys = list(
            dict.fromkeys(unravel_key(k) for k in (*rssm_prior.out_keys, *rssm_posterior.out_keys))
        )
        prior_in = {_key_tuple(k) for k in rssm_prior.in_keys}
        # ("next", *k) written by a module, with k read by the prior: carried to the next step
        self._carry = [
            (unravel_key(k), unravel_key(_key_tuple(k)[1:]))
            for k in self.out_keys
            if _key_tuple(k)[0] == "next" and _key_tuple(k)[1:] in prior_in
        ]

    def _step_input(self, step: TensorDictBase) -> TensorDictBase:
        """The TensorDict the prior reads at a step (a subclass may reset latents here)."""
        return step

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns the ``[*B, T]`` TensorDict of the filtered steps."""
        if tensordict.batch_dims < 1:
            raise ValueError(
                f"RSSMRollout: expected a TensorDict with a time dim (batch [*B, T]), got "
                f"batch size {tuple(tensordict.batch_size)}."
            )
        steps = tensordict.exclude(*self.out_keys).unbind(-1)
        outputs = []
        step = steps[0]
        for t in range(len(steps)):
            step = self.rssm_posterior(self.rssm_prior(self._step_input(step)))
            outputs.append(step)
            if t + 1 < len(steps):
                following = steps[t + 1].copy()
                for src, dst in self._carry:
                    following.set(dst, step.get(src))
                step = following
        return torch.stack(outputs, dim=tensordict.batch_dims - 1)


class WorldModelWrapper(TensorDictSequential):
    """A world model: a transition model then a reward model, run in sequence on a TensorDict.

    ``get_transition_model_operator()`` and ``get_reward_operator()`` return the two parts
    (``DreamerEnv`` runs them on imagined latents; ``DreamerModelLoss`` trains the whole).

    Args:
        transition_model: a TensorDict module (the encoder, :class:`RSSMRollout` and the
            decoder for training; the prior alone for imagination).
        reward_model: a TensorDict module writing the reward.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives.modules import WorldModelWrapper
        >>> model = WorldModelWrapper(
        ...     TensorDictModule(torch.nn.Linear(2, 2), ["observation"], ["latent"]),
        ...     TensorDictModule(torch.nn.Linear(2, 1), ["latent"], ["reward"]))
        >>> model(TensorDict(observation=torch.zeros(3, 2), batch_size=[3]))["reward"].shape
        torch.Size([3, 1])
        >>> model.get_reward_operator().out_keys
        ['reward']
    """

    def __init__(self, transition_model: nn.Module, reward_model: nn.Module) -> None:
        super().__init__(transition_model, reward_model)

    def get_transition_model_operator(self) -> nn.Module:
        """The transition model (the first module)."""
        return self.module[0]

    def get_reward_operator(self) -> nn.Module:
        """The reward model (the second module)."""
        return self.module[1]
