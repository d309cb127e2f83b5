"""DistributionalDQNnet: action-value logits turned into log-probabilities over atoms."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase

from rl_core.keys import NestedKey


class DistributionalDQNnet(TensorDictModuleBase):
    """Log-softmax over the atom dim of a distributional Q-network's output (TorchRL's
    ``DistributionalDQNnet``): ``[*B, atoms, actions]`` logits become log-probabilities, each
    action's atoms summing to one in probability. Put it between the network and a
    :class:`~rl_objectives.modules.DistributionalQValueModule`.

    Args:
        in_keys: the logits (keyword-only). Defaults to ``["action_value"]``.
        out_keys: where the log-probabilities go (keyword-only). Defaults to ``in_keys``.

    Raises:
        ValueError: ``out_keys`` differ in length from ``in_keys``; a value has fewer than two
            dims (the message names the key).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = DistributionalDQNnet()(TensorDict(action_value=torch.zeros(2, 5, 3), batch_size=[2]))
        >>> round(float(td["action_value"].exp().sum(-2)[0, 0]), 4)
        1.0
    """

    def __init__(
        self,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__()
        self.in_keys = ["action_value"] if in_keys is None else list(in_keys)
        self.out_keys = list(self.in_keys) if out_keys is None else list(out_keys)
        if len(self.out_keys) != len(self.in_keys):
            raise ValueError(
                f"DistributionalDQNnet: expected one out_key per in_key, got {self.out_keys} for "
                f"{self.in_keys}."
            )

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys, strict=True):
            logits = tensordict.get(in_key)
            if logits.ndim < 2:
                raise ValueError(
                    f"DistributionalDQNnet: {in_key!r} must be [*B, atoms, actions], got shape "
                    f"{tuple(logits.shape)}."
                )
            tensordict.set(out_key, torch.log_softmax(logits, dim=-2))
        return tensordict


__all__ = ["DistributionalDQNnet"]
