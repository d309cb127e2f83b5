"""A general TensorDict world model: :class:`WorldModel` (encoder, dynamics and heads)."""

from __future__ import annotations

from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase, TensorDictSequential
from torch import nn

__all__ = ["WorldModel"]


class WorldModel(TensorDictModuleBase):
    """An encoder, a latent dynamics model, a reward head and optional done head and decoder,
    each a TensorDict module, composed into one prediction module.

    ``forward`` runs encoder, dynamics, reward head, then the done head and the decoder when
    given; :meth:`encode`, :meth:`step` (everything but the encoder: one imagined step from
    the latent already in the TensorDict) and :meth:`decode` run the parts. The keys are the
    modules' own; nothing about the latent is assumed. Rollouts belong to an env around the
    model (rl-envs' model-based envs), not to this module.

    Args:
        encoder: observation -> latent (e.g. ``["observation"] -> ["latent"]``).
        dynamics: latent and action -> next latent (e.g. ``-> [("next", "latent")]``).
        reward_head: next latent -> reward (e.g. ``-> [("next", "reward")]``).

    Keyword Args:
        done_head: next latent -> done flag. Defaults to None.
        decoder: latent -> reconstructed observation. Defaults to None.

    Raises:
        TypeError: a part is not a TensorDict module (no ``in_keys``/``out_keys``).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives.modules import WorldModel
        >>> encoder = TensorDictModule(torch.nn.Linear(8, 4), ["observation"], ["latent"])
        >>> dynamics = TensorDictModule(
        ...     lambda latent, action: latent + action.sum(-1, keepdim=True),
        ...     ["latent", "action"], [("next", "latent")])
        >>> reward = TensorDictModule(torch.nn.Linear(4, 1), [("next", "latent")], [("next", "reward")])
        >>> model = WorldModel(encoder, dynamics, reward)
        >>> td = TensorDict(observation=torch.randn(2, 8), action=torch.randn(2, 2), batch_size=[2])
        >>> model(td)["next", "reward"].shape
        torch.Size([2, 1])
    """

    def __init__(
        self,
        encoder: nn.Module,
        dynamics: nn.Module,
        reward_head: nn.Module,
        *,
        done_head: nn.Module | None = None,
        decoder: nn.Module | None = None,
    ) -> None:
        super().__init__()
        parts = {"encoder": encoder, "dynamics": dynamics, "reward_head": reward_head}
        parts.update({k: v for k, v in (("done_head", done_head), ("decoder", decoder)) if v})
        for name, module in parts.items():
            if not hasattr(module, "in_keys") or not hasattr(module, "out_keys"):
                raise TypeError(
                    f"WorldModel: expected {name} as a TensorDict module (with in_keys and "
                    f"out_keys, e.g. TensorDictModule(net, in_keys=..., out_keys=...)), got "
                    f"{type(module).__name__}."
                )
        self.encoder = encoder
        self.dynamics = dynamics
        self.reward_head = reward_head
        self.done_head = done_head
        self.decoder = decoder
        heads = [m for m in (done_head, decoder) if m is not None]
        self._step_seq = TensorDictSequential(dynamics, reward_head, *heads)
        self._full_seq = TensorDictSequential(encoder, dynamics, reward_head, *heads)
        self.in_keys = self._full_seq.in_keys
        self.out_keys = self._full_seq.out_keys

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Encoder, dynamics, reward head, then the done head and decoder when given."""
        return self._full_seq(tensordict)

    def encode(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs the encoder."""
        return self.encoder(tensordict)

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        """One imagined step from the latent in ``tensordict``: dynamics and heads."""
        return self._step_seq(tensordict)

    def decode(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Runs the decoder.

        Raises:
            RuntimeError: the model has no decoder.
        """
        if self.decoder is None:
            raise RuntimeError(
                "WorldModel.decode: this world model has no decoder; build it with "
                "WorldModel(..., decoder=TensorDictModule(...))."
            )
        return self.decoder(tensordict)

    @property
    def step_module(self) -> TensorDictSequential:
        """The dynamics and heads as one TensorDict module (what a model-based env steps)."""
        return self._step_seq
