"""The transform catalogue: observation, reward, action, episode, pixel and recording transforms.

Each transform runs inside a :class:`rl_core.TransformedEnv` (forward path, inverse path and
specs) and on plain TensorDicts such as replay-buffer samples. The machinery (``Transform``,
``TransformedEnv``, ``Compose``) and the generic transforms other packages need
(``StepCounter``, ``InitTracker``) live in rl-core.
"""

from rl_envs.transforms import _plans  # noqa: F401 (registers the lane plans)
from rl_envs.transforms.action_chunk import ActionChunkTransform, action_chunks
from rl_envs.transforms.action_discretizer import ActionDiscretizer, FlattenAction
from rl_envs.transforms.actions import ActionMask, ActionScaling
from rl_envs.transforms.auto_reset import AutoResetEnv, AutoResetTransform
from rl_envs.transforms.batch_size import BatchSizeTransform
from rl_envs.transforms.burn_in import BurnInTransform
from rl_envs.transforms.cat_frames import CatFrames
from rl_envs.transforms.cat_tensors import CatTensors
from rl_envs.transforms.clip import ClipTransform, SignTransform
from rl_envs.transforms.conditional_policy_switch import ConditionalPolicySwitch
from rl_envs.transforms.conditional_skip import ConditionalSkip
from rl_envs.transforms.decode_video import DecodeVideoTransform
from rl_envs.transforms.device_cast import DeviceCastTransform
from rl_envs.transforms.discrete_action_projection import DiscreteActionProjection
from rl_envs.transforms.dtype_cast import DoubleToFloat, DTypeCastTransform
from rl_envs.transforms.end_of_life import EndOfLifeTransform
from rl_envs.transforms.expand_as import ExpandAs
from rl_envs.transforms.finite_check import FiniteTensorDictCheck
from rl_envs.transforms.flatten_tensordict import FlattenTensorDict
from rl_envs.transforms.frame_skip import FrameSkipTransform
from rl_envs.transforms.gsde_noise import gSDENoise
from rl_envs.transforms.hash import Hash
from rl_envs.transforms.image import CenterCrop, Crop, GrayScale, Resize, ToTensorImage
from rl_envs.transforms.module import ModuleTransform
from rl_envs.transforms.multi_action import MultiAction
from rl_envs.transforms.multi_step import MultiStepTransform
from rl_envs.transforms.next_obs_delta import NextObservationDelta
from rl_envs.transforms.next_state_reconstructor import NextStateReconstructor
from rl_envs.transforms.noop_reset import NoopResetEnv
from rl_envs.transforms.observation_norm import ObservationNorm
from rl_envs.transforms.observation_transform import ObservationTransform
from rl_envs.transforms.policy_age_filter import PolicyAgeFilter
from rl_envs.transforms.primer import TensorDictPrimer
from rl_envs.transforms.r3m import R3MTransform
from rl_envs.transforms.random_crop import RandomCropTensorDict
from rl_envs.transforms.random_truncation import RandomTruncationTransform
from rl_envs.transforms.recording import PixelRenderTransform, VideoRecorder
from rl_envs.transforms.remove_empty_specs import RemoveEmptySpecs
from rl_envs.transforms.rename import RenameTransform
from rl_envs.transforms.reward import (
    BinarizeReward,
    LineariseRewards,
    RewardClipping,
    RewardScaling,
)
from rl_envs.transforms.reward2go import Reward2GoTransform
from rl_envs.transforms.reward_sum import RewardSum
from rl_envs.transforms.rnd import RNDTransform, RunningMeanStd
from rl_envs.transforms.select import ExcludeTransform, SelectTransform
from rl_envs.transforms.shape import (
    FlattenObservation,
    PermuteTransform,
    SqueezeTransform,
    UnsqueezeTransform,
)
from rl_envs.transforms.stack import Stack
from rl_envs.transforms.target_return import TargetReturn
from rl_envs.transforms.tensordict_recorder import TensorDictRecorder
from rl_envs.transforms.terminate import TerminateTransform
from rl_envs.transforms.time_max_pool import TimeMaxPool
from rl_envs.transforms.timer import Timer
from rl_envs.transforms.traj_counter import TrajCounter
from rl_envs.transforms.unary import UnaryTransform
from rl_envs.transforms.vc1 import VC1Transform
from rl_envs.transforms.vecnorm import VecNorm
from rl_envs.transforms.vecnorm_v2 import VecNormV2
from rl_envs.transforms.video_clip import (
    VideoClipRef,
    clear_video_decoder_cache,
    set_video_decoder_cache_size,
)
from rl_envs.transforms.vip import VIPRewardTransform, VIPTransform

__all__ = [
    # keys
    "RenameTransform",
    "SelectTransform",
    "ExcludeTransform",
    # observations
    "ObservationTransform",
    "ObservationNorm",
    "VecNorm",
    "VecNormV2",
    "CatTensors",
    "BurnInTransform",
    "CatFrames",
    "UnsqueezeTransform",
    "SqueezeTransform",
    "FlattenObservation",
    "PermuteTransform",
    "ClipTransform",
    "SignTransform",
    "DTypeCastTransform",
    "DoubleToFloat",
    "DeviceCastTransform",
    "TensorDictPrimer",
    "gSDENoise",
    "Stack",
    "Hash",
    "NextObservationDelta",
    "RemoveEmptySpecs",
    "FiniteTensorDictCheck",
    "ExpandAs",
    # pixels
    "ToTensorImage",
    "Resize",
    "CenterCrop",
    "Crop",
    "GrayScale",
    "R3MTransform",
    "VIPTransform",
    "VIPRewardTransform",
    "VC1Transform",
    # rewards
    "RewardScaling",
    "RewardClipping",
    "Reward2GoTransform",
    "RNDTransform",
    "RunningMeanStd",
    "TrajCounter",
    "UnaryTransform",
    "ModuleTransform",
    "BinarizeReward",
    "LineariseRewards",
    "TargetReturn",
    # actions
    "ActionScaling",
    "ActionMask",
    "ActionDiscretizer",
    "FlattenAction",
    "FrameSkipTransform",
    "MultiAction",
    "ActionChunkTransform",
    "action_chunks",
    "ConditionalSkip",
    "ConditionalPolicySwitch",
    "DiscreteActionProjection",
    # episodes
    "RewardSum",
    "NoopResetEnv",
    "AutoResetTransform",
    "AutoResetEnv",
    "BatchSizeTransform",
    "EndOfLifeTransform",
    "TimeMaxPool",
    "TerminateTransform",
    "RandomTruncationTransform",
    "Timer",
    # trajectories (replay buffers)
    "MultiStepTransform",
    "RandomCropTensorDict",
    "NextStateReconstructor",
    "FlattenTensorDict",
    "PolicyAgeFilter",
    "DecodeVideoTransform",
    "VideoClipRef",
    "set_video_decoder_cache_size",
    "clear_video_decoder_cache",
    # recording
    "VideoRecorder",
    "TensorDictRecorder",
    "PixelRenderTransform",
]
