"""Value conversions between gymnasium (numpy) and rl-core (torch), space by space.

A *decoder* turns a value of a space (batched by ``B`` for a vector env, as gymnasium's vector
envs return it) into the tensor, TensorDict or non-tensor entry its spec describes. An
*encoder* turns a value of the spec (an action) into what ``env.step`` takes. Both follow the
mapping of :mod:`rl_envs.libs._gym_specs` and are built once per space, so a step costs a few
numpy/torch calls and no dispatch on types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDict

from rl_core._accel.td_access import build_tensordict
from rl_core.keys import ACTION
from rl_core.specs import (
    Binary,
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    MultiOneHot,
    NonTensor,
    OneHot,
    TensorSpec,
    Unbounded,
)
from rl_envs.libs._gym_specs import discrete_start

Decoder = Callable[[Any], Any]
Encoder = Callable[[Any], Any]


def _array_to_tensor(np_dtype: np.dtype, copy: bool) -> Decoder:
    """numpy (or python) value -> tensor of ``np_dtype``; ``copy`` when the env may reuse it."""
    if copy:

        def decode(value: Any) -> torch.Tensor:
            return torch.from_numpy(np.array(value, dtype=np_dtype))

        return decode

    def decode_shared(value: Any) -> torch.Tensor:
        array = np.asarray(value, dtype=np_dtype)
        try:
            return torch.from_numpy(array)
        except ValueError:  # negative strides (a flipped image): torch needs a copy
            return torch.from_numpy(np.ascontiguousarray(array))

    return decode_shared


def make_decoder(
    space: Any, spec: TensorSpec, batch: tuple[int, ...], *, copy: bool = True
) -> Decoder:
    """Builds the function that converts a value of ``space`` to a value of ``spec``.

    Args:
        space: the gymnasium space of one sub-env.
        spec: the spec built for it by ``gym_space_to_spec`` (batch dims included).
        batch: the batch shape.

    Keyword Args:
        copy: copy numpy arrays (the env may write into them later). Defaults to ``True``.

    Returns:
        ``decode(value)``: a tensor, a TensorDict (``Dict`` spaces) or non-tensor data, on the
        CPU.
    """
    from gymnasium import spaces

    if isinstance(spec, Composite):
        decoders = {
            key: make_decoder(space.spaces[key], spec[key], batch, copy=copy) for key in spec.keys()
        }
        size = torch.Size(batch)

        def decode_dict(value: Any) -> TensorDict:
            source = {key: dec(value[key]) for key, dec in decoders.items()}
            return build_tensordict(source, size)

        return decode_dict
    if isinstance(space, spaces.Tuple):
        members = [
            make_decoder(sub, spec[(slice(None),) * len(batch) + (i,)], batch, copy=copy)
            for i, sub in enumerate(space.spaces)
        ]
        dim = len(batch)

        def decode_tuple(value: Any) -> torch.Tensor:
            return torch.stack([dec(v) for dec, v in zip(members, value)], dim)

        return decode_tuple
    if isinstance(spec, NonTensor):
        if batch:

            def decode_texts(value: Any) -> NonTensorStack:
                return NonTensorStack.from_list([str(v) for v in value])

            return decode_texts
        return lambda value: NonTensorData(data=str(value), batch_size=())
    if isinstance(spec, OneHot | MultiOneHot | Categorical | MultiCategorical):
        start = discrete_start(space)
        offset = torch.as_tensor(start) if isinstance(start, np.ndarray) or start else None

        def decode_index(value: Any) -> torch.Tensor:
            index = torch.from_numpy(np.array(value, dtype=np.int64))
            return index if offset is None else index - offset

        if isinstance(spec, Categorical | MultiCategorical):
            return decode_index
        encode = spec.encode
        return lambda value: encode(decode_index(value))
    if isinstance(spec, Bounded | Unbounded | Binary):
        return _array_to_tensor(np.dtype(space.dtype), copy)
    raise TypeError(f"make_decoder: no decoder for a {type(spec).__name__} spec ({spec!r}).")


def make_encoder(
    space: Any,
    spec: TensorSpec,
    batch: tuple[int, ...],
    *,
    who: str | None = None,
    key: str = ACTION,
) -> Encoder:
    """Builds the function that converts a value of ``spec`` (an action) for ``env.step``.

    Args:
        space: the gymnasium space of one sub-env.
        spec: the spec built for it by ``gym_space_to_spec`` (batch dims included).
        batch: the batch shape.

    Keyword Args:
        who: the env, named in the errors. With ``None`` the values are trusted (actions drawn
            from ``spec``): no check. Defaults to ``None``.
        key: the action entry, named in the errors. Defaults to ``"action"``.

    Returns:
        ``encode(value)``: a numpy array, a numpy integer (a ``Discrete`` action of a single
        env), a dict (``Dict`` spaces), a tuple (``Tuple`` spaces) or a string. With ``who``,
        it raises ``ValueError`` for a value of the wrong shape, an index outside
        ``[0, n)``, or a one-hot vector without exactly one 1 (gymnasium would take those as
        another action), and ``KeyError`` for a missing ``Dict`` entry.
    """
    from gymnasium import spaces

    if isinstance(spec, Composite):
        encoders = {
            name: make_encoder(space.spaces[name], spec[name], batch, who=who, key=name)
            for name in spec.keys()
        }
        if who is None:
            return lambda value: {name: enc(value.get(name)) for name, enc in encoders.items()}

        def encode_dict(value: Any) -> dict[str, Any]:
            return {name: enc(require(value, name, who)) for name, enc in encoders.items()}

        return encode_dict
    if isinstance(space, spaces.Tuple):
        members = [
            make_encoder(sub, spec[(slice(None),) * len(batch) + (i,)], batch, who=who, key=key)
            for i, sub in enumerate(space.spaces)
        ]
        dim = len(batch)
        return lambda value: tuple(enc(v) for enc, v in zip(members, value.unbind(dim)))
    if isinstance(spec, NonTensor):
        return lambda value: value.tolist() if isinstance(value, NonTensorStack) else value.data
    np_dtype = np.dtype(space.dtype)
    check = None if who is None else _ActionCheck(spec, who, key)
    if isinstance(spec, OneHot | MultiOneHot | Categorical | MultiCategorical):
        return _discrete_encoder(spec, discrete_start(space), np_dtype, check, single=not batch)
    if isinstance(spec, Bounded | Unbounded | Binary):
        if check is None:
            return lambda value: np.asarray(_numpy(value), dtype=np_dtype)
        shape = tuple(spec.shape)

        def encode_array(value: Any) -> np.ndarray:
            array = np.asarray(_numpy(value), dtype=np_dtype)
            if array.shape != shape:
                raise check.error(value)
            return array

        return encode_array
    raise TypeError(f"make_encoder: no encoder for a {type(spec).__name__} spec ({spec!r}).")


def require(td: Any, key: str, who: str) -> Any:
    """``td[key]``, or a ``KeyError`` naming the missing action entry and the env."""
    value = td.get(key, None)
    if value is None:
        raise KeyError(
            f"{who}.step: the input has no {key!r} entry; expected the action under {key!r} "
            f"(got the keys {sorted(str(k) for k in td.keys())})."
        )
    return value


class _ActionCheck:
    """What a valid action of ``spec`` looks like, and the error for one that is not."""

    def __init__(self, spec: TensorSpec, who: str, key: str) -> None:
        self.who, self.key, self.shape = who, key, tuple(spec.shape)
        if isinstance(spec, OneHot):
            self.expected = f"one-hot vectors of shape {self.shape} (one 1 per vector)"
        elif isinstance(spec, MultiOneHot):
            self.expected = (
                f"one-hot blocks of sizes {list(spec.nvec.tolist())}, shape {self.shape}"
            )
        elif isinstance(spec, Categorical):
            self.expected = f"indices in [0, {spec.n - 1}] of shape {self.shape}"
        elif isinstance(spec, MultiCategorical):
            self.expected = f"indices below nvec={list(spec.nvec.tolist())} of shape {self.shape}"
        else:
            self.expected = f"a value of shape {self.shape}"

    def error(self, value: Any) -> ValueError:
        if isinstance(value, torch.Tensor | np.ndarray):
            shown = value.tolist() if _numel(value) <= 16 else "..."
            got = f"shape {tuple(value.shape)}: {shown}"
        else:
            got = repr(value)
        return ValueError(
            f"{self.who}.step: bad action at key {self.key!r}: expected {self.expected}, "
            f"got {got}. Draw actions from env.action_spec (rand, project)."
        )


def _numel(value: torch.Tensor | np.ndarray) -> int:
    return value.numel() if isinstance(value, torch.Tensor) else int(value.size)


def _numpy(value: Any) -> np.ndarray:
    """A numpy view (CPU tensors) or copy of ``value``."""
    if isinstance(value, torch.Tensor):
        if value.is_cpu and not value.requires_grad:
            return value.numpy()  # one call instead of detach().cpu().numpy()
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _discrete_encoder(
    spec: TensorSpec, start: Any, np_dtype: np.dtype, check: _ActionCheck | None, *, single: bool
) -> Encoder:
    if isinstance(spec, OneHot | Categorical) and single and spec.ndim == spec._event_ndim:
        return _single_discrete_encoder(spec, start, np_dtype, check)
    if isinstance(spec, MultiOneHot):
        to_numpy = spec.to_numpy
        starts = np.cumsum([0, *spec.nvec.tolist()[:-1]])

        def encode_multi_hot(value: Any) -> np.ndarray:
            if check is not None:
                array = _numpy(value)
                if array.shape != check.shape or not _one_hot_blocks(array, starts):
                    raise check.error(value)
            value = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
            return (to_numpy(value) + start).astype(np_dtype, copy=False)

        return encode_multi_hot
    if isinstance(spec, OneHot):
        if check is None:
            return lambda value: _offset(_numpy(value).argmax(-1), start, np_dtype)

        eye = np.eye(spec.n, dtype=np.int64)
        # Valid small actions seen before (by dtype and bytes; the shape is checked) and their
        # encodings: a vector env's policy repeats a few of them, and a lookup beats the check.
        seen: dict[tuple[np.dtype, bytes], np.ndarray] = {}

        def encode_one_hot(value: Any) -> np.ndarray:
            array = _numpy(value)
            if array.shape != check.shape:
                raise check.error(value)
            key = (array.dtype, array.tobytes()) if array.size <= _SMALL_ONE_HOT else None
            if key is not None:
                known = seen.get(key)
                if known is not None:
                    return known.copy()
            index = array.argmax(-1)
            # A valid action is the one-hot vector of its argmax (one 1, zeros elsewhere).
            if not (array == eye[index]).all():
                raise check.error(value)
            encoded = _offset(index, start, np_dtype)
            if key is not None and len(seen) < _SEEN_ONE_HOT:
                seen[key] = encoded.copy()
            return encoded

        return encode_one_hot
    if check is None:
        return lambda value: _offset(_numpy(value), start, np_dtype)
    high = (spec.nvec if isinstance(spec, MultiCategorical) else torch.tensor(spec.n)).numpy()

    def encode_index(value: Any) -> np.ndarray:
        array = _numpy(value)
        if array.shape != check.shape or not ((array >= 0) & (array < high)).all():
            raise check.error(value)
        return _offset(array, start, np_dtype)

    return encode_index


# One-hot actions of at most this many elements are remembered once checked and encoded, up
# to this many distinct ones per encoder.
_SMALL_ONE_HOT = 64
_SEEN_ONE_HOT = 1024


def _single_discrete_encoder(
    spec: TensorSpec, start: Any, np_dtype: np.dtype, check: _ActionCheck | None
) -> Encoder:
    # One Discrete action, as the numpy scalar that action_space.sample() gives (gymnasium
    # checks those faster than python ints); python list work on a short vector beats torch.
    n = spec.n
    actions = np.arange(start, start + n, dtype=np_dtype)
    if isinstance(spec, OneHot):

        def encode_one_hot(value: Any) -> np.integer:
            entries = value.tolist() if isinstance(value, torch.Tensor) else list(value)
            if check is not None and (
                len(entries) != n or entries.count(1) != 1 or entries.count(0) != n - 1
            ):
                raise check.error(value)
            return actions[entries.index(max(entries))]

        return encode_one_hot
    if check is None:
        return lambda value: actions[int(value)]

    def encode_index(value: Any) -> np.integer:
        index = int(value) if _numel_any(value) == 1 else -1
        if not 0 <= index < n or index != value:
            raise check.error(value)
        return actions[index]

    return encode_index


def _numel_any(value: Any) -> int:
    if isinstance(value, torch.Tensor | np.ndarray):
        return _numel(value)
    return 1 if isinstance(value, int | np.integer) else 0


def _one_hot_blocks(array: np.ndarray, starts: np.ndarray | None) -> bool:
    """Whether ``array`` holds 0/1 entries with exactly one 1 per (block of the) last dim."""
    if array.dtype != np.bool_ and not ((array == 0) | (array == 1)).all():
        return False
    if array.dtype == np.bool_:
        array = array.view(np.uint8)
    counts = array.sum(-1) if starts is None else np.add.reduceat(array, starts, axis=-1)
    return bool((counts == 1).all())


def _offset(index: np.ndarray, start: Any, np_dtype: np.dtype) -> np.ndarray:
    if not isinstance(start, np.ndarray) and not start:
        return index.astype(np_dtype, copy=False)
    return (index + start).astype(np_dtype, copy=False)


__all__ = ["Decoder", "Encoder", "make_decoder", "make_encoder", "require"]
