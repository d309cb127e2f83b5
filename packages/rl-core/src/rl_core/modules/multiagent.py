"""An MLP over a group of agents, shared or independent, centralised or not."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictParams
from torch import nn

from rl_core.modules.mlp import MLP


class MultiAgentMLP(nn.Module):
    """Maps ``[*B, n_agents, n_agent_inputs]`` to ``[*B, n_agents, n_agent_outputs]``.

    Four layouts, chosen by two flags:

    - ``centralized=False, share_params=True``: one MLP applied to each agent's own input.
    - ``centralized=False, share_params=False``: one MLP per agent on its own input.
    - ``centralized=True, share_params=False``: one MLP per agent, each seeing the inputs of all
      agents concatenated (``n_agents * n_agent_inputs`` features).
    - ``centralized=True, share_params=True``: one MLP from all agents' inputs to all agents'
      outputs (``n_agents * n_agent_outputs`` features, reshaped per agent).

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
        >>> from rl_core.modules import MultiAgentMLP
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
        out_features = (
            n_agent_outputs * n_agents if centralized and share_params else n_agent_outputs
        )

        def build() -> MLP:
            return MLP(
                in_features,
                out_features,
                depth=depth,
                num_cells=num_cells,
                activation_class=activation_class,
                device=device,
                **mlp_kwargs,
            )

        if share_params:
            self.net: MLP | None = build()
            self.params: TensorDictParams | None = None
        else:
            nets = [build() for _ in range(n_agents)]
            self.net = None
            self.params = TensorDict.from_modules(*nets, as_module=True)
            # A parameter-less copy whose tensors are swapped for one agent's slice of
            # `params` inside vmap. Kept out of the submodules so it holds no state.
            self.__dict__["_template"] = copy.deepcopy(nets[0]).to("meta")

    def _call_template(self, params: TensorDictParams, x: torch.Tensor) -> torch.Tensor:
        template: MLP = self.__dict__["_template"]
        with params.to_module(template):
            return template(x)

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
            if self.centralized:
                out = out.unflatten(-1, (self.n_agents, self.n_agent_outputs))
            return out
        x_dim = None if self.centralized else -2
        return torch.vmap(
            self._call_template, in_dims=(0, x_dim), out_dims=-2, randomness="different"
        )(self.params, x)


__all__ = ["MultiAgentMLP"]
