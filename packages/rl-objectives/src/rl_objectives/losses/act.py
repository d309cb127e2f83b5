"""ACT's loss (Zhao et al. 2023): L1 reconstruction of the action chunk plus beta times the
KL divergence of the CVAE posterior from the standard normal prior."""

from __future__ import annotations

from dataclasses import dataclass

from tensordict import TensorDict, TensorDictBase
from torch import Tensor, nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C

__all__ = ["ACTLoss", "kl_to_standard_normal"]


def kl_to_standard_normal(mu: Tensor, log_var: Tensor) -> Tensor:
    """``KL(N(mu, diag(exp(log_var))) || N(0, I))``, summed over the last (latent) dim.

    Per dim: ``(exp(log_var) + mu^2 - 1 - log_var) / 2``.

    Args:
        mu: ``[*B, latent_dim]``.
        log_var: ``[*B, latent_dim]``.

    Returns:
        ``[*B]``.

    Examples:
        >>> import torch
        >>> kl_to_standard_normal(torch.zeros(2, 3), torch.zeros(2, 3)).tolist()
        [0.0, 0.0]
        >>> round(kl_to_standard_normal(torch.ones(1), torch.zeros(1)).item(), 3)
        0.5
    """
    return 0.5 * (log_var.exp() + mu.pow(2) - 1.0 - log_var).sum(-1)


class ACTLoss(LossModule):
    r"""Action Chunking with Transformers' training loss (Zhao et al. 2023).

    The actor (an :class:`~rl_objectives.modules.ACTModel` in a ``TensorDictModule``) reads
    ``"observation"`` and ``"action_chunk"`` and writes ``"action_pred"``, ``"mu"`` and
    ``"log_var"``; the loss feeds it the batch's observation and expert chunk (by default
    ``("vla_action", "chunk")``, as :class:`~rl_envs.transforms.ActionChunkTransform`
    writes it) and returns

    - ``loss_act = loss_reconstruction + kl_weight * loss_kl`` (to minimise),
    - ``loss_reconstruction``: ``|action_pred - chunk|`` averaged over the chunk's steps and
      action dims, then reduced over the batch (detached),
    - ``loss_kl``: :func:`kl_to_standard_normal` of ``(mu, log_var)``, reduced over the batch
      (detached).

    Args:
        actor_network: the ACT policy.

    Keyword Args:
        kl_weight: ``beta``, the KL term's weight (>= 0). Defaults to 10.0 (the paper's).
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` over the batch. Defaults to ``"mean"``.

    Raises:
        TypeError: ``kl_weight`` is not a number.
        ValueError: ``kl_weight`` < 0, an unknown ``reduction``; on a call, a predicted chunk
            shaped unlike the expert chunk.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> from rl_objectives.modules import ACTModel
        >>> model = ACTModel(obs_dim=3, action_dim=2, chunk_size=4, hidden_dim=16, nheads=2)
        >>> actor = TensorDictModule(
        ...     model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"]
        ... )
        >>> td = TensorDict(observation=torch.randn(8, 3), batch_size=[8])
        >>> td["vla_action", "chunk"] = torch.randn(8, 4, 2)
        >>> out = ACTLoss(actor, kl_weight=10.0)(td)
        >>> sorted(out.keys()), out["loss_act"].shape
        (['loss_act', 'loss_kl', 'loss_reconstruction'], torch.Size([]))
    """

    @dataclass
    class _AcceptedKeys:
        """The entries read and written.

        Attributes:
            observation: the observation. Defaults to ``"observation"``.
            action_chunk: the expert chunk ``[*B, T, action_dim]``. Defaults to
                ``("vla_action", "chunk")``.
            action_pred: the chunk the actor predicts. Defaults to ``"action_pred"``.
            mu: the posterior's mean. Defaults to ``"mu"``.
            log_var: the posterior's log-variance. Defaults to ``"log_var"``.
        """

        observation: NestedKey = K.OBSERVATION
        action_chunk: NestedKey = ("vla_action", "chunk")
        action_pred: NestedKey = "action_pred"
        mu: NestedKey = "mu"
        log_var: NestedKey = "log_var"

    def __init__(
        self,
        actor_network: nn.Module,
        *,
        kl_weight: float = 10.0,
        reduction: str | None = None,
    ) -> None:
        super().__init__()
        if isinstance(kl_weight, bool) or not isinstance(kl_weight, int | float):
            raise TypeError(f"ACTLoss: expected kl_weight to be a number, got {kl_weight!r}.")
        if kl_weight < 0:
            raise ValueError(
                f"ACTLoss: expected kl_weight >= 0 (the KL term's weight), got {kl_weight}."
            )
        self.convert_to_functional(actor_network, "actor_network")
        self.kl_weight = float(kl_weight)
        self.reduction = C.check_reduction("ACTLoss", reduction)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [self.tensor_keys.observation, self.tensor_keys.action_chunk]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_act``, ``loss_reconstruction`` and ``loss_kl``."""
        chunk = tensordict.get(self.tensor_keys.action_chunk)
        inputs = TensorDict(
            observation=tensordict.get(self.tensor_keys.observation),
            action_chunk=chunk,
            batch_size=tensordict.batch_size,
            device=tensordict.device,
        )
        with self.use_network("actor_network") as net:
            out = net(inputs)
        pred = out.get(self.tensor_keys.action_pred)
        if pred.shape != chunk.shape:
            raise ValueError(
                f"ACTLoss: the actor's {self.tensor_keys.action_pred!r} has shape "
                f"{tuple(pred.shape)}, the expert chunk {self.tensor_keys.action_chunk!r} "
                f"{tuple(chunk.shape)}; build the model with the chunk's chunk_size and "
                f"action_dim."
            )
        reconstruction = C.reduce((pred - chunk).abs().mean((-2, -1)), self.reduction)
        kl = C.reduce(
            kl_to_standard_normal(out.get(self.tensor_keys.mu), out.get(self.tensor_keys.log_var)),
            self.reduction,
        )
        return TensorDict(
            loss_act=reconstruction + self.kl_weight * kl,
            loss_reconstruction=reconstruction.detach(),
            loss_kl=kl.detach(),
        )
