"""Offline datasets served as replay buffers."""

from rl_buffers.datasets.minari_data import MinariExperienceReplay

__all__ = ["MinariExperienceReplay"]
