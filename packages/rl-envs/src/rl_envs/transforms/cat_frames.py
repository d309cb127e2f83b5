"""CatFrames: the last N frames of an entry, concatenated."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, TensorSpec, Transform
from rl_core.keys import DONE, NEXT, NestedKey
from rl_envs.transforms._common import (
    bounds,
    check_negative_dim,
    continuous_like,
    episode_windows,
)
from rl_envs.transforms.functional import cat_frames

_PADDINGS = ("same", "constant")


class CatFrames(Transform):
    """Concatenates the last ``N`` values of each entry along ``dim``.

    In an env the stacked frames live in the TensorDict itself (the step reads the previous
    stack from its input), so the transform holds no per-env state: it works for batched
    envs, partial resets and ``ParallelEnv`` workers alike. After a reset the stack holds the
    first frame ``N`` times (``padding="same"``) or ``padding_value`` before it
    (``padding="constant"``).

    On a TensorDict whose last batch dim is time (a trajectory or a buffer sample of
    consecutive steps), calling the transform stacks the frames of each step from the steps
    before it in the same episode, padding at episode starts as above. An episode starts at
    index 0 and after every step whose ``done_key`` is set; ``("next", in_key)`` entries,
    when present, are stacked too.

    Args:
        N: the number of frames.
        dim: a negative dim to concatenate along (-3 for ``[C, H, W]`` images, -1 for
            vectors).
        in_keys: the entries. Defaults to ``["pixels"]``.
        out_keys: where the stacks go; default ``in_keys``.
        padding: ``"same"`` or ``"constant"``.
        padding_value: the constant padding.
        done_key: the flag that ends an episode in a trajectory. Defaults to
            ``("next", "done")``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = CatFrames(N=2, dim=-1, in_keys=["obs"])
        >>> traj = TensorDict(obs=torch.arange(4.0).unsqueeze(-1), batch_size=[4])
        >>> traj["next", "done"] = torch.tensor([[False], [True], [False], [False]])
        >>> t(traj)["obs"].tolist()
        [[0.0, 0.0], [0.0, 1.0], [2.0, 2.0], [2.0, 3.0]]
    """

    def __init__(
        self,
        N: int,
        dim: int,
        in_keys: NestedKey | Sequence[NestedKey] | None = None,
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        padding: str = "same",
        padding_value: float = 0.0,
        done_key: NestedKey = (NEXT, DONE),
    ) -> None:
        super().__init__(in_keys="pixels" if in_keys is None else in_keys, out_keys=out_keys)
        if not isinstance(N, int) or isinstance(N, bool) or N < 1:
            raise ValueError(f"CatFrames: expected N >= 1, got {N!r}.")
        if padding not in _PADDINGS:
            raise ValueError(f"CatFrames: padding must be one of {_PADDINGS}, got {padding!r}.")
        self.N = N
        self.dim = check_negative_dim(dim, "CatFrames")
        self.padding = padding
        self.padding_value = padding_value
        self.done_key = done_key

    # ------------------------------------------------------------------ env path
    def _first_stack(self, frame: torch.Tensor) -> torch.Tensor:
        if self.padding == "same":
            return torch.cat([frame] * self.N, self.dim)
        pad = torch.full_like(frame, self.padding_value)
        return torch.cat([pad] * (self.N - 1) + [frame], self.dim)

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frame = tensordict_reset.get(in_key, None)
            if frame is None:
                raise KeyError(f"CatFrames: the reset output has no {in_key!r} entry.")
            tensordict_reset.set(out_key, self._first_stack(frame))
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frame = next_tensordict.get(in_key)
            previous = tensordict.get(out_key, None)
            if previous is None:
                raise KeyError(
                    f"CatFrames: expected the stacked frames {out_key!r} in the TensorDict given "
                    f"to step; reset writes them. Reset the env first."
                )
            size = frame.shape[self.dim]
            kept = previous.narrow(self.dim, size, (self.N - 1) * size)
            next_tensordict.set(out_key, torch.cat([kept, frame], self.dim))
        return next_tensordict

    # ------------------------------------------------------------------ trajectory path
    def unfolding(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Stacks the frames of each step of a trajectory (last batch dim = time) from the
        steps before it in the same episode (TorchRL's offline path; calling the transform on
        a TensorDict runs it). The window is :func:`~rl_envs.transforms.functional.cat_frames`
        with the slots before each step's episode start padded.

        Args:
            tensordict: ``[*B, T]``; an episode starts at index 0 and after each step whose
                ``done_key`` is set.

        Returns:
            ``tensordict``, with the stacks at ``out_keys`` (and at ``("next", out_key)``
            where ``("next", in_key)`` is present).

        Raises:
            ValueError: ``tensordict`` has no batch dim.
        """
        time_dim, windows = episode_windows(tensordict, self.N, self.done_key, "CatFrames")
        pad = torch.stack([~valid for _, valid in windows], -1)  # [*B, T, N], oldest first
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            frames = tensordict.get(in_key, None)
            if frames is None:
                continue
            stacked = cat_frames(
                frames,
                self.N,
                self.dim,
                padding=self.padding,
                padding_value=self.padding_value,
                time_dim=time_dim - frames.ndim,
                done_mask=pad,
            )
            nxt = tensordict.get((NEXT, in_key), None)
            tensordict.set(out_key, stacked)
            if nxt is not None:
                size = nxt.shape[self.dim]
                kept = stacked.narrow(self.dim, size, (self.N - 1) * size)
                tensordict.set((NEXT, out_key), torch.cat([kept, nxt], self.dim))
        return tensordict

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.unfolding(tensordict)

    # ------------------------------------------------------------------ specs
    def _map_spec(self, key: NestedKey, spec: TensorSpec) -> TensorSpec:
        if len(spec.shape) < -self.dim:
            raise ValueError(
                f"CatFrames: the entry {key!r} of shape {tuple(spec.shape)} has no dim {self.dim}."
            )
        shape = list(spec.shape)
        shape[self.dim] *= self.N
        found = bounds(spec)
        if found is None:
            return continuous_like(spec, shape=shape)
        low = torch.cat([found[0].expand(spec.shape)] * self.N, self.dim)
        high = torch.cat([found[1].expand(spec.shape)] * self.N, self.dim)
        if self.padding == "constant":
            low = low.clamp_max(self.padding_value)
            high = high.clamp_min(self.padding_value)
        return continuous_like(spec, low=low, high=high, shape=shape)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        known = observation_spec.keys(include_nested=True, leaves_only=True)
        for in_key, out_key in zip(self.in_keys, self.out_keys):
            if in_key not in known:
                raise KeyError(
                    f"CatFrames: the key {in_key!r} is not an observation of the env below it "
                    f"(it has {known}). Fix in_keys."
                )
            observation_spec[out_key] = self._map_spec(in_key, observation_spec[in_key])
        return observation_spec

    def extra_repr(self) -> str:
        return f"N={self.N}, dim={self.dim}, {super().extra_repr()}, padding={self.padding!r}"


__all__ = ["CatFrames"]
