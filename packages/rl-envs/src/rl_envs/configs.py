"""Hydra configs of rl-envs' environments and transforms, and of rl-core's ``TransformedEnv``,
transforms and batched envs (needs ``pip install "rl-envs[hydra]"``).

Each config is a typed dataclass whose ``_target_`` names its class, so
``hydra.utils.instantiate(GymEnvConfig(env_name="CartPole-v1"))`` builds a ``GymEnv``. Keys
and types are checked when a config is composed: an unknown key or a value of the wrong type
fails there, naming the key. :func:`register_configs` stores them in Hydra's ``ConfigStore``
(groups ``env`` and ``transform``); rl-train calls it through the ``rl_stack.configs`` entry
point.

The transform configs (``StepCounterConfig``, ``ComposeConfig``, ... : one per transform of
rl-core's and of rl-envs' catalogue, in :data:`TRANSFORM_CONFIGS`), those of the env
libraries' envs (:data:`LIBRARY_ENV_CONFIGS`) and of the batched envs are derived from their
constructors by one rule, :func:`config_of`. Importing this module
does not import hydra; only :func:`register_configs` does.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, make_dataclass
from typing import Any, Optional

import rl_core
from rl_core import Compose, EnvBase, TransformedEnv
from rl_envs import transforms as _catalogue
from rl_envs.batched import ParallelEnv, SerialEnv
from rl_envs.libs import (
    BraxEnv,
    DMControlEnv,
    JumanjiEnv,
    MOGymEnv,
    MultiThreadedEnv,
    OpenSpielEnv,
    PettingZooEnv,
    VmasEnv,
)
from rl_envs.transforms import ExcludeTransform, SelectTransform


@dataclass
class GymEnvConfig:
    """:class:`rl_envs.GymEnv`: a gymnasium task, ``num_envs`` copies in one vector env
    (0: a single env)."""

    env_name: str = "CartPole-v1"
    num_envs: int = 0
    from_pixels: bool = False
    pixels_only: bool = True
    frame_skip: int | None = None
    device: str | None = None
    categorical_action_encoding: bool = False
    vectorization_mode: str = "sync"
    _target_: str = "rl_envs.GymEnv"


@dataclass
class PendulumEnvConfig:
    """:class:`rl_envs.PendulumEnv`: the torch-native Pendulum swing-up, batched."""

    g: float = 10.0
    batch_size: list[int] = field(default_factory=list)
    device: str | None = None
    _target_: str = "rl_envs.PendulumEnv"


@dataclass
class CartPoleEnvConfig:
    """:class:`rl_envs.CartPoleEnv`: the torch-native CartPole, batched."""

    batch_size: list[int] = field(default_factory=list)
    device: str | None = None
    _target_: str = "rl_envs.CartPoleEnv"


# Configs derived from a constructor: one rule for every transform and batched env.
#
# A config's fields are the parameters of its target. Its ``_target_`` is the class, except
# where TorchRL's config names its fields otherwise than the class its arguments (a ``*args``
# parameter, ``TransformedEnv``'s ``base_env``): there it is a builder below that takes
# TorchRL's names and calls the class. A parameter with a default that a YAML file cannot
# write (a tuple key, a dtype, a callable) is left out: the class's default applies.

_MISSING = "???"  # OmegaConf's mandatory value: a required argument not given yet
_PLAIN_TYPES: dict[str, Any] = {"int": int, "float": float, "bool": bool, "str": str}


def compose(transforms: Sequence[rl_core.Transform]) -> Compose:
    """``ComposeConfig``'s target: ``Compose(*transforms)``, from TorchRL's ``transforms`` list.

    Examples:
        >>> from rl_core import StepCounter, InitTracker
        >>> len(compose([StepCounter(), InitTracker()]))
        2
    """
    return Compose(*transforms)


def exclude_transform(exclude_keys: Sequence[Any]) -> ExcludeTransform:
    """``ExcludeTransformConfig``'s target: ``ExcludeTransform(*exclude_keys)`` (TorchRL's
    field name)."""
    return ExcludeTransform(*exclude_keys)


def select_transform(
    include_keys: Sequence[Any], keep_rewards: bool = True, keep_dones: bool = True
) -> SelectTransform:
    """``SelectTransformConfig``'s target: ``SelectTransform(*include_keys, ...)`` (TorchRL's
    field name)."""
    return SelectTransform(*include_keys, keep_rewards=keep_rewards, keep_dones=keep_dones)


def transformed_env(
    base_env: EnvBase, transform: rl_core.Transform | None = None
) -> TransformedEnv:
    """``TransformedEnvConfig``'s target: ``TransformedEnv(base_env, transform)`` (TorchRL's
    field name ``base_env``).

    Raises:
        TypeError: ``base_env`` is not an env (its config lacks a ``_target_``, say).
    """
    if not isinstance(base_env, EnvBase):
        raise TypeError(
            f"TransformedEnvConfig.base_env: expected an env (a config with a _target_ such as "
            f"rl_envs.GymEnv), got {type(base_env).__name__}. Give base_env a _target_."
        )
    return TransformedEnv(base_env, transform)


def batched_env(
    create_env_fn: Callable[..., EnvBase],
    num_workers: int = 1,
    create_env_kwargs: dict[str, Any] | None = None,
    batched_env_type: str = "parallel",
    device: str | None = None,
) -> SerialEnv | ParallelEnv:
    """``BatchedEnvConfig``'s target: a ``SerialEnv`` or ``ParallelEnv`` of ``num_workers``
    envs that ``create_env_fn`` builds (a config with ``_partial_: true``), as TorchRL's.

    Raises:
        TypeError: ``create_env_fn`` is not callable (an env built once cannot be shared by
            workers: give its config ``_partial_: true``).
        ValueError: ``batched_env_type`` is neither ``"serial"`` nor ``"parallel"``.
    """
    if not callable(create_env_fn) or isinstance(create_env_fn, EnvBase):
        raise TypeError(
            f"BatchedEnvConfig.create_env_fn: expected a callable that builds an env, got "
            f"{type(create_env_fn).__name__}. Add `_partial_: true` to its config."
        )
    classes = {"serial": SerialEnv, "parallel": ParallelEnv}
    if batched_env_type not in classes:
        raise ValueError(
            f"BatchedEnvConfig.batched_env_type: expected 'serial' or 'parallel', got "
            f"{batched_env_type!r} (TorchRL's 'async' pool is not built here)."
        )
    return classes[batched_env_type](
        num_workers, create_env_fn, create_env_kwargs=create_env_kwargs, device=device
    )


def _field_type(annotation: Any) -> Any:
    """``int``, ``float``, ``bool``, ``str`` or their ``| None`` forms, checked by OmegaConf;
    anything else (keys, tensors, nested configs) is ``Any``."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    parts = [p.strip() for p in text.split("|")]
    optional = "None" in parts
    rest = [p for p in parts if p != "None"]
    if len(rest) != 1 or rest[0] not in _PLAIN_TYPES:
        return Any
    return Optional[_PLAIN_TYPES[rest[0]]] if optional else _PLAIN_TYPES[rest[0]]  # noqa: UP045


def _writable(value: Any) -> bool:
    """Whether a default is a value a YAML file writes back as itself."""
    if isinstance(value, float) and math.isnan(value):
        return False
    return value is None or type(value) in (bool, int, float, str)


def config_of(target: Callable[..., Any], name: str, target_path: str) -> type:
    """A typed config dataclass ``name`` whose fields are ``target``'s parameters.

    A required parameter becomes a mandatory field (``???``), a parameter with a plain default
    (``None``, a bool, number or string) a field with that default, an empty tuple (a batch
    size) an empty list; the others (``*args``, ``**kwargs``, private ``_x``, a key tuple, an
    enum or dtype default) are left out. ``_convert_`` is ``"all"``, so lists and dicts reach
    the class as Python lists and dicts.

    Args:
        target: the class or builder the config calls.
        name: the config class's name (``StepCounterConfig``).
        target_path: the dotted path written in ``_target_``.

    Returns:
        The dataclass; ``instantiate`` of it (with the mandatory fields given) calls ``target``.

    Examples:
        >>> from rl_core import StepCounter
        >>> cfg = config_of(StepCounter, "StepCounterConfig", "rl_core.StepCounter")
        >>> cfg(max_steps=5).max_steps, cfg._target_
        (5, 'rl_core.StepCounter')
    """
    fields: list[tuple[str, Any, Any]] = []
    for param in inspect.signature(target).parameters.values():
        if param.name.startswith("_") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.default is param.empty:
            spec = field(default=_MISSING)
        elif _writable(param.default):
            spec = field(default=param.default)
        elif param.default == ():  # an empty batch size: a list in YAML
            spec = field(default_factory=list)
        else:
            continue
        fields.append((param.name, _field_type(param.annotation), spec))
    fields.append(("_target_", str, field(default=target_path)))
    fields.append(("_convert_", str, field(default="all")))
    doc = f":class:`{target_path}` (fields: its arguments; derived by :func:`config_of`)."
    return make_dataclass(name, fields, namespace={"__doc__": doc, "__module__": __name__})


# TorchRL's field names where they differ from the class's arguments: the builder to call.
_BUILDERS: dict[type, Callable[..., Any]] = {
    Compose: compose,
    ExcludeTransform: exclude_transform,
    SelectTransform: select_transform,
}


def _transform_classes() -> dict[str, tuple[type, str]]:
    """rl-core's transforms and rl-envs' catalogue: name -> (class, public dotted path)."""
    found = {
        name: (getattr(rl_core, name), f"rl_core.{name}")
        for name in ("Compose", "StepCounter", "InitTracker", "TensorDictPrimer")
    }
    for name in _catalogue.__all__:
        obj = getattr(_catalogue, name)
        if isinstance(obj, type) and issubclass(obj, rl_core.Transform) and name not in found:
            found[name] = (obj, f"rl_envs.transforms.{name}")
    return found


def _derived(cls: type, name: str, path: str) -> type:
    builder = _BUILDERS.get(cls)
    if builder is None:
        return config_of(cls, name, path)
    return config_of(builder, name, f"{__name__}.{builder.__name__}")


#: ``<Transform>Config`` for each transform: transform name -> config class.
TRANSFORM_CONFIGS: dict[str, type] = {
    name: _derived(cls, f"{name}Config", path) for name, (cls, path) in _transform_classes().items()
}


@dataclass
class TransformedEnvConfig:
    """:class:`rl_core.TransformedEnv` of ``base_env`` (an env config, mandatory) and
    ``transform`` (a transform config, a ``ComposeConfig`` for several), TorchRL's fields.

    In rl-train: ``env=transformed_env +env@env.base_env=gym env.base_env.env_name=...``
    and ``env.transform={_target_:rl_core.StepCounter,max_steps:200}``.
    """

    base_env: Any = _MISSING
    transform: Any = None
    _target_: str = "rl_envs.configs.transformed_env"


# The env libraries' envs (TorchRL's envs_libs configs), derived the same way; each class
# raises its install line when its library is absent.
_LIBRARY_ENVS: dict[str, type] = {
    "mo_gym": MOGymEnv,
    "brax": BraxEnv,
    "dm_control": DMControlEnv,
    "jumanji": JumanjiEnv,
    "openspiel": OpenSpielEnv,
    "pettingzoo": PettingZooEnv,
    "vmas": VmasEnv,
    "multi_threaded": MultiThreadedEnv,
}
#: ``<Env>Config`` of each env library's env: group option -> config class.
LIBRARY_ENV_CONFIGS: dict[str, type] = {
    option: config_of(cls, f"{cls.__name__}Config", f"rl_envs.{cls.__name__}")
    for option, cls in _LIBRARY_ENVS.items()
}
BatchedEnvConfig = config_of(batched_env, "BatchedEnvConfig", f"{__name__}.batched_env")
SerialEnvConfig = config_of(SerialEnv, "SerialEnvConfig", "rl_envs.SerialEnv")
ParallelEnvConfig = config_of(ParallelEnv, "ParallelEnvConfig", "rl_envs.ParallelEnv")
globals().update({cfg.__name__: cfg for cfg in TRANSFORM_CONFIGS.values()})
globals().update({cfg.__name__: cfg for cfg in LIBRARY_ENV_CONFIGS.values()})


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


#: The ``env`` group's options: name -> config class.
ENV_CONFIGS: dict[str, type] = {
    "gym": GymEnvConfig,
    "pendulum": PendulumEnvConfig,
    "cartpole": CartPoleEnvConfig,
    "transformed_env": TransformedEnvConfig,
    "batched_env": BatchedEnvConfig,
    "serial_env": SerialEnvConfig,
    "parallel_env": ParallelEnvConfig,
    **LIBRARY_ENV_CONFIGS,
}


def register_configs(store: Any = None) -> None:
    """Stores the ``env`` and ``transform`` groups' options in Hydra's ``ConfigStore`` (or
    ``store``); a transform's option is its snake-case name (``step_counter``).

    Raises:
        ImportError: hydra is not installed (the message gives the install line).
    """
    if store is None:
        try:
            from hydra.core.config_store import ConfigStore
        except ImportError as err:
            raise ImportError(
                'rl_envs.configs needs hydra-core: pip install "rl-envs[hydra]"'
            ) from err
        store = ConfigStore.instance()
    for name, node in ENV_CONFIGS.items():
        store.store(group="env", name=name, node=node, provider="rl_envs")
    for name, node in TRANSFORM_CONFIGS.items():
        store.store(group="transform", name=_snake(name), node=node, provider="rl_envs")
