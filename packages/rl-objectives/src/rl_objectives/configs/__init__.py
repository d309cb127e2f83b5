"""Hydra configs of rl-objectives' classes: losses, trainers, optimizers, loggers, target
updaters, model builders, the algorithm presets and rl-train's top-level config (needs
``pip install "rl-objectives[hydra]"``).

Each config is a typed dataclass whose ``_target_`` names what it builds. Configs of things
that need other built parts (a loss needs networks, an optimizer parameters, a trainer a
collector and a loss) are partial (``_partial_: true``): ``instantiate`` returns a callable
that rl-train calls with those parts. Keys and types are checked when a config is composed:
an unknown key or a value of the wrong type fails before anything is built, naming the key.

:func:`register_configs` stores them in Hydra's ``ConfigStore``: groups ``algo`` (``ppo``,
``a2c``, ``sac``, ``dqn``) and ``logger`` (``csv``, ``tensorboard``), and the top-level ``train``
schema. rl-train calls it through the ``rl_stack.configs`` entry point, with those of the other
installed packages (``env``, ``collector``, ``replay_buffer``). Importing this module does not
import hydra; only :func:`register_configs` does.
"""

from __future__ import annotations

# The submodules' configs are re-exported: rl_objectives.configs.<Name>Config is their path.
# ruff: noqa: F401
import re
from dataclasses import dataclass, field
from typing import Any

from rl_objectives.configs.hooks import (
    HOOK_CONFIGS,
    BatchSubSamplerConfig,
    ClearCudaCacheConfig,
    CountFramesLogConfig,
    EarlyStoppingConfig,
    HookConfig,
    LogScalarConfig,
    LogTimingConfig,
    RewardNormalizerConfig,
    SelectKeysConfig,
)
from rl_objectives.configs.logging import LoggerConfig, WandbLoggerConfig
from rl_objectives.configs.modules import (
    ActivationConfig,
    AdditiveGaussianModuleConfig,
    AggregatorConfig,
    ConvNetConfig,
    DreamerV3DiscreteActorConfig,
    DreamerV3ImageDecoderConfig,
    DreamerV3ImageEncoderConfig,
    DreamerV3MLPConfig,
    DreamerV3SeededPolicyConfig,
    LayerConfig,
    MLPConfig,
    ModelConfig,
    NetworkConfig,
    NormConfig,
    QMixerNetworkConfig,
    QValueModelConfig,
    RSSMStateEstimatorV3Config,
    TanhNormalModelConfig,
    TensorDictModuleConfig,
    TensorDictSequentialConfig,
    ValueModelConfig,
    VDNMixerNetworkConfig,
)
from rl_objectives.configs.objectives import (
    LOSS_CONFIGS,
    CQLLossConfig,
    DDPGLossConfig,
    DreamerV3LossConfig,
    GAEConfig,
    IQLLossConfig,
    LossConfig,
    QMixerLossConfig,
    ReinforceLossConfig,
    TargetNetUpdaterConfig,
    TD3LossConfig,
    TQCLossConfig,
)
from rl_objectives.configs.trainers import (
    CQLTrainerConfig,
    DDPGTrainerConfig,
    DreamerV3OptimizationStepperConfig,
    DreamerV3OptimizerConfig,
    DreamerV3UpdateRatioConfig,
    IQLTrainerConfig,
    OfflineToOnlineTrainerConfig,
    OnPolicyTrainerConfig,
    ReinforceTrainerConfig,
    TD3TrainerConfig,
    TrainerConfig,
)
from rl_objectives.configs.utils import (
    OPTIMIZER_CONFIGS,
    AdadeltaConfig,
    AdagradConfig,
    AdamaxConfig,
    AdamWConfig,
    ASGDConfig,
    LBFGSConfig,
    NAdamConfig,
    RAdamConfig,
    RMSpropConfig,
    RpropConfig,
    SparseAdamConfig,
)

# Models (builders in rl_objectives.trainers.helpers).


@dataclass
class PPOModelConfig:
    """:func:`rl_objectives.trainers.helpers.make_ppo_models`: policy and critic MLPs."""

    num_cells: int = 64
    depth: int = 2
    activation: str = "tanh"
    _target_: str = "rl_objectives.trainers.helpers.make_ppo_models"
    _partial_: bool = True


@dataclass
class SACModelConfig:
    """:func:`rl_objectives.trainers.helpers.make_sac_models`: policy and Q-network MLPs."""

    num_cells: int = 256
    depth: int = 2
    activation: str = "relu"
    _target_: str = "rl_objectives.trainers.helpers.make_sac_models"
    _partial_: bool = True


@dataclass
class DQNModelConfig:
    """:func:`rl_objectives.trainers.helpers.make_dqn_models`: a Q-network MLP and
    epsilon-greedy exploration annealed over ``annealing_num_steps`` frames."""

    num_cells: int = 256
    depth: int = 2
    activation: str = "relu"
    eps_init: float = 1.0
    eps_end: float = 0.05
    annealing_num_steps: int = 10_000
    _target_: str = "rl_objectives.trainers.helpers.make_dqn_models"
    _partial_: bool = True


# Losses (called with the model's networks).


@dataclass
class DQNLossConfig:
    """:class:`rl_objectives.DQNLoss`."""

    loss_function: str = "l2"
    delay_value: bool = True
    double_dqn: bool = False
    _target_: str = "rl_objectives.DQNLoss"
    _partial_: bool = True


@dataclass
class ClipPPOLossConfig:
    """:class:`rl_objectives.ClipPPOLoss`."""

    clip_epsilon: float = 0.2
    clip_value: float | None = None
    entropy_bonus: bool = True
    entropy_coeff: float = 0.01
    critic_coeff: float = 1.0
    loss_critic_type: str = "smooth_l1"
    normalize_advantage: bool = False
    _target_: str = "rl_objectives.ClipPPOLoss"
    _partial_: bool = True


@dataclass
class A2CLossConfig:
    """:class:`rl_objectives.A2CLoss`."""

    entropy_bonus: bool = True
    entropy_coeff: float = 0.01
    critic_coeff: float = 1.0
    loss_critic_type: str = "smooth_l1"
    normalize_advantage: bool = False
    _target_: str = "rl_objectives.A2CLoss"
    _partial_: bool = True


@dataclass
class SACLossConfig:
    """:class:`rl_objectives.SACLoss`."""

    num_qvalue_nets: int = 2
    loss_function: str = "smooth_l1"
    alpha_init: float = 1.0
    fixed_alpha: bool = False
    _target_: str = "rl_objectives.SACLoss"
    _partial_: bool = True


@dataclass
class ValueEstimatorConfig:
    """The arguments of ``loss.make_value_estimator`` (``lmbda`` for GAE/TD(lambda))."""

    gamma: float = 0.99
    lmbda: float | None = None


@dataclass
class SoftUpdateConfig:
    """:class:`rl_objectives.SoftUpdate` (called with the loss)."""

    tau: float = 0.005
    _target_: str = "rl_objectives.SoftUpdate"
    _partial_: bool = True


@dataclass
class HardUpdateConfig:
    """:class:`rl_objectives.HardUpdate` (called with the loss)."""

    value_network_update_interval: int = 1000
    _target_: str = "rl_objectives.HardUpdate"
    _partial_: bool = True


# Optimizers (called with the loss's parameters).


@dataclass
class AdamConfig:
    """``torch.optim.Adam``."""

    lr: float = 3e-4
    eps: float = 1e-8
    weight_decay: float = 0.0
    _target_: str = "torch.optim.Adam"
    _partial_: bool = True


@dataclass
class SGDConfig:
    """``torch.optim.SGD``."""

    lr: float = 1e-3
    momentum: float = 0.0
    _target_: str = "torch.optim.SGD"
    _partial_: bool = True


# Trainers (called with collector, total_frames, loss and optimizer).


@dataclass
class PPOTrainerConfig:
    """:class:`rl_objectives.trainers.PPOTrainer`."""

    num_epochs: int = 4
    batch_size: int | None = None
    clip_norm: float | None = None
    clip_grad_norm: bool = True
    log_interval: int = 1
    _target_: str = "rl_objectives.trainers.PPOTrainer"
    _partial_: bool = True


@dataclass
class A2CTrainerConfig:
    """:class:`rl_objectives.trainers.A2CTrainer`."""

    num_epochs: int = 1
    batch_size: int | None = None
    clip_norm: float | None = None
    clip_grad_norm: bool = True
    log_interval: int = 1
    _target_: str = "rl_objectives.trainers.A2CTrainer"
    _partial_: bool = True


@dataclass
class SACTrainerConfig:
    """:class:`rl_objectives.trainers.SACTrainer` (rl-train passes the replay buffer and the
    target updater)."""

    batch_size: int = 256
    optim_steps_per_batch: int = 1
    clip_norm: float | None = None
    clip_grad_norm: bool = True
    log_interval: int = 1
    _target_: str = "rl_objectives.trainers.SACTrainer"
    _partial_: bool = True


@dataclass
class DQNTrainerConfig:
    """:class:`rl_objectives.trainers.DQNTrainer` (rl-train passes the replay buffer and the
    target updater)."""

    batch_size: int = 64
    optim_steps_per_batch: int = 1
    clip_norm: float | None = None
    clip_grad_norm: bool = True
    log_interval: int = 1
    _target_: str = "rl_objectives.trainers.DQNTrainer"
    _partial_: bool = True


# Loggers (called with the run directory).


@dataclass
class CSVLoggerConfig:
    """:class:`rl_objectives.loggers.CSVLogger`: CSV files under ``<run dir>/<exp_name>``."""

    exp_name: str = "logs"
    _target_: str = "rl_objectives.loggers.CSVLogger"
    _partial_: bool = True


@dataclass
class TensorboardLoggerConfig:
    """:class:`rl_objectives.loggers.TensorboardLogger` (``rl-objectives[tensorboard]``)."""

    exp_name: str = "logs"
    _target_: str = "rl_objectives.loggers.TensorboardLogger"
    _partial_: bool = True


# Algorithm presets: the model, loss, optimizer and trainer of one algorithm.


@dataclass
class PPOAlgoConfig:
    """PPO: :class:`PPOModelConfig`, :class:`ClipPPOLossConfig` with GAE, Adam,
    :class:`PPOTrainerConfig`."""

    model: PPOModelConfig = field(default_factory=PPOModelConfig)
    loss: ClipPPOLossConfig = field(default_factory=ClipPPOLossConfig)
    value_estimator: ValueEstimatorConfig = field(
        default_factory=lambda: ValueEstimatorConfig(gamma=0.99, lmbda=0.95)
    )
    optimizer: AdamConfig = field(default_factory=AdamConfig)
    trainer: PPOTrainerConfig = field(default_factory=PPOTrainerConfig)
    target_net_updater: Any = None
    anneal_lr: bool = False


@dataclass
class A2CAlgoConfig:
    """A2C: :class:`PPOModelConfig`, :class:`A2CLossConfig` with GAE, Adam,
    :class:`A2CTrainerConfig`."""

    model: PPOModelConfig = field(default_factory=PPOModelConfig)
    loss: A2CLossConfig = field(default_factory=A2CLossConfig)
    value_estimator: ValueEstimatorConfig = field(
        default_factory=lambda: ValueEstimatorConfig(gamma=0.99, lmbda=0.95)
    )
    optimizer: AdamConfig = field(default_factory=AdamConfig)
    trainer: A2CTrainerConfig = field(default_factory=A2CTrainerConfig)
    target_net_updater: Any = None
    anneal_lr: bool = False


@dataclass
class SACAlgoConfig:
    """SAC: :class:`SACModelConfig`, :class:`SACLossConfig` with TD(0), Adam, soft target
    updates, :class:`SACTrainerConfig` (needs a ``replay_buffer``)."""

    model: SACModelConfig = field(default_factory=SACModelConfig)
    loss: SACLossConfig = field(default_factory=SACLossConfig)
    value_estimator: ValueEstimatorConfig = field(default_factory=ValueEstimatorConfig)
    optimizer: AdamConfig = field(default_factory=AdamConfig)
    trainer: SACTrainerConfig = field(default_factory=SACTrainerConfig)
    target_net_updater: SoftUpdateConfig = field(default_factory=SoftUpdateConfig)
    anneal_lr: bool = False


@dataclass
class DQNAlgoConfig:
    """DQN: :class:`DQNModelConfig`, :class:`DQNLossConfig` with TD(0), Adam, hard target
    copies, :class:`DQNTrainerConfig` (needs a ``replay_buffer``)."""

    model: DQNModelConfig = field(default_factory=DQNModelConfig)
    loss: DQNLossConfig = field(default_factory=DQNLossConfig)
    value_estimator: ValueEstimatorConfig = field(default_factory=ValueEstimatorConfig)
    optimizer: AdamConfig = field(default_factory=AdamConfig)
    trainer: DQNTrainerConfig = field(default_factory=DQNTrainerConfig)
    target_net_updater: HardUpdateConfig = field(default_factory=HardUpdateConfig)
    anneal_lr: bool = False


def _default_groups() -> list[Any]:
    return ["_self_", {"algo": "ppo"}, {"env": "gym"}, {"collector": "sync"}, {"logger": "csv"}]


@dataclass
class TrainConfig:
    """rl-train's top-level config: the groups ``algo``, ``env``, ``collector``, ``logger`` and
    (for off-policy algorithms) ``replay_buffer``, and the run's settings.

    ``target_return`` stops training once the mean of the last 10 episode returns reaches it;
    checkpoints go to ``checkpoint_dir`` (default: ``<run dir>/checkpoints``) every
    ``checkpoint_interval`` frames, and ``resume=true`` starts from the newest one there.
    Each config in ``transforms`` (``+transform@transforms.steps=step_counter``, rl-envs'
    transform group) builds a transform of the env, in their order, whatever the env config;
    each config in ``hooks`` (``+hook@hooks.timing=log_timing``) builds a trainer hook that is
    registered with the trainer.
    """

    defaults: list[Any] = field(default_factory=_default_groups)
    algo: Any = None
    env: Any = None
    collector: Any = None
    logger: Any = None
    replay_buffer: Any = None
    transforms: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    total_frames: int = 100_000
    target_return: float | None = None
    checkpoint_interval: int = 10_000
    checkpoint_dir: str | None = None
    resume: bool = False
    progress_bar: bool = True
    num_threads: int = 1
    plot: bool = True


#: The ``algo`` group's options.
ALGO_CONFIGS: dict[str, type] = {
    "ppo": PPOAlgoConfig,
    "a2c": A2CAlgoConfig,
    "sac": SACAlgoConfig,
    "dqn": DQNAlgoConfig,
}
#: The ``logger`` group's options.
LOGGER_CONFIGS: dict[str, type] = {
    "csv": CSVLoggerConfig,
    "tensorboard": TensorboardLoggerConfig,
    "wandb": WandbLoggerConfig,
}


def register_configs(store: Any = None) -> None:
    """Stores the ``algo`` and ``logger`` groups and the ``train`` schema in Hydra's
    ``ConfigStore`` (or ``store``).

    Raises:
        ImportError: hydra is not installed (the message gives the install line).
    """
    if store is None:
        try:
            from hydra.core.config_store import ConfigStore
        except ImportError as err:
            raise ImportError(
                'rl_objectives.configs needs hydra-core: pip install "rl-objectives[hydra]"'
            ) from err
        store = ConfigStore.instance()
    store.store(name="train", node=TrainConfig, provider="rl_objectives")
    for name, node in ALGO_CONFIGS.items():
        store.store(group="algo", name=name, node=node, provider="rl_objectives")
    for name, node in LOGGER_CONFIGS.items():
        store.store(group="logger", name=name, node=node, provider="rl_objectives")
    for name, node in HOOK_CONFIGS.items():
        store.store(group="hook", name=_snake(name), node=node, provider="rl_objectives")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
