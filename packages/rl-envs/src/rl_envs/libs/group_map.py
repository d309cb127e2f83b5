"""How the agents of a multi-agent env are grouped under TensorDict keys."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence

from rl_core.keys import AGENTS, DONE_KEYS, NEXT, RESET

# Root keys a group may not take: they hold the episode-level entries.
_RESERVED = frozenset({NEXT, RESET, "state", *DONE_KEYS})
_INDEXED_NAME = re.compile(r"^(.+)_(\d+)$")


class MarlGroupMapType(enum.Enum):
    """Ready-made ways to group agents (each group is one TensorDict key).

    - ``ALL_IN_ONE_GROUP``: every agent under ``"agents"``.
    - ``ONE_GROUP_PER_AGENT``: each agent under its own name.
    - ``BY_NAME_PREFIX``: agents named ``<prefix>_<number>`` under ``<prefix>``
      (``"adversary_0"`` in ``"adversary"``); other names form their own group.

    Examples:
        >>> from rl_envs.libs import MarlGroupMapType
        >>> names = ["adversary_0", "agent_0", "agent_1"]
        >>> MarlGroupMapType.BY_NAME_PREFIX.get_group_map(names)
        {'adversary': ['adversary_0'], 'agent': ['agent_0', 'agent_1']}
        >>> MarlGroupMapType.ALL_IN_ONE_GROUP.get_group_map(names)
        {'agents': ['adversary_0', 'agent_0', 'agent_1']}
    """

    ALL_IN_ONE_GROUP = 1
    ONE_GROUP_PER_AGENT = 2
    BY_NAME_PREFIX = 3

    def get_group_map(self, agent_names: Sequence[str]) -> dict[str, list[str]]:
        """The group map ``{group: [agent names]}`` of ``agent_names``, in their order.

        Args:
            agent_names: the names of the agents.

        Returns:
            A dict from group name to the names of its agents.
        """
        names = list(agent_names)
        if self is MarlGroupMapType.ALL_IN_ONE_GROUP:
            return {AGENTS: names}
        if self is MarlGroupMapType.ONE_GROUP_PER_AGENT:
            return {name: [name] for name in names}
        groups: dict[str, list[str]] = {}
        for name in names:
            match = _INDEXED_NAME.match(name)
            groups.setdefault(match.group(1) if match else name, []).append(name)
        return groups


def check_marl_grouping(group_map: Mapping[str, Sequence[str]], agent_names: Sequence[str]) -> None:
    """Checks that ``group_map`` puts every agent in exactly one non-empty group.

    Args:
        group_map: ``{group name: [agent names]}``.
        agent_names: the names of all the agents of the env.

    Raises:
        TypeError: ``group_map`` is not a mapping of group names to lists of agent names.
        ValueError: a group is empty or has a reserved name, an agent is missing, unknown, or
            in more than one group.

    Examples:
        >>> from rl_envs.libs import check_marl_grouping
        >>> check_marl_grouping({"team": ["a", "b"]}, ["a", "b"])
        >>> try:
        ...     check_marl_grouping({"team": ["a"]}, ["a", "b"])
        ... except ValueError as err:
        ...     print(str(err).split(".")[0])
        check_marl_grouping: agents ['b'] are in no group
    """
    if not isinstance(group_map, Mapping):
        raise TypeError(
            f"check_marl_grouping: expected a dict {{group: [agent names]}}, got "
            f"{type(group_map).__name__}."
        )
    known = set(agent_names)
    seen: dict[str, str] = {}
    for group, members in group_map.items():
        if not isinstance(group, str) or not group:
            raise TypeError(f"check_marl_grouping: group names are non-empty str, got {group!r}.")
        if group in _RESERVED:
            raise ValueError(
                f"check_marl_grouping: the group name {group!r} is reserved for the root "
                f"entries {sorted(_RESERVED)}; rename the group."
            )
        if isinstance(members, str) or not isinstance(members, Sequence):
            raise TypeError(
                f"check_marl_grouping: group {group!r} must list agent names, got {members!r}."
            )
        if not members:
            raise ValueError(f"check_marl_grouping: group {group!r} is empty; drop it.")
        for agent in members:
            if agent not in known:
                raise ValueError(
                    f"check_marl_grouping: group {group!r} names {agent!r}, which is not an "
                    f"agent of the env (agents: {list(agent_names)})."
                )
            if agent in seen:
                raise ValueError(
                    f"check_marl_grouping: agent {agent!r} is in groups {seen[agent]!r} and "
                    f"{group!r}; put each agent in one group."
                )
            seen[agent] = group
    missing = [agent for agent in agent_names if agent not in seen]
    if missing:
        raise ValueError(
            f"check_marl_grouping: agents {missing} are in no group. Add them to a group of "
            f"group_map."
        )


__all__ = ["MarlGroupMapType", "check_marl_grouping"]
