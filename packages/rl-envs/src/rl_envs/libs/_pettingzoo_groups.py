"""Groups of PettingZoo agents: which agents share a key, and how their data is packed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from rl_core.keys import ACTION, ACTION_MASK, AGENTS, MASK, OBSERVATION
from rl_core.specs import Categorical, Composite
from rl_envs.libs._pettingzoo_spaces import _GroupCodec, leaf_codecs, split_dict_space
from rl_envs.libs.group_map import MarlGroupMapType, check_marl_grouping


def import_pettingzoo(owner: str) -> Any:
    """Imports pettingzoo, or raises an ImportError naming the extra to install."""
    try:
        import pettingzoo
    except ImportError as err:
        raise ImportError(f'{owner} needs pettingzoo: pip install "rl-envs[pettingzoo]"') from err
    return pettingzoo


@dataclass
class _Group:
    """One group: its agents and the codecs of its observation, action mask and action.

    ``observations`` holds ``(key inside the group, path inside a raw observation, codec)``.
    """

    name: str
    agents: list[str]
    observations: list[tuple[tuple[str, ...], tuple[str, ...], _GroupCodec]]
    action: _GroupCodec
    mask_size: int | None

    def observation_spec(self, *, use_mask: bool) -> Composite:
        n = len(self.agents)
        spec = Composite(shape=(n,))
        for key, _, codec in self.observations:
            spec[key] = codec.spec
        if self.mask_size is not None:
            spec[ACTION_MASK] = Categorical(2, shape=(n, self.mask_size), dtype=torch.bool)
        if use_mask:
            spec[MASK] = Categorical(2, shape=(n,), dtype=torch.bool)
        return spec

    def encode_action_mask(self, raw: list[Any]) -> torch.Tensor:
        """The agents' action masks (``None``: no legal action) as a bool tensor ``[n, k]``."""
        rows = [
            np.zeros(self.mask_size, dtype=bool) if m is None else np.asarray(m, dtype=bool)
            for m in raw
        ]
        return torch.from_numpy(np.stack(rows))


def resolve_group_map(
    group_map: MarlGroupMapType | Mapping[str, list[str]] | None,
    agents: list[str],
    obs_spaces: Mapping[str, Any],
    act_spaces: Mapping[str, Any],
    owner: str,
) -> dict[str, list[str]]:
    """The group map as a dict: ``None`` is one ``"agents"`` group when every agent has the
    same spaces, else one group per agent."""
    if group_map is None:
        first = agents[0]
        shared = all(
            obs_spaces[a] == obs_spaces[first] and act_spaces[a] == act_spaces[first]
            for a in agents
        )
        resolved = {AGENTS: list(agents)} if shared else {a: [a] for a in agents}
    elif isinstance(group_map, MarlGroupMapType):
        resolved = group_map.get_group_map(agents)
    elif isinstance(group_map, Mapping):
        resolved = {name: list(members) for name, members in group_map.items()}
    else:
        raise TypeError(
            f"{owner}: expected group_map to be None, a MarlGroupMapType or a dict "
            f"{{group: [agent names]}}, got {type(group_map).__name__}."
        )
    check_marl_grouping(resolved, agents)
    return resolved


def build_groups(
    env: Any, group_map: dict[str, list[str]], owner: str, *, categorical: bool
) -> list[_Group]:
    """Builds the codecs of every group from the agents' spaces."""
    groups = []
    for name, members in group_map.items():
        where = f"{owner}, group {name!r}"
        parts = [split_dict_space(env.observation_space(a)) for a in members]
        mask_spaces = [mask for _, _, mask in parts]
        prefixes = {prefix for _, prefix, _ in parts}
        if len(prefixes) != 1 or len({m is None for m in mask_spaces}) != 1:
            raise ValueError(
                f"{where}: some agents have action masks in their observations and some do "
                f"not; put them in separate groups with group_map."
            )
        prefix = prefixes.pop()
        observations = [
            ((OBSERVATION, *path), (*prefix, *path), codec)
            for path, codec in leaf_codecs(
                [space for space, _, _ in parts], f"{where}, observation"
            )
        ]
        action_spaces = [env.action_space(a) for a in members]
        if type(action_spaces[0]).__name__ == "Dict":
            raise TypeError(
                f"{where}: Dict action spaces are not supported, got {action_spaces[0]!r}. "
                f"Flatten the action space in a PettingZoo wrapper first."
            )
        [(_, action)] = leaf_codecs(action_spaces, f"{where}, {ACTION}", categorical=categorical)
        mask_size = None
        if mask_spaces[0] is not None:
            sizes = {int(np.prod(m.shape)) for m in mask_spaces}
            if len(sizes) != 1:
                raise ValueError(
                    f"{where}: the agents' action masks have different sizes {sorted(sizes)}; "
                    f"put them in separate groups with group_map."
                )
            mask_size = sizes.pop()
        groups.append(_Group(name, list(members), observations, action, mask_size))
    return groups


__all__ = ["_Group", "build_groups", "import_pettingzoo", "resolve_group_map"]
