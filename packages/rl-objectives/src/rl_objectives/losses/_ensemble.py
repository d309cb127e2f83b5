"""A list of Q-value networks evaluated on the same input (private)."""

from __future__ import annotations

import copy
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_core.keys import NestedKey
from rl_objectives.losses._common import read_output


def _reset(module: nn.Module) -> None:
    for sub in module.modules():
        reset = getattr(sub, "reset_parameters", None)
        if callable(reset) and sub is not module:
            reset()


class QValueEnsemble(nn.Module):
    """``num`` Q networks evaluated on the same input; ``forward`` returns their outputs at
    ``out_key`` stacked along a new leading dim: ``[num, *B, 1]``.

    Given one module, the first network is that module (its parameters are trained) and the
    others are copies with freshly initialised parameters. Given a list (or tuple) of
    modules, as TorchRL accepts, the networks are those modules with their own parameters
    (nothing is copied or re-initialised), and ``num`` must equal the list's length.
    """

    def __init__(
        self,
        qvalue_network: nn.Module | list[nn.Module] | tuple[nn.Module, ...],
        num: int,
        out_key: NestedKey,
        *,
        owner: str = "QValueEnsemble",
    ) -> None:
        super().__init__()
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise ValueError(f"{owner}: num_qvalue_nets must be a positive int, got {num!r}.")
        if isinstance(qvalue_network, list | tuple):
            networks = list(qvalue_network)
            bad = [type(net).__name__ for net in networks if not isinstance(net, nn.Module)]
            if not networks or bad:
                raise TypeError(
                    f"{owner}: qvalue_network must be an nn.Module or a non-empty list of "
                    f"them, got a list holding {bad or 'nothing'}."
                )
            if len(networks) != num:
                raise ValueError(
                    f"{owner}: num_qvalue_nets ({num}) must equal the number of Q networks "
                    f"given in the list ({len(networks)}). Pass num_qvalue_nets={len(networks)}."
                )
            in_keys = [list(getattr(net, "in_keys", [])) for net in networks]
            if any(keys != in_keys[0] for keys in in_keys):
                raise ValueError(
                    f"{owner}: the listed Q networks must read the same entries, got in_keys "
                    f"{in_keys}."
                )
        else:
            if not isinstance(qvalue_network, nn.Module):
                raise TypeError(
                    f"{owner}: qvalue_network must be an nn.Module or a list of them, got "
                    f"{type(qvalue_network).__name__}."
                )
            networks = [qvalue_network]
            for _ in range(num - 1):
                twin = copy.deepcopy(qvalue_network)
                _reset(twin)
                networks.append(twin)
        self.nets = nn.ModuleList(networks)
        self.out_key = out_key
        self.in_keys: list[Any] = list(getattr(networks[0], "in_keys", []))

    def forward(self, tensordict: TensorDictBase) -> torch.Tensor:
        return torch.stack([read_output(net, tensordict, self.out_key) for net in self.nets])
