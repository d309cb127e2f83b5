"""Hydra configs of losses, value estimators and target updaters (TorchRL's
``configs.objectives``). A loss config is partial: rl-train calls it with the networks its
model config builds; the loss configs here are derived from the losses' constructors (their
networks, the required parameters, are what the caller passes)."""

from __future__ import annotations

from dataclasses import dataclass

from rl_objectives import (
    CQLLoss,
    DDPGLoss,
    DreamerV3Loss,
    IQLLoss,
    QMixerLoss,
    ReinforceLoss,
    TD3Loss,
    TQCLoss,
)
from rl_objectives.configs._derive import MISSING, config_of


@dataclass
class LossConfig:
    """The base of the loss configs: ``_target_`` names a loss; partial (called with the
    networks)."""

    _target_: str = MISSING
    _partial_: bool = True


_LOSSES = (TQCLoss, ReinforceLoss, TD3Loss, QMixerLoss, DDPGLoss, IQLLoss, CQLLoss, DreamerV3Loss)
#: ``<Loss>Config`` for each loss derived here: loss name -> config class.
LOSS_CONFIGS: dict[str, type] = {
    cls.__name__: config_of(
        cls, f"{cls.__name__}Config", f"rl_objectives.{cls.__name__}", partial=True
    )
    for cls in _LOSSES
}
TQCLossConfig = LOSS_CONFIGS["TQCLoss"]
ReinforceLossConfig = LOSS_CONFIGS["ReinforceLoss"]
TD3LossConfig = LOSS_CONFIGS["TD3Loss"]
QMixerLossConfig = LOSS_CONFIGS["QMixerLoss"]
DDPGLossConfig = LOSS_CONFIGS["DDPGLoss"]
IQLLossConfig = LOSS_CONFIGS["IQLLoss"]
CQLLossConfig = LOSS_CONFIGS["CQLLoss"]
#: Called with the model, actor and value losses.
DreamerV3LossConfig = LOSS_CONFIGS["DreamerV3Loss"]


@dataclass
class GAEConfig:
    """:class:`rl_objectives.GAE` (called with ``value_network=``)."""

    gamma: float = 0.99
    lmbda: float = 0.95
    average_gae: bool = False
    vectorized: bool = False
    _target_: str = "rl_objectives.GAE"
    _partial_: bool = True


@dataclass
class TargetNetUpdaterConfig:
    """The base of the target-updater configs (``SoftUpdateConfig``, ``HardUpdateConfig``):
    ``_target_`` names a :class:`rl_objectives.TargetNetUpdater`; partial (called with the
    loss)."""

    _target_: str = MISSING
    _partial_: bool = True
