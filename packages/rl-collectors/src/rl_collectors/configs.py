"""Hydra configs of rl-collectors' collectors (needs ``pip install "rl-collectors[hydra]"``).

Typed dataclasses with a ``_target_``; the env and the policy are not configured here: rl-train
builds them first and passes them when it instantiates the collector
(``instantiate(cfg, env, policy)``). :func:`register_configs` stores them in Hydra's
``ConfigStore`` (group ``collector``) through the ``rl_stack.configs`` entry point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class SyncDataCollectorConfig:
    """:class:`rl_collectors.SyncDataCollector`: steps the env in this process."""

    frames_per_batch: int = 1000
    total_frames: int = -1
    init_random_frames: int = 0
    max_frames_per_traj: int | None = None
    reset_at_each_iter: bool = False
    split_trajs: bool = False
    device: str | None = None
    reset_when_done: bool = True
    _target_: str = "rl_collectors.SyncDataCollector"
    _partial_: bool = True


#: The ``collector`` group's options.
COLLECTOR_CONFIGS: dict[str, type] = {
    "sync": SyncDataCollectorConfig,
}


def register_configs(store: Any = None) -> None:
    """Stores the ``collector`` group's options in Hydra's ``ConfigStore`` (or ``store``).

    Raises:
        ImportError: hydra is not installed (the message gives the install line).
    """
    if store is None:
        try:
            from hydra.core.config_store import ConfigStore
        except ImportError as err:
            raise ImportError(
                'rl_collectors.configs needs hydra-core: pip install "rl-collectors[hydra]"'
            ) from err
        store = ConfigStore.instance()
    for name, node in COLLECTOR_CONFIGS.items():
        store.store(group="collector", name=name, node=node, provider="rl_collectors")
