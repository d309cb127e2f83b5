"""Decision Transformer networks on transformers' GPT-2 blocks: the sequence model and the
deterministic (DT) and Gaussian (online DT) action heads.

transformers is an optional dependency (``pip install "rl-objectives[transformers]"``); it is imported
when a model is built, never when ``rl_objectives`` is imported.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

_INSTALL = 'pip install "rl-objectives[transformers]"'


def _gpt2():
    try:
        from transformers import GPT2Config, GPT2Model
    except ImportError as err:  # pragma: no cover - exercised where transformers is absent
        raise ImportError(f"DecisionTransformer needs transformers: {_INSTALL}") from err
    return GPT2Config, GPT2Model


@dataclass
class DTConfig:
    """The GPT-2 settings of a :class:`DecisionTransformer` (TorchRL's defaults)."""

    n_embd: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_inner: int = 1024
    activation: str = "relu"
    n_positions: int = 1024
    resid_pdrop: float = 0.1
    attn_pdrop: float = 0.1

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}: {getattr(self, f.name)}" for f in dataclasses.fields(self))
        return f"DTConfig({fields})"


def _as_config(config: DTConfig | dict[str, Any] | None, default: DTConfig) -> DTConfig:
    if config is None:
        return default
    if isinstance(config, DTConfig):
        return config
    if isinstance(config, dict):
        names = {f.name for f in dataclasses.fields(DTConfig)}
        unknown = sorted(set(config) - names)
        if unknown:
            raise ValueError(
                f"DecisionTransformer: unknown config keys {unknown}; expected some of "
                f"{sorted(names)}."
            )
        return dataclasses.replace(default, **config)
    raise TypeError(
        f"DecisionTransformer: config must be a DTConfig or a dict, got {type(config).__name__}."
    )


class DecisionTransformer(nn.Module):
    """The Decision Transformer sequence model (Chen et al., 2021; online: Zheng et al., 2022).

    Each time step contributes three tokens, ``(return_to_go, observation, action)``, each
    embedded by its own linear layer; the interleaved ``3 * T`` tokens go through a layer norm
    and causal GPT-2 blocks (with GPT-2's learned positions). The output is the hidden state of
    each observation token, so the prediction at step ``t`` sees returns-to-go and
    observations up to ``t`` and actions up to ``t - 1`` only.

    Args:
        state_dim: observation size.
        action_dim: action size.
        config: a :class:`DTConfig` or a dict of its fields (merged over the defaults
            ``n_embd=256, n_layer=4, n_head=4, n_inner=1024, activation="relu",
            n_positions=1024, resid_pdrop=0.1, attn_pdrop=0.1``).
        device: device of the parameters.

    Raises:
        ImportError: transformers is not installed.
        ValueError: unknown config keys, or inputs whose sizes disagree.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DecisionTransformer
        >>> config = DecisionTransformer.DTConfig(n_embd=16, n_layer=1, n_head=2, n_inner=32)
        >>> model = DecisionTransformer(state_dim=4, action_dim=2, config=config)
        >>> out = model(torch.randn(3, 10, 4), torch.randn(3, 10, 2), torch.randn(3, 10, 1))
        >>> out.shape
        torch.Size([3, 10, 16])
    """

    DTConfig = DTConfig

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        config: DTConfig | dict[str, Any] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        GPT2Config, GPT2Model = _gpt2()
        config = _as_config(config, self.default_config())
        self.config = config
        self.state_dim = state_dim
        self.action_dim = action_dim
        gpt_config = GPT2Config(
            vocab_size=1,  # tokens arrive as embeddings
            bos_token_id=0,
            eos_token_id=0,
            n_embd=config.n_embd,
            n_layer=config.n_layer,
            n_head=config.n_head,
            n_inner=config.n_inner,
            activation_function=config.activation,
            n_positions=config.n_positions,
            resid_pdrop=config.resid_pdrop,
            attn_pdrop=config.attn_pdrop,
            embd_pdrop=config.resid_pdrop,
        )
        self.transformer = GPT2Model(gpt_config).to(device)
        self.embed_return = nn.Linear(1, config.n_embd, device=device)
        self.embed_state = nn.Linear(state_dim, config.n_embd, device=device)
        self.embed_action = nn.Linear(action_dim, config.n_embd, device=device)
        self.embed_ln = nn.LayerNorm(config.n_embd, device=device)

    @classmethod
    def default_config(cls) -> DTConfig:
        """TorchRL's default GPT-2 settings."""
        return DTConfig()

    def forward(
        self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor
    ) -> torch.Tensor:
        """Hidden states of the observation tokens.

        Args:
            observation: ``[*B, T, state_dim]``.
            action: ``[*B, T, action_dim]``.
            return_to_go: ``[*B, T, 1]``.

        Returns:
            ``[*B, T, n_embd]``.
        """
        if (
            observation.shape[-1] != self.state_dim
            or action.shape[-1] != self.action_dim
            or return_to_go.shape[-1] != 1
            or not (observation.shape[:-1] == action.shape[:-1] == return_to_go.shape[:-1])
        ):
            raise ValueError(
                f"DecisionTransformer.forward: expected observation [*B, T, {self.state_dim}], "
                f"action [*B, T, {self.action_dim}] and return_to_go [*B, T, 1], got "
                f"{tuple(observation.shape)}, {tuple(action.shape)} and "
                f"{tuple(return_to_go.shape)}."
            )
        batch, steps = observation.shape[:-2], observation.shape[-2]
        if 3 * steps > self.config.n_positions:
            raise ValueError(
                f"DecisionTransformer.forward: {steps} steps need {3 * steps} positions, more "
                f"than n_positions={self.config.n_positions}. Shorten the context or raise "
                f"n_positions."
            )
        tokens = torch.stack(
            [
                self.embed_return(return_to_go),
                self.embed_state(observation),
                self.embed_action(action),
            ],
            dim=-2,
        )  # [*B, T, 3, E]
        tokens = self.embed_ln(tokens.reshape(-1, 3 * steps, self.config.n_embd))
        hidden = self.transformer(inputs_embeds=tokens).last_hidden_state
        hidden = hidden.reshape(-1, steps, 3, self.config.n_embd)[:, :, 1]
        return hidden.reshape(*batch, steps, self.config.n_embd)


def _actor_default_config() -> DTConfig:
    """TorchRL's settings for both actors: a wider GPT-2 than the bare transformer's."""
    return DTConfig(n_embd=512, n_layer=4, n_head=4, n_inner=2048)


def _head(n_embd: int, action_dim: int, device: torch.device | str | None) -> nn.Linear:
    """An action head as TorchRL initialises it: orthogonal weight, zero bias."""
    layer = nn.Linear(n_embd, action_dim, device=device)
    nn.init.orthogonal_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class DTActor(nn.Module):
    """The deterministic Decision Transformer policy: ``Linear(h_t)`` per step.

    The output is not squashed (as TorchRL's): wrap the actor in a ``TanhDelta`` head (or
    apply ``tanh``) for actions in ``[-1, 1]``.

    Args:
        state_dim: observation size.
        action_dim: action size.
        transformer_config: a :class:`DTConfig` or dict; defaults to
            :meth:`default_config` (``n_embd=512, n_layer=4, n_head=4, n_inner=2048``, the rest
            as :class:`DecisionTransformer`).
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DTActor
        >>> actor = DTActor(4, 2, transformer_config={"n_embd": 16, "n_layer": 1, "n_inner": 32})
        >>> actor(torch.randn(5, 8, 4), torch.randn(5, 8, 2), torch.randn(5, 8, 1)).shape
        torch.Size([5, 8, 2])
    """

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        transformer_config: DTConfig | dict[str, Any] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        config = _as_config(transformer_config, self.default_config())
        self.transformer = DecisionTransformer(state_dim, action_dim, config, device=device)
        self.action_layer = _head(config.n_embd, action_dim, device)

    @classmethod
    def default_config(cls) -> DTConfig:
        """TorchRL's default settings for the DT actor."""
        return _actor_default_config()

    def forward(
        self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor
    ) -> torch.Tensor:
        """Predicted actions ``[*B, T, action_dim]``, unbounded."""
        return self.action_layer(self.transformer(observation, action, return_to_go))


class OnlineDTActor(nn.Module):
    """The online Decision Transformer policy head: a Gaussian per step.

    Returns ``(mu, std)``: ``mu = Linear(h_t)`` (meant for a ``TanhNormal``) and
    ``std = exp(log_std)`` with ``log_std = log_std_min + (log_std_max - log_std_min) *
    (tanh(Linear(h_t)) + 1) / 2``, bounded to ``[exp(-5), exp(2)]``.

    Args:
        state_dim: observation size.
        action_dim: action size.
        transformer_config: as :class:`DTActor`.
        device: device of the parameters.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import OnlineDTActor
        >>> actor = OnlineDTActor(4, 2, transformer_config={"n_embd": 16, "n_layer": 1})
        >>> mu, std = actor(torch.randn(5, 8, 4), torch.randn(5, 8, 2), torch.randn(5, 8, 1))
        >>> mu.shape, std.shape
        (torch.Size([5, 8, 2]), torch.Size([5, 8, 2]))
    """

    log_std_min = -5.0
    log_std_max = 2.0

    def __init__(
        self,
        state_dim: int,
        action_dim: int,
        transformer_config: DTConfig | dict[str, Any] | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        config = _as_config(transformer_config, self.default_config())
        self.transformer = DecisionTransformer(state_dim, action_dim, config, device=device)
        self.action_layer_mean = _head(config.n_embd, action_dim, device)
        self.action_layer_logstd = _head(config.n_embd, action_dim, device)

    @classmethod
    def default_config(cls) -> DTConfig:
        """TorchRL's default settings for the online DT actor."""
        return _actor_default_config()

    def forward(
        self, observation: torch.Tensor, action: torch.Tensor, return_to_go: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mu, std)``, each ``[*B, T, action_dim]``."""
        hidden = self.transformer(observation, action, return_to_go)
        mu = self.action_layer_mean(hidden)
        squashed = torch.tanh(self.action_layer_logstd(hidden))
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (squashed + 1)
        return mu, log_std.exp()


__all__ = ["DTActor", "DecisionTransformer", "OnlineDTActor"]
