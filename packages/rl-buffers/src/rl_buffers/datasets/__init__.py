"""Offline datasets served as replay buffers."""

from rl_buffers.datasets.atari_dqn import AtariDQNExperienceReplay
from rl_buffers.datasets.base import BaseDatasetExperienceReplay
from rl_buffers.datasets.d4rl import D4RLExperienceReplay, d4rl_url
from rl_buffers.datasets.gen_dgrl import GenDGRLExperienceReplay
from rl_buffers.datasets.h5_split import H5Combine, H5Split
from rl_buffers.datasets.lerobot import LeRobotExperienceReplay, lerobot_columns_to_tensordict
from rl_buffers.datasets.minari_data import MinariExperienceReplay
from rl_buffers.datasets.registry import load_dataset, register_dataset
from rl_buffers.datasets.roboset import RobosetExperienceReplay
from rl_buffers.datasets.ted_flat import Flat2TED, TED2Flat
from rl_buffers.datasets.ted_nested import Nested2TED, TED2Nested
from rl_buffers.datasets.vd4rl import VD4RLExperienceReplay

__all__ = [
    "AtariDQNExperienceReplay",
    "BaseDatasetExperienceReplay",
    "D4RLExperienceReplay",
    "d4rl_url",
    "Flat2TED",
    "GenDGRLExperienceReplay",
    "H5Combine",
    "H5Split",
    "LeRobotExperienceReplay",
    "lerobot_columns_to_tensordict",
    "MinariExperienceReplay",
    "Nested2TED",
    "RobosetExperienceReplay",
    "load_dataset",
    "register_dataset",
    "TED2Flat",
    "TED2Nested",
    "VD4RLExperienceReplay",
]
