"""ACTModel: Action Chunking with Transformers (Zhao et al. 2023), a conditional VAE whose
encoder and decoder are transformers and whose output is a chunk of actions."""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["ACTModel"]


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"ACTModel: expected {name} to be an int >= 1, got {value!r}.")
    return value


def _sinusoids(length: int, width: int) -> Tensor:
    """``[length, width]`` fixed position codes: ``sin(p / 10000^(2i / width))`` in the even
    columns, ``cos`` of the same angle in the odd ones (Vaswani et al. 2017)."""
    position = torch.arange(length, dtype=torch.float64).unsqueeze(-1)
    frequency = torch.pow(10000.0, -torch.arange(0, width, 2, dtype=torch.float64) / width)
    codes = torch.zeros(length, width, dtype=torch.float64)
    codes[:, 0::2] = torch.sin(position * frequency)
    codes[:, 1::2] = torch.cos(position * frequency)
    return codes.float()


class ACTModel(nn.Module):
    """The ACT policy: a conditional VAE over chunks of ``chunk_size`` actions.

    The encoder (training only) reads the sequence ``[CLS, a_0, ..., a_{T-1}, observation]``
    (each token projected to ``hidden_dim``, plus fixed sinusoidal position codes) with a
    transformer encoder; the CLS output gives the posterior ``q(z | o, a) = N(mu,
    exp(log_var))`` over a ``latent_dim`` style variable, and ``z = mu + exp(log_var / 2) *
    eps`` (the reparameterisation trick). The decoder attends from ``chunk_size`` learned
    queries (one per step of the chunk, DETR-style) to the two memory tokens
    ``[observation, z]`` with a transformer decoder, and a linear head gives each step's
    action. At inference (no ``action_chunk``) ``z`` is the prior's mean, 0, and ``mu``
    and ``log_var`` are returned as zeros.

    Args:
        obs_dim: the observation's size.
        action_dim: the action's size.
        chunk_size: ``T``, the actions predicted per call.
        hidden_dim: the transformers' width (even, a multiple of ``nheads``). Defaults to 256.
        nheads: attention heads. Defaults to 8.
        num_encoder_layers: the encoder's depth. Defaults to 4.
        num_decoder_layers: the decoder's depth. Defaults to 7.
        latent_dim: the size of ``z``. Defaults to 32.
        dropout: the transformers' dropout. Defaults to 0.1.
        dim_feedforward: the transformers' feed-forward width. Defaults to ``4 * hidden_dim``.

    Shapes:
        ``observation [*B, obs_dim]``, ``action_chunk [*B, chunk_size, action_dim]`` ->
        ``action_pred [*B, chunk_size, action_dim]``, ``mu`` and ``log_var [*B, latent_dim]``.

    Raises:
        ValueError: a size that is not a positive int, ``hidden_dim`` odd or not a multiple
            of ``nheads``, ``dropout`` outside ``[0, 1)``; on a call, an observation or chunk
            of another shape.

    Examples:
        >>> import torch
        >>> model = ACTModel(obs_dim=3, action_dim=2, chunk_size=5, hidden_dim=16, nheads=2)
        >>> action_pred, mu, log_var = model(torch.randn(4, 3), torch.randn(4, 5, 2))
        >>> action_pred.shape, mu.shape
        (torch.Size([4, 5, 2]), torch.Size([4, 32]))
        >>> action_pred, mu, log_var = model(torch.randn(4, 3))  # inference: z = 0
        >>> bool(mu.eq(0).all() and log_var.eq(0).all())
        True
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        chunk_size: int,
        hidden_dim: int = 256,
        nheads: int = 8,
        num_encoder_layers: int = 4,
        num_decoder_layers: int = 7,
        latent_dim: int = 32,
        dropout: float = 0.1,
        dim_feedforward: int | None = None,
    ) -> None:
        super().__init__()
        self.obs_dim = _positive_int(obs_dim, "obs_dim")
        self.action_dim = _positive_int(action_dim, "action_dim")
        self.chunk_size = _positive_int(chunk_size, "chunk_size")
        self.hidden_dim = _positive_int(hidden_dim, "hidden_dim")
        _positive_int(nheads, "nheads")
        _positive_int(num_encoder_layers, "num_encoder_layers")
        _positive_int(num_decoder_layers, "num_decoder_layers")
        self.latent_dim = _positive_int(latent_dim, "latent_dim")
        if hidden_dim % 2 or hidden_dim % nheads:
            raise ValueError(
                f"ACTModel: expected hidden_dim to be even and a multiple of nheads={nheads} "
                f"(sinusoidal codes and attention heads split it), got {hidden_dim}."
            )
        if not isinstance(dropout, int | float) or not 0.0 <= dropout < 1.0:
            raise ValueError(f"ACTModel: expected dropout in [0, 1), got {dropout!r}.")
        feedforward = 4 * hidden_dim if dim_feedforward is None else dim_feedforward
        _positive_int(feedforward, "dim_feedforward")

        self.obs_proj = nn.Linear(obs_dim, hidden_dim)
        # encoder: [CLS, actions, observation] -> posterior over z
        self.cls_embed = nn.Parameter(torch.zeros(hidden_dim))
        self.action_proj = nn.Linear(action_dim, hidden_dim)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(hidden_dim, nheads, feedforward, dropout, batch_first=True),
            num_encoder_layers,
            enable_nested_tensor=False,
        )
        self.register_buffer("encoder_positions", _sinusoids(chunk_size + 2, hidden_dim))
        self.latent_proj = nn.Linear(hidden_dim, 2 * latent_dim)
        # decoder: one learned query per chunk step, attending to [observation, z]
        self.latent_out_proj = nn.Linear(latent_dim, hidden_dim)
        self.memory_positions = nn.Parameter(torch.zeros(2, hidden_dim))
        self.action_queries = nn.Parameter(torch.randn(chunk_size, hidden_dim) * 0.02)
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(hidden_dim, nheads, feedforward, dropout, batch_first=True),
            num_decoder_layers,
        )
        self.action_head = nn.Linear(hidden_dim, action_dim)

    def _check(self, value: Tensor, name: str, tail: tuple[int, ...]) -> None:
        if value.shape[value.dim() - len(tail) :] != tail or value.dim() < len(tail):
            raise ValueError(
                f"ACTModel: expected {name} shaped [*B, {', '.join(map(str, tail))}], got "
                f"{tuple(value.shape)}."
            )

    def encode(self, observation: Tensor, action_chunk: Tensor) -> tuple[Tensor, Tensor]:
        """The posterior ``q(z | o, a)``: ``(mu, log_var)``, each ``[*B, latent_dim]``."""
        self._check(observation, "observation", (self.obs_dim,))
        self._check(action_chunk, "action_chunk", (self.chunk_size, self.action_dim))
        batch = observation.shape[:-1]
        if action_chunk.shape[:-2] != batch:
            raise ValueError(
                f"ACTModel: the observation's batch {tuple(batch)} and the action_chunk's "
                f"{tuple(action_chunk.shape[:-2])} differ."
            )
        obs = self.obs_proj(observation.reshape(-1, self.obs_dim)).unsqueeze(1)
        actions = self.action_proj(action_chunk.reshape(-1, self.chunk_size, self.action_dim))
        cls = self.cls_embed.expand(obs.shape[0], 1, -1)
        tokens = torch.cat([cls, actions, obs], dim=1) + self.encoder_positions
        stats = self.latent_proj(self.encoder(tokens)[:, 0])
        mu, log_var = stats.chunk(2, dim=-1)
        return mu.reshape(*batch, -1), log_var.reshape(*batch, -1)

    def decode(self, observation: Tensor, z: Tensor) -> Tensor:
        """The chunk ``[*B, chunk_size, action_dim]`` for observations and latents ``z``."""
        self._check(observation, "observation", (self.obs_dim,))
        self._check(z, "z", (self.latent_dim,))
        batch = observation.shape[:-1]
        obs = self.obs_proj(observation.reshape(-1, self.obs_dim))
        latent = self.latent_out_proj(z.reshape(-1, self.latent_dim))
        memory = torch.stack([obs, latent], dim=1) + self.memory_positions
        queries = self.action_queries.expand(memory.shape[0], -1, -1)
        actions = self.action_head(self.decoder(queries, memory))
        return actions.reshape(*batch, self.chunk_size, self.action_dim)

    def forward(
        self, observation: Tensor, action_chunk: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Predicts a chunk; with ``action_chunk`` (training) through the posterior's sample.

        Args:
            observation: ``[*B, obs_dim]``.
            action_chunk: ``[*B, chunk_size, action_dim]`` expert actions, or ``None``.

        Returns:
            ``(action_pred, mu, log_var)``; ``mu`` and ``log_var`` are zeros without
            ``action_chunk``.
        """
        if action_chunk is None:
            self._check(observation, "observation", (self.obs_dim,))
            mu = observation.new_zeros(*observation.shape[:-1], self.latent_dim)
            log_var = torch.zeros_like(mu)
            return self.decode(observation, mu), mu, log_var
        mu, log_var = self.encode(observation, action_chunk)
        z = mu + torch.exp(0.5 * log_var) * torch.randn_like(mu)
        return self.decode(observation, z), mu, log_var

    def extra_repr(self) -> str:
        return (
            f"obs_dim={self.obs_dim}, action_dim={self.action_dim}, "
            f"chunk_size={self.chunk_size}, latent_dim={self.latent_dim}"
        )
