"""InitTracker: marks the first step of every episode."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core.keys import IS_INIT, NestedKey
from rl_core.specs import Categorical, Composite
from rl_core.transforms.transform import Transform


class InitTracker(Transform):
    """Writes ``is_init``: True right after a reset, False after every step.

    Recurrent modules and exploration noise read it to restart their state per sub-env.

    Args:
        init_key: where the flag goes. Defaults to ``"is_init"``.
    """

    def __init__(self, init_key: NestedKey = IS_INIT) -> None:
        super().__init__()
        self.init_key = init_key

    def _flag(self, td: TensorDictBase, value: bool) -> torch.Tensor:
        shape = (*td.batch_size, 1)
        return torch.full(shape, value, dtype=torch.bool, device=td.device)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset.set(self.init_key, self._flag(tensordict_reset, True))

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict.set(self.init_key, self._flag(next_tensordict, False))

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        observation_spec[self.init_key] = Categorical(
            2,
            shape=(*observation_spec.shape, 1),
            device=observation_spec.device,
            dtype=torch.bool,
        )
        return observation_spec


__all__ = ["InitTracker"]
