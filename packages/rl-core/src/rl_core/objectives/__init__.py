"""The base of the losses.

Concrete losses, value estimators and the target-network updaters live in rl-objectives (and
rl-llm); they subclass or take :class:`LossModule` from here.
"""

from rl_core.objectives.common import LossModule

__all__ = ["LossModule"]
