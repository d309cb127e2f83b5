"""TorchRL's env builders of ``torchrl.trainers.helpers``: :func:`transformed_env_constructor`,
:func:`parallel_env_constructor` and :func:`get_stats_random_rollout`.

The settings object ``cfg`` is anything that holds named settings: a mapping (a ``dict``, an
OmegaConf ``DictConfig``), a dataclass or a namespace. A setting it lacks takes the default of
TorchRL's helpers ``EnvConfig`` (``env_library="gym"``, ``frame_skip=1``,
``from_pixels=False``, ``reward_scaling=None``, ``reward_loc=0.0``, ``init_env_steps=1000``,
``vecnorm=False``, ``norm_rewards=False``, ``noops=0``, ``catframes=0``, ``center_crop=[]``,
``grayscale=True``, ``batch_transform=False``, ``image_size=84``,
``categorical_action_encoding=False``) and of its collector settings
(``collector_device="cpu"``, ``env_per_collector=8``); ``env_name`` has none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from copy import copy
from typing import Any

import torch

from rl_core import Compose, EnvBase, InitTracker, StepCounter, TransformedEnv
from rl_envs.batched import EnvCreator, ParallelEnv, env_creator
from rl_envs.libs import DMControlEnv, GymEnv
from rl_envs.transforms import (
    CatFrames,
    CatTensors,
    CenterCrop,
    DoubleToFloat,
    FlattenObservation,
    GrayScale,
    NoopResetEnv,
    ObservationNorm,
    Resize,
    RewardScaling,
    ToTensorImage,
    VecNorm,
    VideoRecorder,
)

__all__ = ["get_stats_random_rollout", "parallel_env_constructor", "transformed_env_constructor"]

#: ``cfg.env_library``'s names.
LIBS: dict[str, type[EnvBase]] = {"gym": GymEnv, "dm_control": DMControlEnv}

_DEFAULTS: dict[str, Any] = {
    "env_library": "gym",
    "env_task": "",
    "frame_skip": 1,
    "from_pixels": False,
    "reward_scaling": None,
    "reward_loc": 0.0,
    "init_env_steps": 1000,
    "vecnorm": False,
    "norm_rewards": False,
    "noops": 0,
    "catframes": 0,
    "center_crop": (),
    "grayscale": True,
    "batch_transform": False,
    "image_size": 84,
    "categorical_action_encoding": False,
    "collector_device": "cpu",
    "env_per_collector": 8,
    "gSDE": False,
}
_UNSET = object()
_NUMBER = (int, float)


def _setting(owner: str, cfg: Any, name: str, kind: type | tuple[type, ...]) -> Any:
    value = cfg.get(name, _UNSET) if isinstance(cfg, Mapping) else getattr(cfg, name, _UNSET)
    if value is _UNSET:
        if name not in _DEFAULTS:
            raise KeyError(f"{owner}: cfg has no {name!r} setting; add it to the config.")
        return _DEFAULTS[name]
    if value is None and _DEFAULTS.get(name, _UNSET) is None:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise TypeError(
            f"{owner}: cfg.{name} must be {' or '.join(k.__name__ for k in kinds)}, got "
            f"{type(value).__name__} ({value!r})."
        )
    return value


def _device(owner: str, cfg: Any) -> Any:
    device = _setting(owner, cfg, "collector_device", (str, torch.device, Sequence))
    if isinstance(device, Sequence) and not isinstance(device, str):
        if not device:
            raise ValueError(f"{owner}: cfg.collector_device is an empty list; name a device.")
        device = device[0]
    return device


def _norm_stats(stats: Mapping[str, Any] | None, state: Mapping[str, Any] | None) -> dict:
    if stats is not None:
        return dict(copy(stats))
    if state is not None:
        return dict(copy(state))
    return {}


def _env_transforms(
    owner: str,
    env: EnvBase,
    cfg: Any,
    *,
    video_tag: str,
    logger: Any,
    env_name: str,
    stats: Mapping[str, Any] | None,
    norm_obs_only: bool,
    obs_norm_state_dict: Mapping[str, Any] | None,
) -> TransformedEnv:
    """TorchRL's ``make_env_transforms``: the transforms its helpers put on every env."""
    if _setting(owner, cfg, "gSDE", bool):
        raise ValueError(
            f"{owner}: cfg.gSDE is not supported here (TorchRL's gSDENoise and gSDE module are "
            f"not built); set gSDE=False."
        )
    env = TransformedEnv(env, Compose())
    from_pixels = _setting(owner, cfg, "from_pixels", bool)
    vecnorm = _setting(owner, cfg, "vecnorm", bool)
    norm_rewards = vecnorm and _setting(owner, cfg, "norm_rewards", bool)
    reward_scaling = _setting(owner, cfg, "reward_scaling", _NUMBER)
    reward_loc = _setting(owner, cfg, "reward_loc", _NUMBER)
    catframes = _setting(owner, cfg, "catframes", int)
    if video_tag:
        env.append_transform(VideoRecorder(logger=logger, tag=f"{video_tag}_{env_name}_video"))
    if from_pixels:
        if catframes < 1:
            raise ValueError(
                f"{owner}: pixel observations need cfg.catframes >= 1 (frames stacked), got "
                f"{catframes}."
            )
        env.append_transform(ToTensorImage())
        center_crop = _setting(owner, cfg, "center_crop", Sequence)
        if center_crop:
            env.append_transform(CenterCrop(*center_crop))
        size = _setting(owner, cfg, "image_size", int)
        env.append_transform(Resize(size, size))
        if _setting(owner, cfg, "grayscale", bool):
            env.append_transform(GrayScale())
        env.append_transform(FlattenObservation(0, -3, allow_positive_dim=True))
        env.append_transform(CatFrames(N=catframes, in_keys=["pixels"], dim=-3))
        obs_stats = _norm_stats(stats, obs_norm_state_dict)
        obs_stats["standard_normal"] = True
        env.append_transform(ObservationNorm(**obs_stats, in_keys=["pixels"]))
    if norm_rewards or norm_obs_only:
        reward_scaling, reward_loc = 1.0, 0.0
    if reward_scaling is not None:
        env.append_transform(RewardScaling(reward_loc, reward_scaling))
    if not from_pixels:
        state_keys = set(env.state_spec.keys(True, True))
        selected = [
            key
            for key in env.observation_spec.keys(True, True)
            if "pixels" not in key and key not in state_keys
        ]
        out_key = "observation_vector"
        env.append_transform(CatTensors(in_keys=selected, out_key=out_key))
        if vecnorm:
            in_keys = [out_key] if (norm_obs_only or not norm_rewards) else [out_key, "reward"]
            env.append_transform(VecNorm(in_keys=in_keys, decay=0.9999))
        else:
            obs_stats = _norm_stats(stats, obs_norm_state_dict)
            obs_stats["standard_normal"] = True
            env.append_transform(ObservationNorm(**obs_stats, in_keys=[out_key]))
        env.append_transform(DoubleToFloat())
        if catframes:
            env.append_transform(CatFrames(N=catframes, in_keys=[out_key], dim=-1))
    else:
        env.append_transform(DoubleToFloat())
    env.append_transform(StepCounter())
    env.append_transform(InitTracker())
    return env


def transformed_env_constructor(
    cfg: Any,
    video_tag: str = "",
    logger: Any = None,
    stats: Mapping[str, Any] | None = None,
    norm_obs_only: bool = False,
    use_env_creator: bool = False,
    custom_env_maker: Callable[..., EnvBase] | None = None,
    custom_env: EnvBase | None = None,
    return_transformed_envs: bool = True,
    action_dim_gsde: int | None = None,
    state_dim_gsde: int | None = None,
    batch_dims: int | None = 0,
    obs_norm_state_dict: Mapping[str, Any] | None = None,
) -> Callable[..., EnvBase] | EnvCreator:
    """An env factory of ``cfg``'s env with TorchRL's trainer transforms.

    The factory builds ``LIBS[cfg.env_library](cfg.env_name, ...)`` (``"gym"``: :class:`GymEnv`
    with ``categorical_action_encoding``; ``"dm_control"``: :class:`DMControlEnv` of
    ``cfg.env_task``) on ``cfg.collector_device`` with ``cfg.frame_skip`` and
    ``cfg.from_pixels`` (its keyword arguments go to the env), or calls ``custom_env_maker``,
    or takes ``custom_env``; ``cfg.noops`` random steps follow each reset (not for a
    ``custom_env``). Unless ``return_transformed_envs=False`` the env is wrapped in a
    :class:`TransformedEnv` with, in order: a :class:`VideoRecorder` (``video_tag``), the pixel
    pipeline (``from_pixels``: :class:`ToTensorImage`, :class:`CenterCrop`, :class:`Resize` to
    ``image_size``, :class:`GrayScale`, :class:`FlattenObservation`, :class:`CatFrames` of
    ``catframes``, :class:`ObservationNorm`), :class:`RewardScaling` (``reward_loc``,
    ``reward_scaling``; none when rewards are normalised), the observations other than pixels
    and state concatenated into ``"observation_vector"`` (:class:`CatTensors`), normalised by an
    :class:`ObservationNorm` of ``stats`` or ``obs_norm_state_dict`` (uninitialised when both
    are None: call its ``init_stats``) or, with ``cfg.vecnorm``, by a :class:`VecNorm` (the
    reward too with ``cfg.norm_rewards`` unless ``norm_obs_only``), :class:`DoubleToFloat`,
    :class:`CatFrames` (``catframes``), :class:`StepCounter` and :class:`InitTracker`.

    Args:
        cfg: the settings; ``env_name`` is required.
        video_tag: record videos to ``logger`` under ``"{video_tag}_{env_name}_video"``.
        logger: the logger of the :class:`VideoRecorder`.
        stats: ``{"loc": ..., "scale": ...}`` of the :class:`ObservationNorm`.
        norm_obs_only: with ``vecnorm``, do not normalise the reward.
        use_env_creator: return an :class:`EnvCreator` (for worker processes).
        custom_env_maker: builds the env instead of ``cfg``'s library.
        custom_env: an env to transform instead of building one.
        return_transformed_envs: ``False`` returns the env without the transforms.
        action_dim_gsde: TorchRL's gSDE noise sizes; gSDE is not built here (``cfg.gSDE``
            must be false), so they are unused.
        state_dim_gsde: see ``action_dim_gsde``.
        batch_dims: TorchRL's batch dims of the env (the transforms here read it from the
            env); kept for its signature.
        obs_norm_state_dict: the :class:`ObservationNorm`'s ``loc``/``scale`` when ``stats``
            is None.

    Returns:
        A callable building the env (an :class:`EnvCreator` with ``use_env_creator``).

    Raises:
        ValueError: both ``custom_env`` and ``custom_env_maker``, and (when the factory is
            called) an unknown ``cfg.env_library``, ``categorical_action_encoding`` with
            another library than gym, pixels without ``catframes``, or ``cfg.gSDE``.
        KeyError: ``cfg`` has no ``env_name`` (when the factory is called).
        TypeError: a setting of the wrong type (named).
    """
    owner = "transformed_env_constructor"
    if custom_env is not None and custom_env_maker is not None:
        raise ValueError(f"{owner}: pass custom_env or custom_env_maker, not both.")
    if custom_env is not None and not isinstance(custom_env, EnvBase):
        raise TypeError(
            f"{owner}: custom_env must be an rl-core EnvBase, got {type(custom_env).__name__}."
        )
    del action_dim_gsde, state_dim_gsde, batch_dims

    def make_transformed_env(**kwargs: Any) -> EnvBase:
        env_name = _setting(owner, cfg, "env_name", str)
        if custom_env is None and custom_env_maker is None:
            library = _setting(owner, cfg, "env_library", str)
            if library not in LIBS:
                raise ValueError(
                    f"{owner}: cfg.env_library must be one of {sorted(LIBS)}, got {library!r}."
                )
            from_pixels = _setting(owner, cfg, "from_pixels", bool)
            env_kwargs: dict[str, Any] = {
                "device": _device(owner, cfg),
                "frame_skip": _setting(owner, cfg, "frame_skip", int),
                "from_pixels": from_pixels or bool(video_tag),
                "pixels_only": from_pixels,
            }
            categorical = _setting(owner, cfg, "categorical_action_encoding", bool)
            if library == "gym":
                env_kwargs["categorical_action_encoding"] = categorical
            elif categorical:
                raise ValueError(
                    f"{owner}: cfg.categorical_action_encoding=True works with "
                    f"env_library='gym' only, got {library!r}."
                )
            else:
                env_kwargs["task_name"] = _setting(owner, cfg, "env_task", str)
            env_kwargs.update(kwargs)
            env = LIBS[library](env_name, **env_kwargs)
        elif custom_env is None:
            env = custom_env_maker(**kwargs)
        else:
            env = custom_env
        noops = _setting(owner, cfg, "noops", int)
        if noops and custom_env is None:
            env = TransformedEnv(env, NoopResetEnv(noops))
        if not return_transformed_envs:
            return env
        return _env_transforms(
            owner, env, cfg, video_tag=video_tag, logger=logger, env_name=env_name,
            stats=stats, norm_obs_only=norm_obs_only, obs_norm_state_dict=obs_norm_state_dict,
        )  # fmt: skip

    if use_env_creator:
        return env_creator(make_transformed_env)
    return make_transformed_env


def parallel_env_constructor(cfg: Any, **kwargs: Any) -> EnvCreator | TransformedEnv:
    """``cfg.env_per_collector`` envs of ``cfg`` in a :class:`ParallelEnv`, with the
    transforms of :func:`transformed_env_constructor` on the batched env (so their statistics
    are shared by all workers); with one env per collector, the :class:`EnvCreator` of that
    env instead.

    Args:
        cfg: the settings; ``cfg.batch_transform`` must be true (TorchRL's only supported
            mode: the transforms run on the batched env).
        **kwargs: keyword arguments of :func:`transformed_env_constructor` (``stats``,
            ``norm_obs_only``, ...).

    Returns:
        The transformed :class:`ParallelEnv`, or an :class:`EnvCreator`.

    Raises:
        ValueError: ``cfg.batch_transform`` is false, or ``cfg.env_per_collector`` below 1.
        TypeError: a setting of the wrong type (named).
    """
    owner = "parallel_env_constructor"
    if not _setting(owner, cfg, "batch_transform", bool):
        raise ValueError(
            f"{owner}: cfg.batch_transform must be True (the transforms run on the batched env, "
            f"so every worker shares their statistics); set batch_transform=True."
        )
    for name in ("cfg", "use_env_creator", "custom_env", "return_transformed_envs"):
        if name in kwargs:
            raise TypeError(f"{owner}: {name} is set by this builder; do not pass it.")
    num_workers = _setting(owner, cfg, "env_per_collector", int)
    if num_workers < 1:
        raise ValueError(f"{owner}: cfg.env_per_collector must be >= 1, got {num_workers}.")
    if num_workers == 1:
        return transformed_env_constructor(cfg, use_env_creator=True, **kwargs)
    make_env = transformed_env_constructor(
        cfg, use_env_creator=True, return_transformed_envs=False, **kwargs
    )
    parallel_env = ParallelEnv(num_workers, make_env)
    return transformed_env_constructor(cfg, custom_env=parallel_env, batch_dims=1, **kwargs)()


@torch.no_grad()
def get_stats_random_rollout(
    cfg: Any, proof_environment: EnvBase | None = None, key: str | None = None
) -> dict[str, torch.Tensor]:
    """The ``loc`` and ``scale`` of an observation over random rollouts, to initialise an
    :class:`ObservationNorm`: rollouts of at most ``cfg.init_env_steps`` steps are run with
    random actions until that many steps are gathered; ``loc`` is the mean of the entry
    ``key`` over the steps and ``scale`` its standard deviation (unbiased), per feature, or
    over all values for ``"pixels"``. A feature that never varies gets ``loc=0``,
    ``scale=1``.

    Args:
        cfg: the settings, with ``init_env_steps``.
        proof_environment: the env to roll out; None builds (and closes) one with
            :func:`transformed_env_constructor` and an identity normalisation.
        key: the observation entry; None takes the env's only observation entry.

    Returns:
        ``{"loc": tensor, "scale": tensor}``.

    Raises:
        ValueError: ``key`` is None and the env has several observation entries, or
            ``cfg.init_env_steps`` is below 1.
        RuntimeError: non-finite statistics.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> stats = get_stats_random_rollout({"init_env_steps": 5}, CountingEnv(10))
        >>> print(sorted(stats), stats["loc"].shape, stats["scale"].shape)
        ['loc', 'scale'] torch.Size([1]) torch.Size([1])
    """
    owner = "get_stats_random_rollout"
    steps = _setting(owner, cfg, "init_env_steps", int)
    if steps < 1:
        raise ValueError(f"{owner}: cfg.init_env_steps must be >= 1, got {steps}.")
    owned = proof_environment is None
    if owned:
        proof_environment = transformed_env_constructor(cfg, stats={"loc": 0.0, "scale": 1.0})()
    elif not isinstance(proof_environment, EnvBase):
        raise TypeError(
            f"{owner}: proof_environment must be an rl-core EnvBase, got "
            f"{type(proof_environment).__name__}."
        )
    try:
        if key is None:
            keys = list(proof_environment.observation_spec.keys(True, True))
            if len(keys) != 1:
                raise ValueError(
                    f"{owner}: the env has {len(keys)} observation entries ({keys}); pass key= "
                    f"to say which one to compute the statistics of."
                )
            key = keys[0]
        gathered, values = 0, []
        while gathered < steps:
            rollout = proof_environment.rollout(max_steps=steps)
            gathered += rollout.numel()
            values.append(rollout.get(key).reshape(-1, *rollout.get(key).shape[rollout.ndim :]))
        data = torch.cat(values, 0).float()
    finally:
        if owned:
            proof_environment.close()
    if key == "pixels":
        loc, scale = data.mean(), data.std()
    else:
        loc, scale = data.mean(dim=0), data.std(dim=0)
    constant = scale == 0
    loc = torch.where(constant, torch.zeros_like(loc), loc)
    scale = torch.where(constant, torch.ones_like(scale), scale)
    if not (torch.isfinite(loc).all() and torch.isfinite(scale).all()):
        raise RuntimeError(
            f"{owner}: non-finite statistics of {key!r} (loc={loc}, scale={scale}); the env "
            f"returned non-finite observations or too few steps (init_env_steps={steps})."
        )
    return {"loc": loc, "scale": scale}
