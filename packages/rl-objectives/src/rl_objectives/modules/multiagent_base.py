"""The base of networks over a group of agents: :class:`MultiAgentNetBase`."""

from __future__ import annotations

import abc
import copy
from typing import Any

import torch
from tensordict import TensorDict
from torch import nn

__all__ = ["MultiAgentNetBase"]


class MultiAgentNetBase(nn.Module, abc.ABC):
    """A network per agent (or one shared), run for every agent at once with ``torch.vmap``.

    A subclass says how to build one agent's network and how to shape the input:

    - ``_build_single_net(*, device, **kwargs) -> nn.Module``: one agent's network, built
      from the constructor's extra keyword arguments.
    - ``_pre_forward_check(inputs) -> Tensor``: checks the input ``[*B, n_agents, ...]`` and
      returns what each network reads (a centralised network flattens the agents' inputs into
      one, for instance).

    Independent parameters (``share_params=False``) are stacked along a leading agent
    dimension in :attr:`params` and evaluated in one ``torch.vmap`` call, over the agents'
    slices of the input (decentralised) or over the whole input (centralised). Shared
    parameters run one network; a centralised shared network's single output is repeated for
    every agent. The output has the agents at ``agent_dim``.

    Keyword Args:
        n_agents: number of agents, ``>= 1``.
        centralized: whether each agent's network reads every agent's input.
        share_params: whether the agents share one network.
        agent_dim: the agents' dimension of the input (and output), e.g. ``-2``.
        vmap_randomness: ``torch.vmap``'s ``randomness`` (``"different"``, ``"same"`` or
            ``"error"``). Defaults to ``"different"``.
        use_td_params: hold :attr:`params` as a ``TensorDictParams`` (registered parameters).
            Defaults to ``True``.
        **kwargs: passed to ``_build_single_net``.

    Raises:
        TypeError: ``centralized``, ``share_params`` or ``agent_dim`` not given.
        ValueError: a bad ``n_agents`` or ``vmap_randomness``, a lazy network, or (at call
            time) an output without ``n_agents`` entries at ``agent_dim``.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> from rl_objectives.modules import MultiAgentNetBase
        >>> class PerAgentLinear(MultiAgentNetBase):
        ...     def _build_single_net(self, *, device, n_in, n_out):
        ...         return nn.Linear(n_in, n_out, device=device)
        ...     def _pre_forward_check(self, inputs):
        ...         return inputs
        >>> net = PerAgentLinear(n_agents=3, centralized=False, share_params=False,
        ...     agent_dim=-2, n_in=4, n_out=2)
        >>> net(torch.randn(5, 3, 4)).shape
        torch.Size([5, 3, 2])
    """

    def __init__(
        self,
        *,
        n_agents: int,
        centralized: bool | None = None,
        share_params: bool | None = None,
        agent_dim: int | None = None,
        vmap_randomness: str = "different",
        use_td_params: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        owner = type(self).__name__
        centralized = kwargs.pop("centralised", centralized)
        for name, value in (
            ("centralized", centralized),
            ("share_params", share_params),
            ("agent_dim", agent_dim),
        ):
            if value is None:
                raise TypeError(f"{owner}: the keyword argument {name} must be given.")
        if isinstance(n_agents, bool) or not isinstance(n_agents, int) or n_agents < 1:
            raise ValueError(f"{owner}: expected n_agents to be an integer >= 1, got {n_agents!r}.")
        if vmap_randomness not in ("different", "same", "error"):
            raise ValueError(
                f"{owner}: expected vmap_randomness 'different', 'same' or 'error', got "
                f"{vmap_randomness!r}."
            )
        self.n_agents = n_agents
        self.centralized = bool(centralized)
        self.share_params = bool(share_params)
        self.agent_dim = int(agent_dim)
        self.vmap_randomness = vmap_randomness
        self.use_td_params = use_td_params
        device = kwargs.pop("device", None)
        nets = [
            self._build_single_net(device=device, **kwargs)
            for _ in range(1 if self.share_params else n_agents)
        ]
        if any(isinstance(p, nn.parameter.UninitializedParameter) for p in nets[0].parameters()):
            raise ValueError(
                f"{owner}: the network built by _build_single_net has lazy (uninitialised) "
                f"parameters; build it with explicit input sizes."
            )
        if self.share_params:
            self.params = TensorDict.from_module(nets[0], as_module=use_td_params)
        else:
            self.params = TensorDict.from_modules(*nets, as_module=use_td_params)
        # a parameter-less copy that each agent's parameters are loaded into; kept out of the
        # submodules so that it holds no state
        self.__dict__["_empty_net"] = copy.deepcopy(nets[0]).to("meta")

    @abc.abstractmethod
    def _build_single_net(self, *, device: Any, **kwargs: Any) -> nn.Module:
        """One agent's network."""

    @abc.abstractmethod
    def _pre_forward_check(self, inputs: torch.Tensor) -> torch.Tensor:
        """Checks and reshapes the input for the networks."""

    def _run(self, params: TensorDict, x: torch.Tensor) -> torch.Tensor:
        with params.to_module(self.__dict__["_empty_net"]):
            return self.__dict__["_empty_net"](x)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        """Runs the agents' networks; several inputs are concatenated on the last dim first."""
        x = torch.cat(list(inputs), dim=-1) if len(inputs) > 1 else inputs[0]
        agent_dim = self.agent_dim if self.agent_dim >= 0 else x.dim() + self.agent_dim
        x = self._pre_forward_check(x)
        if not self.share_params:
            in_dims = (0, None) if self.centralized else (0, agent_dim)
            out = torch.vmap(
                self._run, in_dims=in_dims, out_dims=agent_dim, randomness=self.vmap_randomness
            )(self.params, x)
        else:
            out = self._run(self.params, x)
            if self.centralized:
                out = out.unsqueeze(agent_dim)
                sizes = [-1] * out.dim()
                sizes[agent_dim] = self.n_agents
                out = out.expand(*sizes)
        if out.dim() <= agent_dim or out.shape[agent_dim] != self.n_agents:
            raise ValueError(
                f"{type(self).__name__}: expected an output with {self.n_agents} agents at dim "
                f"{agent_dim}, got shape {tuple(out.shape)}."
            )
        return out

    def get_stateful_net(self, copy: bool = True) -> nn.Module:
        """A module holding the parameters (stacked over agents, unless shared), for
        initialisation with ``torch.nn.init``: changes made in place reach this network; an
        out-of-place change is brought back with :meth:`from_stateful_net`.

        Args:
            copy: return a copy of the structure (``True``) or the structure itself.
        """
        net = _deepcopy(self.__dict__["_empty_net"]) if copy else self.__dict__["_empty_net"]
        self.params.to_module(net)
        return net

    def from_stateful_net(self, stateful_net: nn.Module) -> None:
        """Copies the parameters of ``stateful_net`` (from :meth:`get_stateful_net`) in.

        Raises:
            ValueError: its parameter names or shapes differ from this network's.
        """
        params = TensorDict.from_module(stateful_net)
        mine = set(self.params.keys(True, True))
        theirs = set(params.keys(True, True))
        if mine != theirs:
            raise ValueError(
                f"{type(self).__name__}.from_stateful_net: expected the parameters {sorted(mine)}, "
                f"got {sorted(theirs)}."
            )
        for key in mine:
            if params.get(key).shape != self.params.get(key).shape:
                raise ValueError(
                    f"{type(self).__name__}.from_stateful_net: expected {key!r} of shape "
                    f"{tuple(self.params.get(key).shape)}, got {tuple(params.get(key).shape)}."
                )
        self.params.data.update_(params.data)


def _deepcopy(module: nn.Module) -> nn.Module:
    return copy.deepcopy(module)
