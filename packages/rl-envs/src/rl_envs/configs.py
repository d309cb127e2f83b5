"""Hydra configs of rl-envs' environments (needs ``pip install "rl-envs[hydra]"``).

Each config is a typed dataclass whose ``_target_`` names its class, so
``hydra.utils.instantiate(GymEnvConfig(env_name="CartPole-v1"))`` builds a ``GymEnv``. Keys
and types are checked when a config is composed: an unknown key or a value of the wrong type
fails there, naming the key. :func:`register_configs` stores them in Hydra's ``ConfigStore``
(group ``env``); rl-train calls it through the ``rl_stack.configs`` entry point.

Importing this module does not import hydra; only :func:`register_configs` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


#: The ``env`` group's options: name -> config class.
ENV_CONFIGS: dict[str, type] = {
    "gym": GymEnvConfig,
    "pendulum": PendulumEnvConfig,
    "cartpole": CartPoleEnvConfig,
}


def register_configs(store: Any = None) -> None:
    """Stores the ``env`` group's options in Hydra's ``ConfigStore`` (or ``store``).

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
