"""MultiStepTransform: n-step returns written into collected data as it enters a replay buffer."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_core.keys import DONE, DONE_KEYS, NEXT, REWARD, NestedKey, as_key_list

STEPS_TO_NEXT_OBS = "steps_to_next_obs"
GAMMA = "gamma"
NONTERMINAL = "nonterminal"


def _orig_key(key: NestedKey) -> NestedKey:
    """Where the one-step reward ``key`` is kept: ``"original_reward"`` for ``"reward"``
    (TorchRL's key), at the reward's own level for a nested one."""
    return f"original_{key}" if isinstance(key, str) else (*key[:-1], f"original_{key[-1]}")


def n_step_windows(done: torch.Tensor, n_steps: int) -> torch.Tensor:
    """The length of each step's n-step window: ``min(n_steps, steps to the end of its
    episode)``, counting the step itself. An episode ends at a step whose ``done`` is set
    and at the end of the data.

    Args:
        done: ``[*B, T]`` bool.
        n_steps: the look-ahead (>= 1).

    Returns:
        ``[*B, T]`` int64 in ``[1, n_steps]``.
    """
    length = done.shape[-1]
    time = torch.arange(length, device=done.device)
    ends = done.clone()
    ends[..., -1] = True
    end_at = torch.where(ends, time, length).flip(-1).cummin(-1).values.flip(-1)
    return (end_at - time + 1).clamp_max(n_steps)


def n_step_return(
    reward: torch.Tensor, windows: torch.Tensor, gamma: float, n_steps: int
) -> torch.Tensor:
    """``sum_{i < windows[t]} gamma**i * reward[t + i]`` for each step ``t``.

    Args:
        reward: ``[*B, T, *E]`` rewards (time at dim ``windows.ndim - 1``).
        windows: ``[*B, T]`` window lengths (:func:`n_step_windows`).
        gamma: the discount.
        n_steps: the largest window.
    """
    time_dim = windows.ndim - 1
    length = windows.shape[-1]
    time = torch.arange(length, device=windows.device)
    total = torch.zeros_like(reward)
    for i in range(n_steps):
        index = (time + i).clamp_max(length - 1).expand(windows.shape)
        taken = _right((i < windows).to(reward.dtype), reward)
        total = total + gamma**i * taken * _gather(reward, time_dim, index)
    return total


def _right(flags: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return flags.reshape(*flags.shape, *(1,) * (like.ndim - flags.ndim))


def _gather(value: torch.Tensor, time_dim: int, index: torch.Tensor) -> torch.Tensor:
    index = _right(index, value).expand(*index.shape, *value.shape[index.ndim :])
    return torch.gather(value, time_dim, index)


class MultiStepTransform(Transform):
    """N-step transitions (Sutton, 1988) for a replay buffer, written as data is stored.

    Pass it as a replay buffer's transform: its inverse runs at ``extend`` on collected
    batches ``[*B, T]`` (time last). For each step ``t`` with window ``k = min(n_steps,
    steps to the end of t's episode)`` (an episode ends at a step whose ``("next",
    done_key)`` is set):

    - each reward ``("next", r)`` becomes ``sum_{i<k} gamma**i * r[t + i]``, the one-step
      reward kept at ``("next", "original_" + r)`` (``("next", "original_reward")``, as
      TorchRL; a nested reward's at its own level);
    - every other entry under ``"next"`` but the ``done_keys`` (which stay the step's own)
      is taken from step ``t + k - 1``;
    - ``"steps_to_next_obs"`` is ``k``, ``"gamma"`` is ``gamma ** k`` and ``"nonterminal"``
      is ``k != 1``, all ``[*B, T]``.

    The transform keeps the last ``n_steps`` steps of each call and puts them before the
    next call's data, so that a window never stops at the end of a batch: each call returns
    the steps whose windows are complete (the kept steps of the previous call first, then
    all but the last ``n_steps`` of this one), and collector settings do not change the
    result. Call :meth:`reset` (or make a new transform) between unrelated data streams.
    Sampled batches pass through unchanged.

    Args:
        n_steps: the look-ahead, an int >= 1; may be changed between calls.
        gamma: the discount.
        reward_keys: the rewards under ``"next"``. Defaults to ``["reward"]``.
        done_key: the flag under ``"next"`` that ends an episode. Defaults to ``"done"``.
        done_keys: the flags under ``"next"`` kept as they are. Defaults to ``done``,
            ``terminated`` and ``truncated``.
        mask_key: a root entry marking valid steps; the steps where it is False are dropped
            from the output (which is then flattened to one batch dim).

    Raises:
        ValueError: ``n_steps`` < 1; data without a time dim, or whose leading dims differ
            from the kept steps'.
        KeyError: data lacking the done flag or a reward.
        RuntimeError: (on the specs) the transform was put in an env.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = MultiStepTransform(n_steps=2, gamma=0.5)
        >>> data = TensorDict(batch_size=[4])
        >>> data["next", "reward"] = torch.ones(4, 1)
        >>> data["next", "done"] = torch.zeros(4, 1, dtype=torch.bool)
        >>> out = t.inv(data)  # the last 2 steps wait for the next call
        >>> out["next", "reward"].squeeze(-1).tolist()
        [1.5, 1.5]
    """

    def __init__(
        self,
        n_steps: int,
        gamma: float,
        *,
        reward_keys: Sequence[NestedKey] | None = None,
        done_key: NestedKey | None = None,
        done_keys: Sequence[NestedKey] | None = None,
        mask_key: NestedKey | None = None,
    ) -> None:
        super().__init__()
        if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
            raise ValueError(
                f"MultiStepTransform: expected n_steps as an int >= 1, got {n_steps!r}."
            )
        self.n_steps = n_steps
        self.gamma = float(gamma)
        self.reward_keys = as_key_list(
            REWARD if reward_keys is None else reward_keys, "MultiStepTransform: reward_keys"
        )
        self.done_key = DONE if done_key is None else done_key
        self.done_keys = as_key_list(
            list(DONE_KEYS) if done_keys is None else done_keys, "MultiStepTransform: done_keys"
        )
        self.mask_key = mask_key
        self.__dict__["_kept"] = None

    def reset(self) -> None:
        """Forgets the steps kept from the previous call."""
        self.__dict__["_kept"] = None

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        raise RuntimeError(
            "MultiStepTransform: rewrites collected trajectories as they enter a replay buffer "
            "(ReplayBuffer(..., transform=MultiStepTransform(...))); it cannot be put in an env."
        )

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.batch_dims < 1:
            raise ValueError(
                "MultiStepTransform: expected data with a time dim (batch size [*B, T]), got "
                f"batch size {tuple(tensordict.batch_size)}."
            )
        kept = self._kept
        if kept is not None:
            if kept.batch_size[:-1] != tensordict.batch_size[:-1]:
                raise ValueError(
                    f"MultiStepTransform: the data's leading dims {tuple(tensordict.batch_size[:-1])} "
                    f"differ from those of the steps kept from the previous call "
                    f"{tuple(kept.batch_size[:-1])}; call reset() between unrelated streams."
                )
            data = torch.cat([kept, tensordict], tensordict.batch_dims - 1)
        else:
            data = tensordict
        length = data.batch_size[-1]
        self.__dict__["_kept"] = data[..., max(length - self.n_steps, 0) :].clone()
        out = self._multi_step(data)[..., : max(length - self.n_steps, 0)]
        if self.mask_key is not None:
            mask = out.get(self.mask_key)
            out = out[mask.reshape(out.batch_size).bool()]
        return out

    def _multi_step(self, data: TensorDictBase) -> TensorDictBase:
        shape = data.batch_size
        done = data.get((NEXT, self.done_key), None)
        if done is None:
            raise KeyError(
                f"MultiStepTransform: the data lacks {(NEXT, self.done_key)!r}; set done_key."
            )
        done = done.reshape(*shape, -1).any(-1)
        windows = n_step_windows(done, self.n_steps)
        time_dim = len(shape) - 1
        last = torch.arange(shape[-1], device=windows.device) + windows - 1
        out = data.clone(False)
        nested = out.get(NEXT)
        rewards = {}
        for key in self.reward_keys:
            reward = nested.get(key, None)
            if reward is None:
                raise KeyError(f"MultiStepTransform: the data lacks the reward ('next', {key!r}).")
            rewards[key] = reward
        skip = {*self.reward_keys, *self.done_keys}
        for key, value in list(nested.items(include_nested=True, leaves_only=True)):
            if key in skip or not isinstance(value, torch.Tensor):
                continue
            nested.set(key, _gather(value, time_dim, last))
        for key, reward in rewards.items():
            nested.set(_orig_key(key), reward)
            nested.set(key, n_step_return(reward, windows, self.gamma, self.n_steps))
        out.set(STEPS_TO_NEXT_OBS, windows)
        out.set(GAMMA, self.gamma ** windows.to(torch.get_default_dtype()))
        out.set(NONTERMINAL, windows != 1)
        return out

    def extra_repr(self) -> str:
        return f"n_steps={self.n_steps}, gamma={self.gamma}"


__all__ = ["MultiStepTransform"]
