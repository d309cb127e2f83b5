"""Environments that speak the rl-core TensorDict contract.

Wrappers of gymnasium and PettingZoo (imported only when a wrapper is built), torch-native
batched envs, the serial and multi-process batched envs, and the transform catalogue
(:mod:`rl_envs.transforms`).
"""

# ruff: noqa: E402  (the rl-core version guard runs before the imports it protects)
from rl_core.compat import check_rl_core

check_rl_core("rl-envs")  # first: an rl-core outside the declared range fails here, by name

from importlib.metadata import version as _version

from rl_envs.batched import BatchedEnvBase, EnvCreator, EnvMetadata, ParallelEnv, SerialEnv
from rl_envs.libs import (
    BraxEnv,
    BraxWrapper,
    DMControlEnv,
    DMControlWrapper,
    GymEnv,
    GymWrapper,
    InfoDictReader,
    JumanjiEnv,
    JumanjiWrapper,
    MarlGroupMapType,
    MOGymEnv,
    MOGymWrapper,
    MujocoEnv,
    MultiThreadedEnv,
    MultiThreadedEnvWrapper,
    OpenSpielEnv,
    OpenSpielWrapper,
    PettingZooEnv,
    PettingZooWrapper,
    PointMassEnv,
    VmasEnv,
    VmasWrapper,
    check_marl_grouping,
    default_info_dict_reader,
    gym_space_to_spec,
    spec_to_gym_space,
)
from rl_envs.model_based import (
    CEMPlanner,
    DreamerEnv,
    ModelBasedEnvBase,
    MPCPlannerBase,
    MPPIPlanner,
)
from rl_envs.native import CartPoleEnv, PendulumEnv
from rl_envs.transforms import (
    ActionDiscretizer,
    ActionMask,
    ActionScaling,
    AutoResetEnv,
    AutoResetTransform,
    BatchSizeTransform,
    BinarizeReward,
    CatFrames,
    CatTensors,
    CenterCrop,
    ClipTransform,
    ConditionalSkip,
    Crop,
    DeviceCastTransform,
    DTypeCastTransform,
    EndOfLifeTransform,
    FiniteTensorDictCheck,
    FlattenAction,
    FlattenObservation,
    FrameSkipTransform,
    GrayScale,
    Hash,
    LineariseRewards,
    MultiAction,
    MultiStepTransform,
    NextObservationDelta,
    NoopResetEnv,
    ObservationNorm,
    PermuteTransform,
    PixelRenderTransform,
    RandomCropTensorDict,
    RemoveEmptySpecs,
    Resize,
    Reward2GoTransform,
    RewardClipping,
    RewardScaling,
    SignTransform,
    SqueezeTransform,
    Stack,
    TargetReturn,
    TensorDictPrimer,
    TimeMaxPool,
    ToTensorImage,
    TrajCounter,
    UnsqueezeTransform,
    VecNorm,
    VideoRecorder,
)

__version__ = _version("rl-envs")

__all__ = [
    "__version__",
    # gymnasium
    "GymEnv",
    "GymWrapper",
    "InfoDictReader",
    "default_info_dict_reader",
    "gym_space_to_spec",
    "spec_to_gym_space",
    # DeepMind Control
    "DMControlEnv",
    "DMControlWrapper",
    # MuJoCo
    "MujocoEnv",
    "PointMassEnv",
    # OpenSpiel
    "OpenSpielEnv",
    "OpenSpielWrapper",
    # EnvPool
    "MultiThreadedEnv",
    "MultiThreadedEnvWrapper",
    # mo-gymnasium
    "MOGymEnv",
    "MOGymWrapper",
    # JAX suites
    "BraxEnv",
    "BraxWrapper",
    "JumanjiEnv",
    "JumanjiWrapper",
    # PettingZoo
    "PettingZooEnv",
    "PettingZooWrapper",
    "MarlGroupMapType",
    "check_marl_grouping",
    # VMAS
    "VmasEnv",
    "VmasWrapper",
    # torch-native
    "CartPoleEnv",
    "PendulumEnv",
    # model-based
    "ModelBasedEnvBase",
    "DreamerEnv",
    "MPCPlannerBase",
    "CEMPlanner",
    "MPPIPlanner",
    # batched
    "BatchedEnvBase",
    "EnvCreator",
    "EnvMetadata",
    "ParallelEnv",
    "SerialEnv",
    # transforms
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
    "ToTensorImage",
    "Resize",
    "CenterCrop",
    "GrayScale",
    "RewardScaling",
    "RewardClipping",
    "Reward2GoTransform",
    "TrajCounter",
    "ActionScaling",
    "ActionMask",
    "ActionDiscretizer",
    "FlattenAction",
    "FrameSkipTransform",
    "NoopResetEnv",
    "AutoResetTransform",
    "EndOfLifeTransform",
    "TimeMaxPool",
    "VideoRecorder",
    "PixelRenderTransform",
    # more transforms
    "Crop",
    "Stack",
    "Hash",
    "NextObservationDelta",
    "RemoveEmptySpecs",
    "FiniteTensorDictCheck",
    "BinarizeReward",
    "LineariseRewards",
    "TargetReturn",
    "MultiAction",
    "AutoResetEnv",
    "MultiStepTransform",
    "RandomCropTensorDict",
    "ConditionalSkip",
    "BatchSizeTransform",
]
