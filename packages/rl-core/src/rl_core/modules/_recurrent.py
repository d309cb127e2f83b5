"""The machinery shared by LSTMModule and GRUModule: keys, step mode and sequence mode."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any, NamedTuple

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase, dispatch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from rl_core._transform.primer import TensorDictPrimer
from rl_core.exploration import recurrent_mode
from rl_core.keys import NEXT, NestedKey, key_path
from rl_core.modules.rnn import _PythonRNNMixin
from rl_core.specs import Composite, Unbounded


class _Segments(NamedTuple):
    """Where the sequences of a ``[N, T]`` batch are cut into independent segments.

    ``S`` segments in all; the flat step ``i`` (``0 <= i < N * T``) is step ``pos[i]`` of
    segment ``seg_id[i]``; segment ``s`` starts at flat step ``start[s]`` and has
    ``lengths[s]`` steps.
    """

    seg_id: torch.Tensor  # [N * T] int64
    pos: torch.Tensor  # [N * T] int64
    start: torch.Tensor  # [S] int64
    lengths: torch.Tensor  # [S] int64


def split_at_resets(is_init: torch.Tensor) -> _Segments:
    """Cuts each row of a ``[N, T]`` batch before every step where ``is_init`` is True.

    Every row also starts a segment at ``t = 0``, so segments never cross rows.

    Args:
        is_init: boolean tensor of shape ``[N, T]``.

    Returns:
        The segments (see :class:`_Segments`).
    """
    n, t = is_init.shape
    starts = is_init.clone()
    starts[:, 0] = True
    flat = starts.reshape(-1)
    seg_id = flat.cumsum(0) - 1
    start = flat.nonzero().squeeze(-1)
    pos = torch.arange(n * t, device=is_init.device) - start[seg_id]
    lengths = torch.bincount(seg_id, minlength=start.numel())
    return _Segments(seg_id, pos, start, lengths)


def _as_key_list(keys: Sequence[NestedKey], n: int, where: str, arg: str) -> list[NestedKey]:
    keys = [keys] if isinstance(keys, str | tuple) else list(keys)
    if len(keys) != n:
        raise ValueError(
            f"{where}: expected {n} {arg} (the input and {n - 1} hidden state(s)), got "
            f"{len(keys)}: {keys}."
        )
    return keys


class RecurrentModuleBase(TensorDictModuleBase):
    """Runs a batch-first ``nn.LSTM`` / ``nn.GRU`` on TensorDicts, in step or sequence mode.

    Subclasses set ``_cell_name`` and convert between the tuple of hidden states read from
    the TensorDict (each ``[N, num_layers, H]``) and what the torch module takes.
    """

    _cell_name: str = "RNN"

    def __init__(
        self,
        rnn: nn.LSTM | nn.GRU,
        in_keys: list[NestedKey],
        out_keys: list[NestedKey],
        *,
        is_init_key: NestedKey,
        recurrent_mode: bool,
    ) -> None:
        super().__init__()
        self.rnn = rnn
        self.in_keys = [*in_keys, is_init_key]  # as TorchRL, the reset marker is an input too
        self.out_keys = out_keys
        self.is_init_key = is_init_key
        self._recurrent_mode = recurrent_mode

    # -- conversions between TensorDict layout and torch layout -------------------------------
    def _to_torch(self, states: list[torch.Tensor]) -> Any:
        raise NotImplementedError

    def _from_torch(self, states: Any) -> list[torch.Tensor]:
        raise NotImplementedError

    # -- public surface ------------------------------------------------------------------------
    @property
    def recurrent_mode(self) -> bool:
        """Whether the module runs on ``[*B, T]`` sequences (``True``) or single steps.

        Inside a :class:`set_recurrent_mode` block that mode, else the module's own default.
        """
        mode = recurrent_mode()
        return self._recurrent_mode if mode is None else mode

    @property
    def _state_keys(self) -> list[NestedKey]:
        return self.in_keys[1:-1]

    @property
    def state_shape(self) -> torch.Size:
        """Shape of each hidden state per batch element: ``(num_layers, hidden_size)``."""
        return torch.Size((self.rnn.num_layers, self.rnn.hidden_size))

    def recurrent_state_spec(self) -> Composite:
        """Returns the specs of the hidden states, for an env transform that adds them at reset.

        Returns:
            A Composite with one ``Unbounded(shape=(num_layers, hidden_size))`` entry per
            hidden state key (``in_keys[1:-1]``), of the parameters' dtype and device. Its
            ``zero(batch)`` is the state of fresh envs.
        """
        weight = next(self.rnn.parameters())
        return Composite(
            {
                key: Unbounded(shape=self.state_shape, device=weight.device, dtype=weight.dtype)
                for key in self._state_keys
            }
        )

    def make_tensordict_primer(self) -> TensorDictPrimer:
        """Returns the env transform that writes zero hidden states at reset and carries them.

        ``env.append_transform(module.make_tensordict_primer())`` (with an ``InitTracker``
        for the resets) lets ``env.rollout(n, policy)`` and the collectors keep the hidden
        state in the TensorDict: the primer writes zeros at reset, and each step copies the
        policy's ``("next", state)`` to the next step's root.

        Returns:
            A :class:`~rl_core.TensorDictPrimer` over :meth:`recurrent_state_spec`: one
            ``Unbounded(shape=(num_layers, hidden_size))`` entry per hidden state key.

        Raises:
            RuntimeError: an output state key is not its input key under ``"next"`` (the
                primer could not carry the state from one step to the next).
        """
        for in_key, out_key in zip(self._state_keys, self.out_keys[1:]):
            path = key_path(in_key)
            got = key_path(out_key)
            if got != (NEXT, *path):
                raise RuntimeError(
                    f"{type(self).__name__}.make_tensordict_primer: expected each output state "
                    f"key to be its input key under 'next' ({(NEXT, *path)!r} for {in_key!r}), "
                    f"got {out_key!r}. Build the module with out_keys=[output, "
                    f"('next', {in_key!r}), ...]."
                )
        return TensorDictPrimer(self.recurrent_state_spec())

    def set_recurrent_mode(self, mode: bool = True) -> RecurrentModuleBase:
        """Returns a copy in sequence mode (``True``) or step mode; parameters are shared.

        Args:
            mode: ``True`` for sequence mode, ``False`` for step mode.

        Returns:
            A new module of the same class holding the same ``rnn`` object.
        """
        out = self.__class__.__new__(self.__class__)
        RecurrentModuleBase.__init__(
            out,
            self.rnn,
            self.in_keys[:-1],
            list(self.out_keys),
            is_init_key=self.is_init_key,
            recurrent_mode=bool(mode),
        )
        return out

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Reads the input and hidden states, runs the cell, writes output and next states.

        Args:
            tensordict: in step mode, batch ``[*B]`` with the input at ``in_keys[0]``
                (``[*B, F]``) and the hidden states (``[*B, num_layers, H]``, zeros when
                missing). In sequence mode, batch ``[*B, T]`` (time is the last batch dim)
                with the input ``[*B, T, F]``; the hidden states are read at ``t = 0``.
                Where ``is_init`` is True the state restarts from zeros.

        Returns:
            ``tensordict`` with the output ``[*B, (T,) H]`` at ``out_keys[0]`` and the next
            hidden states at ``out_keys[1:]``. In sequence mode a step holds its next state
            only at the end of a segment (the last step, or a step followed by ``is_init``);
            the other steps hold zeros.
        """
        where = f"{type(self).__name__}.forward"
        x = tensordict.get(self.in_keys[0])
        sequence = self.recurrent_mode
        if sequence:
            if tensordict.batch_dims == 0:
                raise ValueError(
                    f"{where}: sequence mode needs a time dimension, got a TensorDict with "
                    f"batch_size=[]. Pass [*B, T] data or use set_recurrent_mode(False)."
                )
            batch = tensordict.batch_size
        else:
            batch = x.shape[:-1]
        n_batch = batch.numel()
        states = [self._read_state(tensordict, key, batch, x, where) for key in self._state_keys]
        is_init = tensordict.get(self.is_init_key, None)
        if is_init is not None:
            if is_init.numel() != n_batch:
                raise ValueError(
                    f"{where}: expected {self.is_init_key!r} of shape {list(batch)} or "
                    f"{[*batch, 1]}, got {list(is_init.shape)}."
                )
            is_init = is_init.reshape(batch).bool()
        if sequence:
            y, next_states = self._sequence(x, states, is_init, batch)
        else:
            y, next_states = self._step(x, states, is_init, batch)
        tensordict.set(self.out_keys[0], y)
        for key, state in zip(self.out_keys[1:], next_states):
            tensordict.set(key, state)
        return tensordict

    # -- internals -----------------------------------------------------------------------------
    def _read_state(
        self,
        tensordict: TensorDictBase,
        key: NestedKey,
        batch: torch.Size,
        x: torch.Tensor,
        where: str,
    ) -> torch.Tensor:
        state = tensordict.get(key, None)
        if state is None:
            return x.new_zeros((*batch, *self.state_shape))
        expected = (*batch, *self.state_shape)
        if state.shape != expected:
            raise ValueError(
                f"{where}: expected {key!r} of shape {expected} (batch, then num_layers and "
                f"hidden_size), got {tuple(state.shape)}."
            )
        return state

    def _step(
        self,
        x: torch.Tensor,
        states: list[torch.Tensor],
        is_init: torch.Tensor | None,
        batch: torch.Size,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        n = batch.numel()
        flat = [s.reshape(n, *self.state_shape) for s in states]
        if is_init is not None:
            keep = (~is_init.reshape(n, 1, 1)).to(x.dtype)
            flat = [s * keep for s in flat]
        y, new = self.rnn(x.reshape(n, 1, x.shape[-1]), self._to_torch(flat))
        next_states = [s.reshape(*batch, *self.state_shape) for s in self._from_torch(new)]
        return y.reshape(*batch, y.shape[-1]), next_states

    def _sequence(
        self,
        x: torch.Tensor,
        states: list[torch.Tensor],
        is_init: torch.Tensor | None,
        batch: torch.Size,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        t = batch[-1]
        n = batch.numel() // t
        x = x.reshape(n, t, x.shape[-1])
        first = [s.reshape(n, t, *self.state_shape)[:, 0] for s in states]
        if is_init is None:
            is_init = torch.zeros(n, t, dtype=torch.bool, device=x.device)
        else:
            is_init = is_init.reshape(n, t)
        if isinstance(self.rnn, _PythonRNNMixin):
            # the Python loop restarts the state at each is_init step: no segmenting needed
            y, every = self.rnn._run(x, [s.transpose(0, 1) for s in first], is_init)
            ends = torch.ones_like(is_init)
            ends[:, :-1] = is_init[:, 1:]
            keep_end = ends.reshape(n, t, 1, 1).to(x.dtype)
            next_states = [(s * keep_end).reshape(*batch, *self.state_shape) for s in every]
            return y.reshape(*batch, y.shape[-1]), next_states
        keep = (~is_init[:, 0]).reshape(n, 1, 1).to(x.dtype)
        first = [s * keep for s in first]
        if not is_init[:, 1:].any():
            y, last = self.rnn(x, self._to_torch(first))
            ends = torch.arange(t - 1, n * t, t, device=x.device)
            last = self._from_torch(last)
        elif x.device.type == "cpu":
            y, last, ends = self._chunked(x, first, is_init)
        else:
            y, last, ends = self._segmented(x, first, is_init)
        next_states = []
        for s in last:
            full = s.new_zeros(n * t, *self.state_shape)
            full[ends] = s
            next_states.append(full.reshape(*batch, *self.state_shape))
        return y.reshape(*batch, y.shape[-1]), next_states

    def _chunked(
        self, x: torch.Tensor, first: list[torch.Tensor], is_init: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        """Cuts the time axis where any row restarts and runs the fused module on each chunk.

        On CPU this beats packed segments (whose many short sequences the CPU kernel runs
        slowly): one fused call per distinct reset time, at most ``T`` calls of one step each.
        The rows restarting at a cut get zero states; the others carry theirs on.
        """
        n, t, _ = x.shape
        cuts = (is_init[:, 1:].any(0).nonzero().squeeze(-1) + 1).tolist()
        bounds = [0, *cuts, t]
        rows = torch.arange(n, device=x.device)
        states, outputs, end_states, end_index = first, [], [], []
        for a, b in pairwise(bounds):
            if a > 0:
                restart = is_init[:, a]
                # the segments of the restarting rows end at a - 1
                end_index.append(rows[restart] * t + a - 1)
                end_states.append([s[restart] for s in states])
                keep = (~restart).reshape(n, 1, 1).to(x.dtype)
                states = [s * keep for s in states]
            y, new = self.rnn(x[:, a:b], self._to_torch(states))
            states = self._from_torch(new)
            outputs.append(y)
        end_index.append(rows * t + t - 1)
        end_states.append(states)
        last = [torch.cat([e[i] for e in end_states]) for i in range(len(first))]
        return torch.cat(outputs, 1), last, torch.cat(end_index)

    def _segmented(
        self, x: torch.Tensor, first: list[torch.Tensor], is_init: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
        n, t, f = x.shape
        seg = split_at_resets(is_init)
        n_seg = seg.start.numel()
        padded = x.new_zeros(n_seg, int(seg.lengths.max()), f)
        padded[seg.seg_id, seg.pos] = x.reshape(n * t, f)
        # A segment that opens a row continues the stored state; the others restart at zero.
        opens_row = seg.start % t == 0
        rows = seg.start[opens_row] // t
        init = []
        for s in first:
            s0 = s.new_zeros(n_seg, *self.state_shape)
            s0[opens_row] = s[rows]
            init.append(s0)
        packed = pack_padded_sequence(
            padded, seg.lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        out, last = self.rnn(packed, self._to_torch(init))
        y, _ = pad_packed_sequence(out, batch_first=True, total_length=padded.shape[1])
        y = y[seg.seg_id, seg.pos].reshape(n, t, -1)
        return y, self._from_torch(last), seg.start + seg.lengths - 1

    def extra_repr(self) -> str:
        mode = "sequence" if self.recurrent_mode else "step"
        return f"in_keys={self.in_keys}, out_keys={self.out_keys}, mode={mode}"


def _default_keys(
    in_key: NestedKey | None,
    in_keys: Sequence[NestedKey] | None,
    out_key: NestedKey | None,
    out_keys: Sequence[NestedKey] | None,
    state_names: Sequence[str],
    where: str,
    is_init_key: NestedKey,
) -> tuple[list[NestedKey], list[NestedKey]]:
    """Builds ``[in, *states]`` and ``[out, *("next", state)]`` from either form of the keys.

    ``in_keys`` may end with ``is_init_key`` (TorchRL's layout); it is dropped here.
    """
    n = 1 + len(state_names)
    if (in_key is None) == (in_keys is None):
        raise ValueError(
            f"{where}: pass exactly one of in_key (e.g. 'embed') or in_keys ([input, "
            f"{', '.join(repr(s) for s in state_names)}]), got in_key={in_key!r}, "
            f"in_keys={in_keys!r}."
        )
    if (out_key is None) == (out_keys is None):
        raise ValueError(
            f"{where}: pass exactly one of out_key or out_keys, got out_key={out_key!r}, "
            f"out_keys={out_keys!r}."
        )
    if in_keys is None:
        in_keys = [in_key, *state_names]
    elif not isinstance(in_keys, str | tuple) and len(in_keys) == n + 1:
        if in_keys[-1] != is_init_key:
            raise ValueError(
                f"{where}: expected in_keys [input, {', '.join(map(repr, state_names))}] "
                f"optionally followed by {is_init_key!r}, got {list(in_keys)}."
            )
        in_keys = list(in_keys)[:-1]
    if out_keys is None:
        out_keys = [out_key, *((NEXT, name) for name in state_names)]
    return (
        _as_key_list(in_keys, n, where, "in_keys"),
        _as_key_list(out_keys, n, where, "out_keys"),
    )
