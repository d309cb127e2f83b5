"""TensorDictPrimer (defined in ``rl_core._transform``, the layer that ``rl_core.modules`` may
import: recurrent modules build one; see that package)."""

from rl_core._transform.primer import TensorDictPrimer

__all__ = ["TensorDictPrimer"]
