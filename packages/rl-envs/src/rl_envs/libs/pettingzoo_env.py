"""PettingZooEnv: a PettingZoo task built by name and wrapped."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import re
from collections.abc import Mapping
from typing import Any

import torch

from rl_envs.libs._pettingzoo_groups import import_pettingzoo
from rl_envs.libs.group_map import MarlGroupMapType
from rl_envs.libs.pettingzoo import PettingZooWrapper

_VERSION = re.compile(r"[_-]v(\d+)$")
_MPE_PREFIXES = ("mpe/", "mpe2/")


class PettingZooEnv(PettingZooWrapper):
    """Builds a PettingZoo task by name and wraps it (see :class:`PettingZooWrapper`).

    Task names are PettingZoo registry ids with or without their family
    (``"butterfly/knights_archers_zombies_v11"``, ``"knights_archers_zombies_v11"``,
    ``"tictactoe_v3"``) or MPE tasks of the ``mpe2`` package (``"simple_spread_v3"``).

    Args:
        task: the task name.
        parallel: build the parallel API (all agents act at once); ``False`` builds the AEC
            API (turn-based). Turn-based games such as ``tictactoe_v3`` only have AEC.

    Keyword Args:
        return_state: add the global state as the root entry ``"state"``.
        group_map: ``None``, a :class:`MarlGroupMapType` or ``{group: [agent names]}``.
        use_mask: write the per-agent ``mask`` entry (required with the AEC API).
        categorical_actions: discrete actions as indices rather than one-hot vectors.
        seed: seed of the first reset.
        device: where the TensorDicts live.
        **kwargs: passed to the task's constructor (``max_cycles=25``, ``N=3``, ...).

    Raises:
        ImportError: pettingzoo (or mpe2, for MPE tasks) is not installed.
        ValueError: an unknown task, or ``parallel=True`` for a task without a parallel API.

    Examples:
        >>> from rl_envs.libs import PettingZooEnv
        >>> env = PettingZooEnv("tictactoe_v3", parallel=False, seed=0)
        >>> env.group_map
        {'agents': ['player_1', 'player_2']}
        >>> td = env.reset()
        >>> td["agents", "mask"].tolist(), td["agents", "action_mask"].sum(-1).tolist()
        ([True, False], [9, 0])
    """

    def __init__(
        self,
        task: str,
        parallel: bool = True,
        *,
        return_state: bool = False,
        group_map: MarlGroupMapType | Mapping[str, list[str]] | None = None,
        use_mask: bool = True,
        categorical_actions: bool = True,
        seed: int | None = None,
        device: torch.device | str | None = None,
        **kwargs: Any,
    ) -> None:
        env = _make(task, parallel, kwargs, type(self).__name__)
        super().__init__(
            env,
            return_state=return_state,
            group_map=group_map,
            use_mask=use_mask,
            categorical_actions=categorical_actions,
            seed=seed,
            device=device,
        )
        self.task = task


def _make(task: str, parallel: bool, kwargs: dict[str, Any], owner: str) -> Any:
    if not isinstance(task, str) or not task:
        raise TypeError(f"{owner}: expected a task name such as 'simple_spread_v3', got {task!r}.")
    pettingzoo = import_pettingzoo(owner)
    kind = "parallel" if parallel else "aec"
    registry = pettingzoo.parallel_registry if parallel else pettingzoo.aec_registry
    key = _registry_key(task, registry)
    if key is not None:
        return pettingzoo.make(kind, key, **kwargs)
    if parallel and _registry_key(task, pettingzoo.aec_registry) is not None:
        raise ValueError(
            f"{owner}: {task!r} has no parallel API (its agents take turns); pass "
            f"parallel=False to use the AEC API."
        )
    module = _mpe2_module(task, owner)
    if module is not None:
        return getattr(module, "parallel_env" if parallel else "env")(**kwargs)
    names = sorted({k.rsplit("/", 1)[-1] for k in pettingzoo.aec_registry})
    close = difflib.get_close_matches(_VERSION.sub(r"-v\1", task.rsplit("/", 1)[-1]), names)
    hint = f" Did you mean {close}?" if close else ""
    raise ValueError(
        f"{owner}: unknown task {task!r}: not in the PettingZoo registry ({len(names)} tasks, "
        f"e.g. 'butterfly/pistonball_v6', 'classic/tictactoe_v3') nor an mpe2 task (e.g. "
        f"'simple_spread_v3').{hint}"
    )


def _registry_key(task: str, registry: Mapping[str, Any]) -> str | None:
    """The registry id of ``task`` (``"tictactoe_v3"`` -> ``"classic/tictactoe-v3"``)."""
    name = _VERSION.sub(r"-v\1", task)
    if name in registry:
        return name
    matches = [key for key in registry if key.rsplit("/", 1)[-1] == name]
    return matches[0] if len(matches) == 1 else None


def _mpe2_module(task: str, owner: str) -> Any:
    """The ``mpe2`` module of an MPE task, or ``None`` when ``task`` is not one."""
    name = task
    for prefix in _MPE_PREFIXES:
        name = name.removeprefix(prefix)
    name = _VERSION.sub(r"_v\1", name)
    if not re.fullmatch(r"[a-z0-9_]+", name):
        return None
    if importlib.util.find_spec("mpe2") is None:
        if name.startswith("simple") or task.startswith(_MPE_PREFIXES):
            raise ImportError(
                f'{owner}: the MPE task {task!r} needs mpe2: pip install "rl-envs[pettingzoo]"'
            )
        return None
    try:
        return importlib.import_module(f"mpe2.{name}")
    except ModuleNotFoundError as err:
        if err.name == f"mpe2.{name}":
            return None
        raise


__all__ = ["PettingZooEnv"]
