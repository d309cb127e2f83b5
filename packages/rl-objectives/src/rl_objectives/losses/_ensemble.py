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
    """``num`` Q networks: the first is the given module (its parameters are trained), the
    others are copies with freshly initialised parameters. ``forward`` returns their outputs
    at ``out_key`` stacked along a new leading dim: ``[num, *B, 1]``."""

    def __init__(self, qvalue_network: nn.Module, num: int, out_key: NestedKey) -> None:
        super().__init__()
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise ValueError(f"num_qvalue_nets must be a positive int, got {num!r}.")
        copies = [qvalue_network]
        for _ in range(num - 1):
            twin = copy.deepcopy(qvalue_network)
            _reset(twin)
            copies.append(twin)
        self.nets = nn.ModuleList(copies)
        self.out_key = out_key
        self.in_keys: list[Any] = list(getattr(qvalue_network, "in_keys", []))

    def forward(self, tensordict: TensorDictBase) -> torch.Tensor:
        return torch.stack([read_output(net, tensordict, self.out_key) for net in self.nets])
