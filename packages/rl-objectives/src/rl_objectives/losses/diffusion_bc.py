"""Behaviour cloning of a diffusion policy (Chi et al. 2023): DDPM's noise-prediction loss."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_core import keys as K
from rl_core.keys import NestedKey
from rl_core.objectives import LossModule
from rl_objectives.losses import _common as C

__all__ = ["DiffusionBCLoss"]


class DiffusionBCLoss(LossModule):
    """The epsilon-prediction loss of DDPM (Ho et al. 2020) on demonstrated actions, as the
    Diffusion Policy trains (Chi et al. 2023).

    For each sample of the batch: a step ``t`` uniform in ``[0, num_steps)``, noise ``eps ~
    N(0, I)`` shaped like the action, the noisy action ``x_t = sqrt(alpha_bar_t) * a +
    sqrt(1 - alpha_bar_t) * eps`` (``q(x_t | x_0 = a)``), and ``loss_diffusion_bc = (eps_theta(
    x_t, o, t) - eps)^2`` averaged (``reduction``) over the batch and the action's entries.
    The random draws, in order: ``t`` (``torch.randint`` shaped like the batch), then
    ``eps`` (``torch.randn_like`` the action).

    With a chunked actor (``DiffusionActor(..., chunk_size=H)``) the action is the expert
    chunk ``[*B, H, action_dim]``: ``set_keys(action=("vla_action", "chunk"))`` reads the
    one :class:`~rl_envs.transforms.ActionChunkTransform` writes.

    Args:
        actor_network: a :class:`~rl_objectives.modules.DiffusionActor` (its ``.module``
            gives ``num_steps``, ``add_noise`` and ``predict_noise``).

    Keyword Args:
        reduction: ``"mean"``, ``"sum"`` or ``"none"`` (the squared errors, shaped like the
            action). Defaults to ``"mean"``.

    Raises:
        TypeError: ``actor_network`` is not a diffusion actor.
        ValueError: an unknown ``reduction``; on a call, an action or observation shaped
            unlike the actor's.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.modules import DiffusionActor
        >>> loss = DiffusionBCLoss(DiffusionActor(action_dim=2, obs_dim=4, num_steps=10))
        >>> td = TensorDict(observation=torch.randn(8, 4), action=torch.randn(8, 2), batch_size=[8])
        >>> loss(td)["loss_diffusion_bc"].shape
        torch.Size([])
    """

    @dataclass
    class _AcceptedKeys:
        """The entries read.

        Attributes:
            action: the demonstrated (clean) action. Defaults to ``"action"``.
            observation: the conditioning observation. Defaults to ``"observation"``.
        """

        action: NestedKey = K.ACTION
        observation: NestedKey = K.OBSERVATION

    def __init__(self, actor_network: nn.Module, *, reduction: str | None = None) -> None:
        super().__init__()
        inner = getattr(actor_network, "module", None)
        if not all(hasattr(inner, n) for n in ("num_steps", "add_noise", "predict_noise")):
            raise TypeError(
                f"DiffusionBCLoss: expected actor_network to be a DiffusionActor (whose .module "
                f"has num_steps, add_noise and predict_noise), got "
                f"{type(actor_network).__name__}."
            )
        self.convert_to_functional(actor_network, "actor_network")
        self.reduction = C.check_reduction("DiffusionBCLoss", reduction)

    def _in_keys(self, tensordict: TensorDictBase | None) -> list[NestedKey]:
        return [self.tensor_keys.observation, self.tensor_keys.action]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Returns ``loss_diffusion_bc``."""
        action = tensordict.get(self.tensor_keys.action)
        observation = tensordict.get(self.tensor_keys.observation)
        with self.use_network("actor_network") as net:
            ddpm = net.module
            batch = action.shape[: action.dim() - len(ddpm.action_shape)]
            t = torch.randint(0, ddpm.num_steps, batch, device=action.device)
            noisy, noise = ddpm.add_noise(action.detach(), t)
            predicted = ddpm.predict_noise(noisy, observation, t)
        loss = (predicted - noise).pow(2)
        return TensorDict(loss_diffusion_bc=C.reduce(loss, self.reduction))
