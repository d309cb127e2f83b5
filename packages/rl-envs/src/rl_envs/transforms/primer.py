"""TensorDictPrimer, re-exported from rl-core (recurrent modules there build it)."""

from rl_core.transforms.primer import TensorDictPrimer

__all__ = ["TensorDictPrimer"]
