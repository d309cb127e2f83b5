"""A centralised critic over several agent groups: :class:`CrossGroupCritic`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch
from tensordict.nn import TensorDictModule
from torch import nn

from rl_core.keys import NestedKey


@dataclass
class CrossCriticGroupSpec:
    """One agent group seen by :class:`CrossGroupCritic`.

    Args:
        obs_dim: features of one agent's observation.
        n_agents: agents in the group.
        obs_key: where the group's ``[*B, n_agents, obs_dim]`` observations are read, e.g.
            ``("soldiers", "observation")``.
        value_key: where the group's ``[*B, n_agents, 1]`` values are written, e.g.
            ``("soldiers", "state_value")``.
    """

    obs_dim: int
    n_agents: int
    obs_key: NestedKey
    value_key: NestedKey


class _CrossGroupNet(nn.Module):
    """Per-group encoders, one trunk over the whole team, per-group (or one shared) heads."""

    def __init__(
        self,
        group_map: Mapping[str, CrossCriticGroupSpec],
        *,
        d_model: int,
        trunk_depth: int,
        trunk_cells: int,
        activation_class: type[nn.Module],
        share_params: bool,
        detach_groups: frozenset[str],
        device: torch.device | str | None,
    ) -> None:
        super().__init__()
        self.group_map = dict(group_map)
        self.detach_groups = detach_groups
        self.share_params = share_params
        self.encoders = nn.ModuleDict(
            {
                name: nn.Sequential(
                    nn.Linear(spec.obs_dim, d_model, device=device), activation_class()
                )
                for name, spec in self.group_map.items()
            }
        )
        width = d_model * sum(spec.n_agents for spec in self.group_map.values())
        layers: list[nn.Module] = []
        for _ in range(trunk_depth):
            layers += [nn.Linear(width, trunk_cells, device=device), activation_class()]
            width = trunk_cells
        self.trunk = nn.Sequential(*layers)
        if share_params:
            self.heads = nn.ModuleDict({"team": nn.Linear(width, 1, device=device)})
        else:
            self.heads = nn.ModuleDict(
                {
                    name: nn.Linear(width, spec.n_agents, device=device)
                    for name, spec in self.group_map.items()
                }
            )

    def forward(self, *observations: torch.Tensor) -> tuple[torch.Tensor, ...]:
        embedded = []
        for (name, spec), obs in zip(self.group_map.items(), observations, strict=True):
            if obs.ndim < 2 or tuple(obs.shape[-2:]) != (spec.n_agents, spec.obs_dim):
                raise ValueError(
                    f"CrossGroupCritic: expected group {name!r}'s observations to end in "
                    f"[n_agents, obs_dim]=[{spec.n_agents}, {spec.obs_dim}], got shape "
                    f"{list(obs.shape)}."
                )
            z = self.encoders[name](obs)
            if name in self.detach_groups:
                z = z.detach()
            embedded.append(z.flatten(-2, -1))
        batch = torch.broadcast_shapes(*(z.shape[:-1] for z in embedded))
        team = torch.cat([z.expand(*batch, z.shape[-1]) for z in embedded], -1)
        hidden = self.trunk(team)
        if self.share_params:
            value = self.heads["team"](hidden).unsqueeze(-1)  # [*B, 1, 1]
            return tuple(value.expand(*batch, spec.n_agents, 1) for spec in self.group_map.values())
        return tuple(self.heads[name](hidden).unsqueeze(-1) for name in self.group_map)


class CrossGroupCritic(TensorDictModule):
    """A centralised critic that sees the observations of every agent group.

    :class:`MultiAgentMLP` centralises within one group. This critic reads the observations
    of any number of groups, each with its own observation size: each group's agents are
    embedded by the group's own encoder (``Linear(obs_dim -> d_model)`` and the activation),
    the embeddings of all agents of all groups are concatenated into one team state, a trunk
    of ``trunk_depth`` layers of ``trunk_cells`` units processes it, and a head per group
    writes one value per agent of that group (``[*B, n_agents, 1]`` at its ``value_key``).
    With ``share_params=True`` one head gives a single team value, written for every agent
    of every group.

    A group named in ``detach_groups`` (e.g. teammates following a fixed policy) still
    informs the team state, but its embeddings are detached: no gradient of the critic's
    loss reaches that group's encoder or observations.

    It is a plain ``TensorDictModule``, so it serves as the critic of ``MAPPOLoss`` /
    ``IPPOLoss`` or of a value estimator as any other.

    Args:
        group_map: group names to their :class:`CrossCriticGroupSpec` (in order).

    Keyword Args:
        d_model: the embedding size of one agent. Defaults to 64.
        trunk_depth: hidden layers of the trunk. Defaults to 2.
        trunk_cells: units per trunk layer. Defaults to 256.
        activation_class: activation of the encoders and the trunk. Defaults to ``nn.Tanh``.
        share_params: one team value for all groups instead of a head per group. Defaults
            to ``False``.
        detach_groups: names of groups whose embeddings are detached. Defaults to none.
        device: device of the parameters.

    Raises:
        ValueError: an empty ``group_map``, a non-positive size, an unknown name in
            ``detach_groups``, or observations of the wrong shape.
        TypeError: a ``group_map`` value that is not a :class:`CrossCriticGroupSpec`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.modules import CrossCriticGroupSpec, CrossGroupCritic
        >>> critic = CrossGroupCritic(
        ...     {
        ...         "red": CrossCriticGroupSpec(4, 2, ("red", "observation"), ("red", "state_value")),
        ...         "blue": CrossCriticGroupSpec(6, 3, ("blue", "observation"), ("blue", "state_value")),
        ...     },
        ...     d_model=8, trunk_cells=16,
        ... )
        >>> td = TensorDict(
        ...     {("red", "observation"): torch.zeros(5, 2, 4), ("blue", "observation"): torch.zeros(5, 3, 6)},
        ...     batch_size=[5],
        ... )
        >>> out = critic(td)
        >>> out["red", "state_value"].shape, out["blue", "state_value"].shape
        (torch.Size([5, 2, 1]), torch.Size([5, 3, 1]))
    """

    def __init__(
        self,
        group_map: Mapping[str, CrossCriticGroupSpec],
        *,
        d_model: int = 64,
        trunk_depth: int = 2,
        trunk_cells: int = 256,
        activation_class: type[nn.Module] = nn.Tanh,
        share_params: bool = False,
        detach_groups: Iterable[str] = (),
        device: torch.device | str | None = None,
    ) -> None:
        if not isinstance(group_map, Mapping) or not group_map:
            raise ValueError(
                f"CrossGroupCritic: expected a non-empty mapping of group names to "
                f"CrossCriticGroupSpec, got {group_map!r}."
            )
        for name, spec in group_map.items():
            if not isinstance(spec, CrossCriticGroupSpec):
                raise TypeError(
                    f"CrossGroupCritic: expected a CrossCriticGroupSpec for group {name!r}, got "
                    f"{type(spec).__name__}."
                )
            if spec.obs_dim <= 0 or spec.n_agents <= 0:
                raise ValueError(
                    f"CrossGroupCritic: group {name!r} needs obs_dim > 0 and n_agents > 0, got "
                    f"obs_dim={spec.obs_dim}, n_agents={spec.n_agents}."
                )
        for name, value in (("d_model", d_model), ("trunk_cells", trunk_cells)):
            if value <= 0:
                raise ValueError(f"CrossGroupCritic: expected {name} > 0, got {value}.")
        if trunk_depth < 0:
            raise ValueError(f"CrossGroupCritic: expected trunk_depth >= 0, got {trunk_depth}.")
        detached = frozenset(detach_groups)
        unknown = sorted(detached - set(group_map))
        if unknown:
            raise ValueError(
                f"CrossGroupCritic: detach_groups names {unknown}, which are not groups of "
                f"group_map ({list(group_map)})."
            )
        net = _CrossGroupNet(
            group_map,
            d_model=d_model,
            trunk_depth=trunk_depth,
            trunk_cells=trunk_cells,
            activation_class=activation_class,
            share_params=share_params,
            detach_groups=detached,
            device=device,
        )
        super().__init__(
            net,
            in_keys=[spec.obs_key for spec in group_map.values()],
            out_keys=[spec.value_key for spec in group_map.values()],
        )
        self.group_map = dict(group_map)


__all__ = ["CrossCriticGroupSpec", "CrossGroupCritic"]
