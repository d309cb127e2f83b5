"""Networks over a group of agents (an MLP, a ConvNet), shared or independent, centralised or
not."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictParams
from torch import nn

from rl_core.modules import MLP, ConvNet


class _AgentNetworks(nn.Module):
    """One network shared by the agents, or one per agent with their parameters stacked along
    a leading agent dimension in :attr:`params` and run for all agents at once with
    ``torch.vmap`` (not in a Python loop)."""

    net: nn.Module | None
    params: TensorDictParams | None

    def _set_agent_networks(self, build: Any, n_agents: int, share_params: bool) -> None:
        if share_params:
            self.net = build()
            self.params = None
        else:
            nets = [build() for _ in range(n_agents)]
            self.net = None
            self.params = TensorDict.from_modules(*nets, as_module=True)
            # A parameter-less copy whose tensors are swapped for one agent's slice of
            # `params` inside vmap. Kept out of the submodules so it holds no state.
            self.__dict__["_template"] = copy.deepcopy(nets[0]).to("meta")

    def _call_template(self, params: TensorDictParams, x: torch.Tensor) -> torch.Tensor:
        with params.to_module(self.__dict__["_template"]):
            return self.__dict__["_template"](x)

    def _each_agent(self, x: torch.Tensor, agent_dim: int | None) -> torch.Tensor:
        """Every agent's network on ``x`` (its slice along ``agent_dim``, or all of ``x`` for
        ``None``), outputs stacked at dim -2."""
        return torch.vmap(
            self._call_template, in_dims=(0, agent_dim), out_dims=-2, randomness="different"
        )(self.params, x)


class MultiAgentMLP(_AgentNetworks):
    """Maps ``[*B, n_agents, n_agent_inputs]`` to ``[*B, n_agents, n_agent_outputs]``.

    Four layouts, chosen by two flags:

    - ``centralized=False, share_params=True``: one MLP applied to each agent's own input.
    - ``centralized=False, share_params=False``: one MLP per agent on its own input.
    - ``centralized=True, share_params=False``: one MLP per agent, each seeing the inputs of all
      agents concatenated (``n_agents * n_agent_inputs`` features).
    - ``centralized=True, share_params=True``: one MLP from all agents' inputs to one output,
      the same for every agent (as TorchRL: e.g. a centralised critic's one value of the
      joint state).

    Independent parameters are stacked along a leading agent dimension in :attr:`params` (a
    ``TensorDictParams``) and evaluated for all agents at once with ``torch.vmap``, not in a
    Python loop.

    Args:
        n_agent_inputs: number of input features per agent.
        n_agent_outputs: number of output features per agent.
        n_agents: number of agents.

    Keyword Args:
        centralized: whether each agent's network sees all agents' inputs.
        share_params: whether all agents use the same parameters.
        depth: number of hidden layers (see :class:`MLP`).
        num_cells: hidden widths (see :class:`MLP`).
        activation_class: activation class. Defaults to ``nn.Tanh``.
        device: device of the parameters.
        **mlp_kwargs: further keyword arguments for :class:`MLP` (``norm_class``,
            ``dropout``, ``activate_last_layer``...).

    Raises:
        ValueError: a size is not positive, or the input does not end in
            ``[n_agents, n_agent_inputs]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import MultiAgentMLP
        >>> net = MultiAgentMLP(4, 2, n_agents=3, centralized=True, share_params=False)
        >>> net(torch.zeros(10, 3, 4)).shape
        torch.Size([10, 3, 2])
        >>> net.params.batch_size
        torch.Size([3])
    """

    def __init__(
        self,
        n_agent_inputs: int,
        n_agent_outputs: int,
        n_agents: int,
        *,
        centralized: bool,
        share_params: bool,
        depth: int | None = None,
        num_cells: int | Sequence[int] | None = None,
        activation_class: type[nn.Module] = nn.Tanh,
        device: torch.device | str | None = None,
        **mlp_kwargs: Any,
    ) -> None:
        super().__init__()
        for name, value in (
            ("n_agent_inputs", n_agent_inputs),
            ("n_agent_outputs", n_agent_outputs),
            ("n_agents", n_agents),
        ):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"MultiAgentMLP: expected a positive int {name}, got {value!r}.")
        self.n_agent_inputs = n_agent_inputs
        self.n_agent_outputs = n_agent_outputs
        self.n_agents = n_agents
        self.centralized = centralized
        self.share_params = share_params

        in_features = n_agent_inputs * n_agents if centralized else n_agent_inputs

        def build() -> MLP:
            return MLP(
                in_features,
                n_agent_outputs,
                depth=depth,
                num_cells=num_cells,
                activation_class=activation_class,
                device=device,
                **mlp_kwargs,
            )

        self._set_agent_networks(build, n_agents, share_params)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Runs the agents' networks.

        Args:
            x: inputs of shape ``[*B, n_agents, n_agent_inputs]``.

        Returns:
            Outputs of shape ``[*B, n_agents, n_agent_outputs]``.
        """
        expected = (self.n_agents, self.n_agent_inputs)
        if x.ndim < 2 or tuple(x.shape[-2:]) != expected:
            raise ValueError(
                f"MultiAgentMLP.forward: expected an input ending in [n_agents, n_agent_inputs]"
                f"={list(expected)}, got shape {list(x.shape)}. Put the agent dimension second "
                f"to last."
            )
        if self.centralized:
            x = x.flatten(-2, -1)
        if self.net is not None:
            out = self.net(x)
            if self.centralized:  # one output of the joint input, given to every agent
                out = out.unsqueeze(-2).expand(*out.shape[:-1], self.n_agents, out.shape[-1])
            return out
        return self._each_agent(x, None if self.centralized else -2)


class MultiAgentConvNet(_AgentNetworks):
    """Maps images ``[*B, n_agents, C, H, W]`` to features ``[*B, n_agents, F]``.

    The multi-agent counterpart of :class:`ConvNet`, with :class:`MultiAgentMLP`'s two flags:

    - ``centralized=False``: each agent's network sees its own image (``C`` channels).
    - ``centralized=True``: each agent's network sees every agent's image, stacked along the
      channels (``n_agents * C`` channels, agent 0's first).
    - ``share_params=True``: one network for all agents; centralised, it runs once and every
      agent gets the same features.
    - ``share_params=False``: one network per agent, their parameters stacked along a leading
      agent dimension in :attr:`params` and evaluated for all agents at once with
      ``torch.vmap``.

    Args:
        n_agents: number of agents.
        centralized: whether each agent's network sees all agents' images.
        share_params: whether all agents use the same parameters.

    Keyword Args:
        in_features: channels of one agent's image; ``None`` (a lazy first layer) only with
            ``share_params=True``.
        device: device of the parameters.
        num_cells: output channels per layer (see :class:`ConvNet`). Defaults to
            ``[32, 32, 32]``.
        kernel_sizes: kernel size(s). Defaults to 5.
        strides: stride(s). Defaults to 2.
        paddings: padding(s). Defaults to 0.
        activation_class: activation class. Defaults to ``nn.ELU``.
        **kwargs: further keyword arguments for :class:`ConvNet` (``norm_class``,
            ``aggregator_class``...).

    Raises:
        ValueError: ``n_agents`` is not positive; ``in_features`` is missing with independent
            parameters; the input does not end in ``[n_agents, C, H, W]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import MultiAgentConvNet
        >>> net = MultiAgentConvNet(
        ...     3, centralized=False, share_params=False, in_features=2, num_cells=[4],
        ...     kernel_sizes=3, strides=1,
        ... )
        >>> net(torch.zeros(5, 3, 2, 6, 6)).shape
        torch.Size([5, 3, 64])
    """

    def __init__(
        self,
        n_agents: int,
        centralized: bool,
        share_params: bool,
        *,
        in_features: int | None = None,
        device: torch.device | str | None = None,
        num_cells: Sequence[int] | None = None,
        kernel_sizes: int | Sequence[int] = 5,
        strides: int | Sequence[int] = 2,
        paddings: int | Sequence[int] = 0,
        activation_class: type[nn.Module] = nn.ELU,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        if not isinstance(n_agents, int) or n_agents <= 0:
            raise ValueError(
                f"MultiAgentConvNet: expected a positive int n_agents, got {n_agents!r}."
            )
        if in_features is None and not share_params:
            raise ValueError(
                "MultiAgentConvNet: independent parameters (share_params=False) need "
                "in_features (the channels of one agent's image); got None."
            )
        self.n_agents = n_agents
        self.centralized = centralized
        self.share_params = share_params
        self.in_features = in_features
        channels = None
        if in_features is not None:
            channels = in_features * n_agents if centralized else in_features

        def build() -> ConvNet:
            return ConvNet(
                channels,
                num_cells=[32, 32, 32] if num_cells is None else num_cells,
                kernel_sizes=kernel_sizes,
                strides=strides,
                paddings=paddings,
                activation_class=activation_class,
                device=device,
                **kwargs,
            )

        self._set_agent_networks(build, n_agents, share_params)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Runs the agents' networks.

        Args:
            x: images of shape ``[*B, n_agents, C, H, W]``.

        Returns:
            Features of shape ``[*B, n_agents, F]``.
        """
        if x.ndim < 4 or x.shape[-4] != self.n_agents:
            raise ValueError(
                f"MultiAgentConvNet.forward: expected images [*B, n_agents={self.n_agents}, C, "
                f"H, W], got shape {list(x.shape)}. Put the agent dimension fourth from last."
            )
        if self.in_features is not None and x.shape[-3] != self.in_features:
            raise ValueError(
                f"MultiAgentConvNet.forward: expected {self.in_features} channels per agent "
                f"(in_features), got {x.shape[-3]} (shape {list(x.shape)})."
            )
        if self.centralized:
            x = x.flatten(-4, -3)  # [*B, n_agents * C, H, W]
        if self.net is not None:
            if self.centralized:
                out = self.net(x)
                return out.unsqueeze(-2).expand(*out.shape[:-1], self.n_agents, out.shape[-1])
            return self.net(x)
        return self._each_agent(x, None if self.centralized else -4)


__all__ = ["MultiAgentMLP", "MultiAgentConvNet"]
