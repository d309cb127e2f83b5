"""Transforms: the machinery (Transform, TransformedEnv, Compose, TensorDictPrimer) and the two
transforms rl-core's siblings and recurrent modules need (StepCounter, InitTracker); the
catalogue is rl-envs'."""

from rl_core.transforms import _plans  # noqa: F401  (registers the transforms' lane plans)
from rl_core.transforms.compose import Compose
from rl_core.transforms.init_tracker import InitTracker
from rl_core.transforms.primer import TensorDictPrimer
from rl_core.transforms.step_counter import StepCounter
from rl_core.transforms.transform import Transform
from rl_core.transforms.transformed_env import (
    TransformedEnv,
    auto_unwrap_transformed_env,
    set_auto_unwrap_transformed_env,
)

__all__ = [
    "Compose",
    "InitTracker",
    "StepCounter",
    "TensorDictPrimer",
    "Transform",
    "TransformedEnv",
    "auto_unwrap_transformed_env",
    "set_auto_unwrap_transformed_env",
]
