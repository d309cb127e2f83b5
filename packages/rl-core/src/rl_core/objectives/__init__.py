"""The base of the losses and the target-network updaters.

Concrete losses and value estimators live in rl-objectives (and rl-llm); they subclass
:class:`LossModule` from here.
"""

from rl_core.objectives.common import LossModule
from rl_core.objectives.target_updaters import HardUpdate, SoftUpdate, TargetNetUpdater

__all__ = [
    "LossModule",
    "TargetNetUpdater",
    "SoftUpdate",
    "HardUpdate",
]
