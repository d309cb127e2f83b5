"""What the JAX wrappers (Brax, Jumanji) share: imports, DLPack transfers, keys, batching."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


def import_jax(who: str, extra: str) -> Any:
    try:
        import jax
    except ImportError as err:
        raise ImportError(f'{who} needs JAX: pip install "rl-envs[{extra}]"') from err
    return jax


def to_torch(array: Any) -> torch.Tensor:
    """A JAX array as a torch tensor sharing its memory (DLPack); a copy for dtypes DLPack
    does not carry here (bool) and for non-JAX values."""
    if hasattr(array, "__dlpack__") and array.dtype != bool:
        try:
            return torch.from_dlpack(array)
        except (RuntimeError, TypeError, BufferError):
            pass
    return torch.from_numpy(np.array(array))


def to_jax(tensor: torch.Tensor) -> Any:
    """A torch tensor as a JAX array (DLPack, no copy for contiguous tensors)."""
    import jax

    return jax.dlpack.from_dlpack(tensor.detach().contiguous())


def where_rows(jax: Any, mask: Any, new: Any, old: Any) -> Any:
    """``new`` where ``mask`` (one bool per batch row) else ``old``, for every leaf of a pytree."""

    def pick(a: Any, b: Any) -> Any:
        m = mask.reshape(mask.shape + (1,) * (a.ndim - mask.ndim))
        return jax.numpy.where(m, a, b)

    return jax.tree_util.tree_map(pick, new, old)


class KeyChain:
    """The PRNG key a JAX env draws its resets from; ``seed`` restarts it."""

    def __init__(self, jax: Any, seed: int | None) -> None:
        self._jax = jax
        if seed is None:  # an unseeded key, from the OS's entropy
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        self.key = jax.random.PRNGKey(seed)

    def seed(self, seed: int) -> None:
        self.key = self._jax.random.PRNGKey(seed)

    def split(self, n: int) -> Any:
        """``n`` fresh keys (shape ``(n, 2)``)."""
        self.key, sub = self._jax.random.split(self.key)
        return self._jax.random.split(sub, n)
