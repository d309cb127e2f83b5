"""Transform, the base class of every transform (defined in ``rl_core._transform``, the layer
that ``rl_core.modules`` may import; see that package)."""

from rl_core._transform.transform import Transform

__all__ = ["Transform"]
