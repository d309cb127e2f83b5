"""ActionChunkTransform: the chunk of upcoming actions at each step, the training target of
action-chunking policies (ACT, diffusion policies)."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_core.keys import ACTION, NEXT, NestedKey

__all__ = ["ActionChunkTransform", "action_chunks"]

# TorchRL's keys for chunked actions (torchrl.data.vla): the chunk and its padding mask
_CHUNK_KEY: NestedKey = ("vla_action", "chunk")
_PAD_KEY: NestedKey = "action_is_pad"


def action_chunks(
    action: torch.Tensor, chunk_size: int, done: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The chunk of the ``chunk_size`` actions starting at each step of a trajectory window.

    Step ``t``'s chunk holds ``a[t], a[t + 1], ..., a[t + chunk_size - 1]``. A slot past the
    end of the window, or past the step that ends ``t``'s episode (the first ``s >= t`` with
    ``done[s]``), repeats the last action of the episode inside the window and is flagged in
    the padding mask.

    Args:
        action: ``[*B, T, action_dim]``, each row along ``T`` one contiguous window.
        chunk_size: ``H``, the actions per chunk (>= 1).
        done: ``[*B, T]`` bools, True at a step that ends its episode (TED's
            ``("next", "done")``), or ``None`` when each window is one episode.

    Returns:
        ``(chunk, is_pad)``: ``[*B, T, H, action_dim]`` and ``[*B, T, H]`` bools.

    Examples:
        >>> chunk, pad = action_chunks(torch.arange(4.0).view(4, 1), 3)
        >>> chunk[..., 0].tolist()
        [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 3.0], [3.0, 3.0, 3.0]]
        >>> pad.sum(-1).tolist()
        [0, 0, 1, 2]
    """
    steps = action.shape[-2]
    position = torch.arange(steps, device=action.device)
    if done is None:
        last = position.new_full(action.shape[:-1], steps - 1)
    else:
        # the last step of t's episode: the first done at or after t (else the window's end)
        marks = torch.where(done, position, position.new_tensor(steps - 1))
        last = marks.flip(-1).cummin(-1).values.flip(-1)
    wanted = position.unsqueeze(-1) + torch.arange(chunk_size, device=action.device)  # [T, H]
    is_pad = wanted > last.unsqueeze(-1)  # [*B, T, H]
    index = torch.minimum(wanted, last.unsqueeze(-1))
    flat = index.flatten(-2)  # [*B, T * H]
    gathered = action.gather(-2, flat.unsqueeze(-1).expand(*flat.shape, action.shape[-1]))
    return gathered.unflatten(-2, (steps, chunk_size)), is_pad


class ActionChunkTransform(Transform):
    """Writes, for each step of a trajectory window, the chunk of actions that starts there.

    Action-chunking policies (ACT, diffusion policies) predict the next ``H`` actions at
    once; their training target at step ``t`` is ``a[t], ..., a[t + H - 1]``. On a
    TensorDict whose action is shaped ``[*B, T, action_dim]`` (each row along ``T`` one
    contiguous window, e.g. a ``SliceSampler`` sample reshaped to ``[num_slices,
    slice_len]``), this writes the chunks ``[*B, T, H, action_dim]`` at ``chunk_key`` and the
    padding mask ``[*B, T, H]`` at ``pad_key`` (see :func:`action_chunks`): slots past the
    window's end, or past the end of the step's episode when the TensorDict holds
    ``("next", done_key)``, repeat the episode's last action and are flagged.

    It is a data transform: on a replay buffer it runs on the sample path (``extend`` stores
    the per-step data as it is). In an env it changes nothing (the steps, resets and specs
    pass through): how many predicted actions an env executes per policy call is the
    policy's or :class:`~rl_envs.transforms.MultiAction`'s business.

    Args:
        chunk_size: ``H``, the actions per chunk (>= 1).

    Keyword Args:
        action_key: the per-step action. Defaults to ``"action"``.
        chunk_key: where the chunks go. Defaults to ``("vla_action", "chunk")``.
        pad_key: where the padding mask goes. Defaults to ``"action_is_pad"``.
        time_dim: the time dim of the action; the action dim must follow it. Defaults to -2.
        done_key: the done flag read under ``"next"`` (shaped like the action without its
            last dim, with or without a trailing 1) to cut chunks at episode ends; ``None``
            ignores it. When the entry is absent each window is taken as one episode.
            Defaults to ``"done"``.

    Raises:
        ValueError: ``chunk_size`` < 1; on a call, an action whose action dim does not follow
            ``time_dim``, or a done entry that does not line up with the action.
        KeyError: on a call, no entry at ``action_key``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = ActionChunkTransform(3)
        >>> td = TensorDict(action=torch.arange(4.0).view(1, 4, 1), batch_size=[1, 4])
        >>> t(td)["vla_action", "chunk"][0, :, :, 0].tolist()
        [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 3.0], [3.0, 3.0, 3.0]]
        >>> td["next", "done"] = torch.tensor([[False, True, False, False]]).unsqueeze(-1)
        >>> t(td)["vla_action", "chunk"][0, :2, :, 0].tolist()
        [[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
        >>> t(td)["action_is_pad"][0, 0].tolist()
        [False, False, True]
    """

    def __init__(
        self,
        chunk_size: int,
        *,
        action_key: NestedKey = ACTION,
        chunk_key: NestedKey = _CHUNK_KEY,
        pad_key: NestedKey = _PAD_KEY,
        time_dim: int = -2,
        done_key: NestedKey | None = "done",
    ) -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(
                f"ActionChunkTransform: expected chunk_size to be an int >= 1 (the actions per "
                f"chunk), got {chunk_size!r}."
            )
        if isinstance(time_dim, bool) or not isinstance(time_dim, int):
            raise TypeError(
                f"ActionChunkTransform: expected time_dim to be an int, got {time_dim!r}."
            )
        super().__init__(in_keys=[action_key], out_keys=[chunk_key])
        self.chunk_size = chunk_size
        self.time_dim = time_dim
        self.action_key = action_key
        self.chunk_key = chunk_key
        self.pad_key = pad_key
        self.done_key = done_key

    def _done(self, tensordict: TensorDictBase, action: torch.Tensor) -> torch.Tensor | None:
        if self.done_key is None:
            return None
        key = (NEXT, *((self.done_key,) if isinstance(self.done_key, str) else self.done_key))
        done = tensordict.get(key, None)
        if done is None:
            return None
        lead = action.shape[:-1]
        if done.shape == (*lead, 1):
            done = done.squeeze(-1)
        if done.shape != lead:
            raise ValueError(
                f"ActionChunkTransform: the {key!r} entry has shape {tuple(done.shape)}, which "
                f"does not line up with the action of shape {tuple(action.shape)}: expected "
                f"{tuple(lead)} or {(*lead, 1)}. Pass done_key=None to chunk without episode "
                f"ends."
            )
        return done.bool()

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Writes the chunks and the padding mask (see the class docstring)."""
        action = tensordict.get(self.action_key, None)
        if action is None:
            raise KeyError(
                f"ActionChunkTransform: the TensorDict has no action at {self.action_key!r}; "
                f"its keys are {sorted(map(str, tensordict.keys(True, True)))}. Pass "
                f"action_key=... to read another entry."
            )
        dim = self.time_dim if self.time_dim >= 0 else action.dim() + self.time_dim
        if dim != action.dim() - 2:
            raise ValueError(
                f"ActionChunkTransform: expected the action shaped [..., T, action_dim] with "
                f"its time dim at time_dim={self.time_dim}, got an action of shape "
                f"{tuple(action.shape)}. Reshape the sample to [num_slices, slice_len] first."
            )
        chunk, is_pad = action_chunks(action, self.chunk_size, self._done(tensordict, action))
        tensordict.set(self.chunk_key, chunk)
        tensordict.set(self.pad_key, is_pad)
        return tensordict

    # In an env the transform passes everything through.
    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase | None, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return output_spec

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return input_spec

    def extra_repr(self) -> str:
        return (
            f"chunk_size={self.chunk_size}, action_key={self.action_key!r}, "
            f"chunk_key={self.chunk_key!r}, pad_key={self.pad_key!r}, done_key={self.done_key!r}"
        )
