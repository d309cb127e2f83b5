"""RayDataLoadingPrimer: a DataLoadingPrimer whose data loader lives in a Ray actor.

The class is defined in :mod:`rl_llm.envs.data_loading_primer` (``DataLoadingPrimer(...,
use_ray_service=True)`` builds it there); this module keeps the old import path working.
"""

from rl_llm.envs.data_loading_primer import RayDataLoadingPrimer

__all__ = ["RayDataLoadingPrimer"]
