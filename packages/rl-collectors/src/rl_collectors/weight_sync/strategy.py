"""``WeightStrategy``: how a scheme reads a model's weights and writes them into another."""

from __future__ import annotations

from typing import Any, Literal

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

ExtractAs = Literal["tensordict", "state_dict"]


class WeightStrategy:
    """Reads weights out of a model and writes them into one, as a TensorDict or a state dict.

    Args:
        extract_as: ``"tensordict"`` (``TensorDict.from_module(model)``, parameters and
            buffers, nested by submodule) or ``"state_dict"`` (``model.state_dict()``).

    Raises:
        ValueError: ``extract_as`` is neither.

    Examples:
        >>> import torch
        >>> from rl_collectors.weight_sync import WeightStrategy
        >>> source, target = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
        >>> strategy = WeightStrategy("tensordict")
        >>> strategy.apply_weights(target, strategy.extract_weights(source))
        >>> bool((target.weight == source.weight).all())
        True
    """

    def __init__(self, extract_as: ExtractAs = "tensordict") -> None:
        if extract_as not in ("tensordict", "state_dict"):
            raise ValueError(
                f"WeightStrategy: expected extract_as 'tensordict' or 'state_dict', got "
                f"{extract_as!r}."
            )
        self.extract_as = extract_as

    def extract_weights(self, source: Any) -> TensorDictBase | dict[str, torch.Tensor]:
        """The weights of ``source`` (a module, a TensorDict or a state dict), detached, in
        this strategy's format."""
        if isinstance(source, nn.Module):
            if self.extract_as == "state_dict":
                return {k: v.detach() for k, v in source.state_dict().items()}
            return TensorDict.from_module(source).data
        if isinstance(source, TensorDictBase):
            data = source.data
            return data.flatten_keys(".").to_dict() if self.extract_as == "state_dict" else data
        if isinstance(source, dict):
            if self.extract_as == "state_dict":
                return dict(source)
            return TensorDict(dict(source), batch_size=[]).unflatten_keys(".")
        raise TypeError(
            f"WeightStrategy.extract_weights: expected an nn.Module, a TensorDict or a state "
            f"dict, got {type(source).__name__}."
        )

    def apply_weights(self, destination: nn.Module, weights: Any) -> None:
        """Copies ``weights`` (either format) into ``destination``'s parameters and buffers
        in place, on their device."""
        if not isinstance(destination, nn.Module):
            raise TypeError(
                f"WeightStrategy.apply_weights: expected an nn.Module destination, got "
                f"{type(destination).__name__}."
            )
        if isinstance(weights, dict):
            weights = TensorDict(dict(weights), batch_size=[]).unflatten_keys(".")
        if not isinstance(weights, TensorDictBase):
            raise TypeError(
                f"WeightStrategy.apply_weights: expected weights as a TensorDict or a state "
                f"dict, got {type(weights).__name__}."
            )
        target = TensorDict.from_module(destination)
        with torch.no_grad():
            target.data.update_(weights.to(_device_of(target)) if _device_of(target) else weights)


def _device_of(weights: TensorDictBase) -> torch.device | None:
    for value in weights.values(True, True):
        return value.device
    return None


__all__ = ["WeightStrategy"]
