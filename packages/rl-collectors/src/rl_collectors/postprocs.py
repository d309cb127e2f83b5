"""MultiStep: n-step returns written into a collected batch (a collector's ``postproc``)."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torch import nn

from rl_collectors.utils import MASK
from rl_core.keys import DONE, DONE_KEYS, NEXT, REWARD

ORIGINAL_REWARD = "original_reward"
STEPS_TO_NEXT_OBS = "steps_to_next_obs"
GAMMA = "gamma"
NONTERMINAL = "nonterminal"


def n_step_horizon(done: torch.Tensor, n_steps: int) -> torch.Tensor:
    """How many steps each n-step transition spans: ``min(n_steps, steps left in its
    trajectory within the batch)``.

    A trajectory ends at a step whose ``done`` is set, and at the end of the batch.

    Args:
        done: ``[*B, T]`` bool flags.
        n_steps: the look-ahead (>= 1).

    Returns:
        ``[*B, T]`` int64, each in ``[1, n_steps]``.

    Examples:
        >>> done = torch.tensor([False, False, True, False, False])
        >>> n_step_horizon(done, 2).tolist()
        [2, 2, 1, 2, 1]
    """
    steps = done.shape[-1]
    time = torch.arange(steps, device=done.device)
    ends = done.clone()
    ends[..., -1] = True
    # The index of the first end at or after each step: a reversed running minimum.
    end_at = torch.where(ends, time, steps).flip(-1).cummin(-1).values.flip(-1)
    return (end_at - time + 1).clamp_max(n_steps)


class MultiStep(nn.Module):
    """Rewrites a batch of shape ``[*B, T]`` for n-step returns (Sutton, 1988), as TorchRL's
    ``torchrl.data.postprocs.MultiStep``: pass it as a collector's ``postproc=``.

    For each step ``t``, with ``k = min(n_steps, steps left in t's trajectory within the
    batch)`` (a trajectory ends at a step whose ``("next", "done")`` is set, and at the end of
    the batch):

    - ``("next", "reward")`` becomes ``sum_{i<k} gamma**i * reward[t + i]``; the one-step
      reward moves to ``("next", "original_reward")``;
    - every other entry under ``"next"`` except the done flags (``done``, ``terminated``,
      ``truncated``, which stay the step's own) is taken from step ``t + k - 1``: the next
      observation is the one ``k`` steps ahead;
    - ``"steps_to_next_obs"`` is ``k``, ``"gamma"`` is ``gamma ** k`` (the discount of the
      bootstrap value), and ``"nonterminal"`` is ``k != 1`` (and ``False`` where a
      ``("collector", "mask")`` marks padding), all of shape ``[*B, T]``.

    Steps near the end of a batch see fewer rewards than ``n_steps`` (the batch cuts their
    trajectory), as in TorchRL. The input is not modified: the result is a new TensorDict
    sharing the tensors it does not rewrite.

    Args:
        gamma: the discount, in ``(0, 1]``.
        n_steps: the look-ahead, an int >= 1 (1 leaves rewards and observations as they are).

    Raises:
        ValueError: ``gamma`` or ``n_steps`` out of range; a batch without a time dim or
            whose ``("next", "done")`` is neither ``[*B, T]`` nor ``[*B, T, 1]``.
        KeyError: the batch lacks ``("next", "done")`` or ``("next", "reward")``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_collectors import MultiStep
        >>> done = torch.tensor([False, False, True, False]).unsqueeze(-1)
        >>> batch = TensorDict(
        ...     observation=torch.arange(4.0),
        ...     next=TensorDict(
        ...         observation=torch.arange(1.0, 5.0), reward=torch.ones(4, 1), done=done,
        ...         batch_size=[4],
        ...     ),
        ...     batch_size=[4],
        ... )
        >>> out = MultiStep(gamma=0.5, n_steps=2)(batch)
        >>> out["next", "reward"].squeeze(-1).tolist()
        [1.5, 1.5, 1.0, 1.0]
        >>> out["next", "observation"].tolist()
        [2.0, 3.0, 3.0, 4.0]
        >>> out["steps_to_next_obs"].tolist()
        [2, 2, 1, 1]
    """

    def __init__(self, gamma: float, n_steps: int) -> None:
        super().__init__()
        if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
            raise ValueError(f"MultiStep: expected n_steps as an int >= 1, got {n_steps!r}.")
        if not isinstance(gamma, int | float) or not 0 < gamma <= 1:
            raise ValueError(f"MultiStep: expected gamma in (0, 1], got {gamma!r}.")
        self.gamma = float(gamma)
        self.n_steps = n_steps

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The n-step version of ``tensordict`` (see the class docstring)."""
        if tensordict.batch_dims < 1:
            raise ValueError(
                "MultiStep: expected a batch with a time dim (batch size [*B, T]), got batch "
                f"size {tuple(tensordict.batch_size)}."
            )
        shape = tensordict.batch_size
        done = _required(tensordict, (NEXT, DONE))
        if done.shape == (*shape, 1):
            done = done.squeeze(-1)
        elif done.shape != shape:
            raise ValueError(
                f"MultiStep: expected ('next', 'done') of shape {(*shape,)} or {(*shape, 1)} "
                f"(the batch's, with or without a trailing 1), got {tuple(done.shape)}."
            )
        reward = _required(tensordict, (NEXT, REWARD))
        steps = n_step_horizon(done.bool(), self.n_steps)
        time_dim = len(shape) - 1
        time = torch.arange(shape[-1], device=steps.device)

        summed = torch.zeros_like(reward)
        for i in range(self.n_steps):
            # reward[t + i] where t + i is still inside t's n-step window, else nothing.
            index = (time + i).clamp_max(shape[-1] - 1).expand(shape)
            taken = (i < steps).to(reward.dtype)
            summed = summed + self.gamma**i * _right(taken, reward) * _gather(
                reward, time_dim, index
            )

        out = tensordict.clone(False)
        last = time + steps - 1  # the step whose next entries the transition ends on
        nested = out.get(NEXT)
        shifted = nested.exclude(REWARD, *DONE_KEYS)
        for key, value in shifted.items(True, True):
            nested.set(key, _gather(value, time_dim, last))
        nested.set(ORIGINAL_REWARD, reward)
        nested.set(REWARD, summed)
        out.set(STEPS_TO_NEXT_OBS, steps)
        out.set(GAMMA, self.gamma ** steps.to(torch.get_default_dtype()))
        nonterminal = steps != 1
        mask = out.get(MASK, None)
        if mask is not None:
            nonterminal = nonterminal & mask.reshape(shape)
        out.set(NONTERMINAL, nonterminal)
        return out

    def extra_repr(self) -> str:
        return f"gamma={self.gamma}, n_steps={self.n_steps}"


def _required(tensordict: TensorDictBase, key: tuple[str, str]) -> torch.Tensor:
    value = tensordict.get(key, None)
    if value is None:
        raise KeyError(
            f"MultiStep: the batch lacks {key!r}; it holds "
            f"{sorted(map(str, tensordict.keys(True, True)))}."
        )
    return value


def _right(flags: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``flags`` ([*B, T]) with trailing dims of size 1 to broadcast against ``like``."""
    return flags.reshape(*flags.shape, *(1,) * (like.ndim - flags.ndim))


def _gather(value: torch.Tensor, time_dim: int, index: torch.Tensor) -> torch.Tensor:
    """``value[..., index[..., t], ...]`` along the time dim, ``index`` of shape [*B, T]."""
    index = _right(index, value).expand(*index.shape, *value.shape[index.ndim :])
    return torch.gather(value, time_dim, index)


__all__ = ["MultiStep"]
