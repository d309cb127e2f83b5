"""Builders of the networks an algorithm trainer needs, fitted to an env's specs: the
``make_*`` helpers that rl-train's model configs point at; and TorchRL's config-driven builders
(``torchrl.trainers.helpers``: ``correct_for_frame_skip``, ``make_target_updater``,
``make_dqn_loss``)."""

from __future__ import annotations

from typing import Any

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, OBSERVATION
from rl_core.modules import (
    MLP,
    EGreedyModule,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)

_ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "elu": torch.nn.ELU}


def _check(owner: str, env: Any, activation: str) -> type[torch.nn.Module]:
    if not isinstance(env, EnvBase):
        raise TypeError(f"{owner}: env must be an rl-core EnvBase, got {type(env).__name__}.")
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"{owner}: activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}."
        )
    if OBSERVATION not in env.observation_spec.keys():
        raise ValueError(
            f"{owner}: the env has no {OBSERVATION!r} entry in its observation spec (it has "
            f"{sorted(map(str, env.observation_spec.keys()))}); flatten or rename it first."
        )
    return _ACTIVATIONS[activation]


def _policy(env: EnvBase, num_cells: int, depth: int, activation: type) -> ProbabilisticActor:
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    spec = env.action_spec
    n_out = spec.shape[-1]
    if not spec.dtype.is_floating_point:
        net = MLP(obs_dim, n_out, depth=depth, num_cells=num_cells, activation_class=activation)
        body = TensorDictModule(net, [OBSERVATION], ["logits"])
        return ProbabilisticActor(
            body, ["logits"], spec=spec, distribution_class=OneHotCategorical,
            return_log_prob=True,
        )  # fmt: skip
    net = torch.nn.Sequential(
        MLP(obs_dim, 2 * n_out, depth=depth, num_cells=num_cells, activation_class=activation),
        NormalParamExtractor(),
    )
    body = TensorDictModule(net, [OBSERVATION], ["loc", "scale"])
    low = spec.low.reshape(-1, n_out)[0]
    high = spec.high.reshape(-1, n_out)[0]
    return ProbabilisticActor(
        body, ["loc", "scale"], spec=spec, distribution_class=TanhNormal,
        distribution_kwargs={"low": low, "high": high}, return_log_prob=True,
    )  # fmt: skip


def make_ppo_models(
    env: EnvBase, *, num_cells: int = 64, depth: int = 2, activation: str = "tanh"
) -> dict[str, Any]:
    """A stochastic policy fitted to the action space (one-hot categorical for discrete
    actions, tanh-Gaussian over the action box otherwise) and a state-value network, both
    MLPs of ``depth`` hidden layers of ``num_cells``.

    Returns:
        ``{"policy": actor, "actor_network": actor, "critic_network": critic}``: the policy
        the collector runs, and the loss's networks by their argument names.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        ValueError: an unknown activation, or no ``"observation"`` entry.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_objectives.trainers.helpers import make_ppo_models
        >>> models = make_ppo_models(CountingEnv(), num_cells=8)
        >>> print(sorted(models))
        ['actor_network', 'critic_network', 'policy']
    """
    act = _check("make_ppo_models", env, activation)
    actor = _policy(env, num_cells, depth, act)
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    critic = ValueOperator(
        MLP(obs_dim, 1, depth=depth, num_cells=num_cells, activation_class=act), [OBSERVATION]
    )
    return {"policy": actor, "actor_network": actor, "critic_network": critic}


def make_sac_models(
    env: EnvBase, *, num_cells: int = 256, depth: int = 2, activation: str = "relu"
) -> dict[str, Any]:
    """A tanh-Gaussian policy over the action box and a Q-network on ``(observation,
    action)``, both MLPs of ``depth`` hidden layers of ``num_cells``.

    Returns:
        ``{"policy": actor, "actor_network": actor, "qvalue_network": qvalue}``.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        ValueError: discrete actions (SAC here is continuous), an unknown activation, or no
            ``"observation"`` entry.
    """
    act = _check("make_sac_models", env, activation)
    if not env.action_spec.dtype.is_floating_point:
        raise ValueError(
            f"make_sac_models: SAC needs continuous actions, got a {env.action_spec.dtype} "
            f"action spec; use DiscreteSACLoss with a categorical policy."
        )
    actor = _policy(env, num_cells, depth, act)
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    n_act = env.action_spec.shape[-1]
    qvalue = ValueOperator(
        MLP(obs_dim + n_act, 1, depth=depth, num_cells=num_cells, activation_class=act),
        [OBSERVATION, ACTION],
    )
    return {"policy": actor, "actor_network": actor, "qvalue_network": qvalue}


def make_dqn_models(
    env: EnvBase,
    *,
    num_cells: int = 256,
    depth: int = 2,
    activation: str = "relu",
    eps_init: float = 1.0,
    eps_end: float = 0.05,
    annealing_num_steps: int = 10_000,
) -> dict[str, Any]:
    """A Q-network MLP over the discrete actions (a ``QValueActor``) and an epsilon-greedy
    exploration module after it.

    Returns:
        ``{"policy": actor then exploration, "value_network": actor, "exploration": module}``:
        the collector runs the policy; ``exploration.step(frames)`` anneals epsilon (rl-train
        calls it on every collected batch).

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        ValueError: continuous actions, an unknown activation, or no ``"observation"`` entry.
    """
    act = _check("make_dqn_models", env, activation)
    if env.action_spec.dtype.is_floating_point:
        raise ValueError(
            "make_dqn_models: DQN needs discrete actions, got a floating action spec; use a "
            "continuous-control algorithm (SAC) or discretise the actions."
        )
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    n_actions = env.action_spec.shape[-1]
    net = MLP(obs_dim, n_actions, depth=depth, num_cells=num_cells, activation_class=act)
    actor = QValueActor(net, in_keys=[OBSERVATION], spec=env.action_spec)
    explore = EGreedyModule(
        env.action_spec, eps_init=eps_init, eps_end=eps_end,
        annealing_num_steps=annealing_num_steps,
    )  # fmt: skip
    policy = TensorDictSequential(actor, explore)
    return {"policy": policy, "value_network": actor, "exploration": explore}


# TorchRL's config-driven builders (torchrl.trainers.helpers). ``cfg`` is anything with the
# named settings as attributes or keys: an OmegaConf config, a dataclass, a Namespace, a dict.

#: The settings counted in frames, which ``correct_for_frame_skip`` divides by ``frame_skip``.
FRAME_COUNT_SETTINGS = (
    "max_frames_per_traj", "total_frames", "frames_per_batch", "record_frames",
    "annealing_frames", "init_random_frames", "init_env_steps", "noops",
)  # fmt: skip
_UNSET = object()


def _setting(owner: str, cfg: Any, name: str, default: Any = _UNSET) -> Any:
    value = cfg.get(name, default) if isinstance(cfg, dict) else getattr(cfg, name, default)
    if value is _UNSET:
        raise KeyError(f"{owner}: cfg has no {name!r} setting; add it to the config.")
    return value


def _has(cfg: Any, name: str) -> bool:
    return name in cfg if isinstance(cfg, dict) else hasattr(cfg, name)


def correct_for_frame_skip(cfg: Any) -> Any:
    """Divides every frame count of ``cfg`` (:data:`FRAME_COUNT_SETTINGS` that it has) by its
    ``frame_skip``, in place, so that ``total_frames=1_000_000`` with a frame skip of 4 asks
    the env for 1M frames, not 4M: the counts become env steps.

    Args:
        cfg: the settings, with ``frame_skip``; changed in place.

    Returns:
        ``cfg``.

    Raises:
        ValueError: ``frame_skip`` is not a positive int.

    Examples:
        >>> cfg = {"frame_skip": 4, "total_frames": 1000, "frames_per_batch": 64}
        >>> correct_for_frame_skip(cfg)
        {'frame_skip': 4, 'total_frames': 250, 'frames_per_batch': 16}
    """
    frame_skip = _setting("correct_for_frame_skip", cfg, "frame_skip")
    if isinstance(frame_skip, bool) or not isinstance(frame_skip, int) or frame_skip < 1:
        raise ValueError(
            f"correct_for_frame_skip: cfg.frame_skip must be a positive int, got {frame_skip!r}."
        )
    for name in FRAME_COUNT_SETTINGS:
        if not _has(cfg, name):
            continue
        value = _setting("correct_for_frame_skip", cfg, name)
        if value is None:
            continue
        if isinstance(cfg, dict):
            cfg[name] = value // frame_skip
        else:
            setattr(cfg, name, value // frame_skip)
    return cfg


def make_target_updater(cfg: Any, loss_module: Any) -> Any:
    """The target-network updater of a ``"double"`` loss (``cfg.loss``): a
    :class:`~rl_objectives.SoftUpdate` with ``eps = 1 - 1 / value_network_update_interval``,
    or, with ``cfg.hard_update``, a :class:`~rl_objectives.HardUpdate` every
    ``value_network_update_interval`` updates; None for a ``"single"`` loss.

    Raises:
        ValueError: ``cfg.hard_update`` with a single loss (it has no target network), or
            ``cfg.loss`` is neither ``"single"`` nor ``"double"``.
    """
    from rl_objectives import HardUpdate, SoftUpdate

    owner = "make_target_updater"
    loss = _setting(owner, cfg, "loss")
    hard = bool(_setting(owner, cfg, "hard_update", False))
    if loss == "single":
        if hard:
            raise ValueError(
                f"{owner}: cfg.hard_update needs cfg.loss='double' (a single loss has no "
                f"target network to update)."
            )
        return None
    if loss != "double":
        raise ValueError(f"{owner}: cfg.loss must be 'single' or 'double', got {loss!r}.")
    interval = _setting(owner, cfg, "value_network_update_interval")
    if hard:
        return HardUpdate(loss_module, value_network_update_interval=interval)
    return SoftUpdate(loss_module, eps=1 - 1 / interval)


def make_dqn_loss(model: Any, cfg: Any) -> tuple[Any, Any]:
    """A :class:`~rl_objectives.DQNLoss` of the Q-value actor ``model`` (a target network for
    ``cfg.loss="double"``, ``cfg.loss_function``), its TD(0) estimator with ``cfg.gamma``, and
    its target updater (:func:`make_target_updater`).

    Returns:
        ``(loss_module, target_net_updater)``; the updater is None for a single loss.

    Raises:
        ValueError: ``cfg.loss`` is neither ``"single"`` nor ``"double"``, or
            ``cfg.distributional`` is set (build a ``DistributionalDQNLoss`` yourself).
    """
    from rl_objectives import DQNLoss

    owner = "make_dqn_loss"
    loss = _setting(owner, cfg, "loss")
    if loss not in ("single", "double"):
        raise ValueError(f"{owner}: cfg.loss must be 'single' or 'double', got {loss!r}.")
    if _setting(owner, cfg, "distributional", False):
        raise ValueError(
            f"{owner}: cfg.distributional is not built by this helper; build "
            f"rl_objectives.DistributionalDQNLoss with a distributional Q-network."
        )
    loss_module = DQNLoss(
        model,
        loss_function=_setting(owner, cfg, "loss_function", "l2"),
        delay_value=loss == "double",
    )
    loss_module.make_value_estimator(gamma=_setting(owner, cfg, "gamma"))
    return loss_module, make_target_updater(cfg, loss_module)


#: ``cfg.optimizer``'s names in :func:`make_trainer`.
OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "adam": torch.optim.Adam,
    "sgd": torch.optim.SGD,
    "adamax": torch.optim.Adamax,
}


def make_trainer(
    collector: Any,
    loss_module: Any,
    recorder: Any = None,
    target_net_updater: Any = None,
    policy_exploration: Any = None,
    replay_buffer: Any = None,
    logger: Any = None,
    cfg: Any = None,
) -> Any:
    """A :class:`~rl_objectives.trainers.Trainer` of built parts, set up by ``cfg``.

    The optimizer is ``cfg.optimizer`` (``"adam"``, ``"sgd"``, ``"adamax"``) over the loss's
    parameters with ``cfg.lr`` and ``cfg.weight_decay``; ``cfg.lr_scheduler="cosine"`` anneals
    it over all optimisation steps. The trainer collects ``cfg.total_frames`` frames (env steps
    times ``cfg.frame_skip``) with ``cfg.optim_steps_per_batch``, ``cfg.clip_grad_norm``,
    ``cfg.clip_norm``, ``cfg.seed``. Registered: a :class:`ReplayBufferTrainer` of
    ``replay_buffer`` with ``cfg.batch_size``, a :class:`TargetNetUpdaterHook`, the
    exploration module's ``step`` on the collected frames, :class:`UpdateWeights` of the
    collector, :class:`CountFramesLog`, a :class:`RewardNormalizer` with
    ``cfg.normalize_rewards_online``, and a :class:`LogValidationReward` of ``recorder`` every
    ``cfg.record_interval`` steps.

    Raises:
        ValueError: ``cfg`` is None, or ``cfg.optimizer`` or ``cfg.lr_scheduler`` is unknown.
    """
    from rl_objectives.trainers import (
        CountFramesLog,
        LogValidationReward,
        LRSchedulerHook,
        ReplayBufferTrainer,
        RewardNormalizer,
        TargetNetUpdaterHook,
        Trainer,
        UpdateWeights,
    )

    owner = "make_trainer"
    if cfg is None:
        raise ValueError(f"{owner}: cfg is required (the optimizer and the trainer's settings).")
    name = _setting(owner, cfg, "optimizer", "adam")
    if name not in OPTIMIZERS:
        raise ValueError(
            f"{owner}: cfg.optimizer must be one of {sorted(OPTIMIZERS)}, got {name!r}."
        )
    optimizer = OPTIMIZERS[name](
        loss_module.parameters(),
        lr=_setting(owner, cfg, "lr", 3e-4),
        weight_decay=_setting(owner, cfg, "weight_decay", 0.0),
    )
    frame_skip = _setting(owner, cfg, "frame_skip", 1)
    total_frames = _setting(owner, cfg, "total_frames")
    optim_steps = _setting(owner, cfg, "optim_steps_per_batch", 1)
    trainer = Trainer(
        collector,
        total_frames * frame_skip,
        loss_module,
        optimizer,
        logger=logger,
        optim_steps_per_batch=optim_steps,
        clip_grad_norm=_setting(owner, cfg, "clip_grad_norm", True),
        clip_norm=_setting(owner, cfg, "clip_norm", None),
        progress_bar=_setting(owner, cfg, "pbar", False),
        seed=_setting(owner, cfg, "seed", None),
        frame_skip=frame_skip,
    )
    scheduler = _setting(owner, cfg, "lr_scheduler", None)
    if scheduler == "cosine":
        steps = int(total_frames / _setting(owner, cfg, "frames_per_batch") * optim_steps)
        LRSchedulerHook(torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)).register(
            trainer
        )
    elif scheduler not in (None, "", "none"):
        raise ValueError(f"{owner}: cfg.lr_scheduler must be 'cosine' or None, got {scheduler!r}.")
    if replay_buffer is not None:
        ReplayBufferTrainer(replay_buffer, _setting(owner, cfg, "batch_size")).register(trainer)
    if target_net_updater is not None:
        TargetNetUpdaterHook(target_net_updater).register(trainer)
    step = getattr(policy_exploration, "step", None)
    if callable(step):
        trainer.register_op("batch_process", lambda batch: step(batch.numel()))
    UpdateWeights(collector, 1).register(trainer)
    CountFramesLog(frame_skip=frame_skip).register(trainer)
    if _setting(owner, cfg, "normalize_rewards_online", False):
        RewardNormalizer(
            scale=_setting(owner, cfg, "normalize_rewards_online_scale", 1.0)
        ).register(trainer)
    if recorder is not None:
        LogValidationReward(
            record_interval=_setting(owner, cfg, "record_interval"),
            record_frames=_setting(owner, cfg, "record_frames"),
            policy_exploration=policy_exploration,
            environment=recorder,
        ).register(trainer)
    return trainer
