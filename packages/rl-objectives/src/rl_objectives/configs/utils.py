"""Hydra configs of ``torch.optim``'s optimizers (TorchRL's ``configs.utils``), derived from
their constructors; each is partial: rl-train calls it with the loss's parameters."""

from __future__ import annotations

import torch

from rl_objectives.configs._derive import config_of

_OPTIMIZERS = (
    "AdamW", "Adamax", "RMSprop", "Adagrad", "Adadelta", "Rprop", "ASGD", "LBFGS", "RAdam",
    "NAdam", "SparseAdam",
)  # fmt: skip

#: ``<Optimizer>Config`` for each optimizer besides Adam and SGD: name -> config class.
OPTIMIZER_CONFIGS: dict[str, type] = {
    name: config_of(
        getattr(torch.optim, name), f"{name}Config", f"torch.optim.{name}", partial=True
    )
    for name in _OPTIMIZERS
}
AdamWConfig = OPTIMIZER_CONFIGS["AdamW"]
AdamaxConfig = OPTIMIZER_CONFIGS["Adamax"]
RMSpropConfig = OPTIMIZER_CONFIGS["RMSprop"]
AdagradConfig = OPTIMIZER_CONFIGS["Adagrad"]
AdadeltaConfig = OPTIMIZER_CONFIGS["Adadelta"]
RpropConfig = OPTIMIZER_CONFIGS["Rprop"]
ASGDConfig = OPTIMIZER_CONFIGS["ASGD"]
LBFGSConfig = OPTIMIZER_CONFIGS["LBFGS"]
RAdamConfig = OPTIMIZER_CONFIGS["RAdam"]
NAdamConfig = OPTIMIZER_CONFIGS["NAdam"]
SparseAdamConfig = OPTIMIZER_CONFIGS["SparseAdam"]
