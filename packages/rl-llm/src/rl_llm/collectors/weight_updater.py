"""TransformersWeightUpdater: copies trained weights into an in-process inference model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch


class TransformersWeightUpdater:
    """Copies weights into the transformers model that generates (in place, no reallocation).

    ``update`` accepts a state dict or a module (its ``state_dict()``); every parameter and
    buffer of the inference model must be present with the same shape. Copies are in place, so
    a :class:`~rl_llm.modules.TransformersWrapper` around the model sees them at once.

    Args:
        model: the inference model.

    Examples:
        >>> import torch
        >>> from rl_llm.collectors import TransformersWeightUpdater
        >>> infer, train = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        >>> TransformersWeightUpdater(infer).update(train)
        >>> torch.equal(infer.weight, train.weight)
        True
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    @torch.no_grad()
    def update(self, weights: Mapping[str, torch.Tensor] | torch.nn.Module | Any) -> None:
        """Copies ``weights`` into the model; raises KeyError/ValueError on a mismatch."""
        source = weights.state_dict() if isinstance(weights, torch.nn.Module) else weights
        target = self.model.state_dict(keep_vars=True)
        missing = sorted(set(target) - set(source))
        if missing:
            raise KeyError(
                f"TransformersWeightUpdater.update: the weights lack {missing[:5]}"
                f"{' ...' if len(missing) > 5 else ''} ({len(missing)} entries of the model)."
            )
        for name, dest in target.items():
            value = source[name]
            if value.shape != dest.shape:
                raise ValueError(
                    f"TransformersWeightUpdater.update: {name} has shape {tuple(value.shape)}, "
                    f"the model expects {tuple(dest.shape)}."
                )
            dest.data.copy_(value.to(dest.device, dest.dtype))
