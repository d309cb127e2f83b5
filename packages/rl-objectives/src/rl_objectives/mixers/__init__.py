"""Mixers of per-agent values into a team value, for :class:`~rl_objectives.QMixerLoss`."""

from rl_objectives.mixers.qmix import QMixer
from rl_objectives.mixers.vdn import VDNMixer

__all__ = ["QMixer", "VDNMixer"]
