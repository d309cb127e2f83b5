"""gSDENoise: the per-episode noise matrix of gSDE exploration, primed at each reset."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rl_core import Composite, Unbounded
from rl_core.transforms.primer import TensorDictPrimer


class gSDENoise(TensorDictPrimer):
    """Primes ``"_eps_gSDE"`` at each reset for a gSDE policy (TorchRL's ``gSDENoise``; the
    module is ``rl_objectives.modules.gSDEModule``): zeros ``[*batch, 1]`` without the sizes,
    which ask the module to draw a new noise matrix for the episode, or, with ``state_dim``
    and ``action_dim``, a random ``[*batch, action_dim, state_dim]`` matrix drawn by the
    primer itself. The entry is carried from step to step like any primed state, so the noise
    stays fixed within an episode.

    Args:
        state_dim: the policy's feature size (with ``action_dim``: the primer draws).
        action_dim: the action size.
        shape: TorchRL's argument for the env's batch size; the primer here takes the env's
            (or a TensorDict's) batch dims itself, so it only documents them.
        **kwargs: :class:`~rl_core.TensorDictPrimer`'s keyword arguments.

    Examples:
        >>> gSDENoise(shape=(3,)).primers["_eps_gSDE"].shape
        torch.Size([1])
        >>> gSDENoise(4, 2).primers["_eps_gSDE"].shape
        torch.Size([2, 4])
    """

    def __init__(
        self,
        state_dim: int | None = None,
        action_dim: int | None = None,
        shape: Sequence[int] | None = None,
        **kwargs: Any,
    ) -> None:
        self.state_dim, self.action_dim = state_dim, action_dim
        self.shape = () if shape is None else tuple(shape)
        sized = state_dim is not None and action_dim is not None
        tail = (action_dim, state_dim) if sized else (1,)
        primers = Composite({"_eps_gSDE": Unbounded(shape=tail)})
        super().__init__(primers=primers, random=sized, **kwargs)


__all__ = ["gSDENoise"]
