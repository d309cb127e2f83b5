"""The transform catalogue: observation, reward, action, episode, pixel and recording transforms.

Each transform runs inside a :class:`rl_core.TransformedEnv` (forward path, inverse path and
specs) and on plain TensorDicts such as replay-buffer samples. The machinery (``Transform``,
``TransformedEnv``, ``Compose``) and the generic transforms every package needs
(``StepCounter``, ``RewardSum``, ``InitTracker``, ``DoubleToFloat``, rename/select/exclude)
live in rl-core.
"""

from rl_envs.transforms import _plans  # noqa: F401 (registers the lane plans)
from rl_envs.transforms.action_discretizer import ActionDiscretizer, FlattenAction
from rl_envs.transforms.actions import ActionMask, ActionScaling
from rl_envs.transforms.auto_reset import AutoResetTransform
from rl_envs.transforms.cat_frames import CatFrames
from rl_envs.transforms.cat_tensors import CatTensors
from rl_envs.transforms.clip import ClipTransform, SignTransform
from rl_envs.transforms.device_cast import DeviceCastTransform
from rl_envs.transforms.dtype_cast import DTypeCastTransform
from rl_envs.transforms.end_of_life import EndOfLifeTransform
from rl_envs.transforms.frame_skip import FrameSkipTransform
from rl_envs.transforms.image import CenterCrop, GrayScale, Resize, ToTensorImage
from rl_envs.transforms.noop_reset import NoopResetEnv
from rl_envs.transforms.observation_norm import ObservationNorm
from rl_envs.transforms.primer import TensorDictPrimer
from rl_envs.transforms.recording import PixelRenderTransform, VideoRecorder
from rl_envs.transforms.reward import RewardClipping, RewardScaling
from rl_envs.transforms.reward2go import Reward2GoTransform
from rl_envs.transforms.shape import (
    FlattenObservation,
    PermuteTransform,
    SqueezeTransform,
    UnsqueezeTransform,
)
from rl_envs.transforms.time_max_pool import TimeMaxPool
from rl_envs.transforms.traj_counter import TrajCounter
from rl_envs.transforms.vecnorm import VecNorm

__all__ = [
    # observations
    "ObservationNorm",
    "VecNorm",
    "CatTensors",
    "CatFrames",
    "UnsqueezeTransform",
    "SqueezeTransform",
    "FlattenObservation",
    "PermuteTransform",
    "ClipTransform",
    "SignTransform",
    "DTypeCastTransform",
    "DeviceCastTransform",
    "TensorDictPrimer",
    # pixels
    "ToTensorImage",
    "Resize",
    "CenterCrop",
    "GrayScale",
    # rewards
    "RewardScaling",
    "RewardClipping",
    "Reward2GoTransform",
    "TrajCounter",
    # actions
    "ActionScaling",
    "ActionMask",
    "ActionDiscretizer",
    "FlattenAction",
    "FrameSkipTransform",
    # episodes
    "NoopResetEnv",
    "AutoResetTransform",
    "EndOfLifeTransform",
    "TimeMaxPool",
    # recording
    "VideoRecorder",
    "PixelRenderTransform",
]
