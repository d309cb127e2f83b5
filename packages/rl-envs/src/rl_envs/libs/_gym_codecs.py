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
            return TensorDict._new_unsafe(source=source, batch_size=size, device=None, nested=False)

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


def make_encoder(space: Any, spec: TensorSpec, batch: tuple[int, ...]) -> Encoder:
    """Builds the function that converts a value of ``spec`` (an action) for ``env.step``.

    Args:
        space: the gymnasium space of one sub-env.
        spec: the spec built for it by ``gym_space_to_spec`` (batch dims included).
        batch: the batch shape.

    Returns:
        ``encode(value)``: a numpy array, a python int (a ``Discrete`` action of a single
        env), a dict (``Dict`` spaces), a tuple (``Tuple`` spaces) or a string.
    """
    from gymnasium import spaces

    if isinstance(spec, Composite):
        encoders = {key: make_encoder(space.spaces[key], spec[key], batch) for key in spec.keys()}
        return lambda value: {key: enc(value.get(key)) for key, enc in encoders.items()}
    if isinstance(space, spaces.Tuple):
        members = [
            make_encoder(sub, spec[(slice(None),) * len(batch) + (i,)], batch)
            for i, sub in enumerate(space.spaces)
        ]
        dim = len(batch)
        return lambda value: tuple(enc(v) for enc, v in zip(members, value.unbind(dim)))
    if isinstance(spec, NonTensor):
        return lambda value: value.tolist() if isinstance(value, NonTensorStack) else value.data
    np_dtype = np.dtype(space.dtype)
    if isinstance(spec, OneHot | MultiOneHot | Categorical | MultiCategorical):
        return _discrete_encoder(spec, discrete_start(space), np_dtype, single=not batch)
    if isinstance(spec, Bounded | Unbounded | Binary):
        return lambda value: np.asarray(_numpy(value), dtype=np_dtype)
    raise TypeError(f"make_encoder: no encoder for a {type(spec).__name__} spec ({spec!r}).")


def _numpy(value: Any) -> np.ndarray:
    """A numpy view (CPU tensors) or copy of ``value``."""
    if isinstance(value, torch.Tensor):
        if value.is_cpu and not value.requires_grad:
            return value.numpy()  # one call instead of detach().cpu().numpy()
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _discrete_encoder(spec: TensorSpec, start: Any, np_dtype: np.dtype, *, single: bool):
    if isinstance(spec, OneHot | Categorical) and single and spec.ndim == spec._event_ndim:
        # One Discrete action, as the numpy scalar that action_space.sample() gives (gymnasium
        # checks those faster than python ints); a python argmax of a short list beats torch.
        actions = np.arange(start, start + spec.n, dtype=np_dtype)
        if isinstance(spec, OneHot):

            def encode_one_hot(value: Any) -> np.integer:
                entries = value.tolist() if isinstance(value, torch.Tensor) else list(value)
                return actions[entries.index(max(entries))]

            return encode_one_hot
        return lambda value: actions[int(value)]
    if isinstance(spec, MultiOneHot):
        to_numpy = spec.to_numpy

        def encode_multi_hot(value: Any) -> np.ndarray:
            value = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
            return (to_numpy(value) + start).astype(np_dtype, copy=False)

        return encode_multi_hot
    if isinstance(spec, OneHot):
        return lambda value: _offset(_numpy(value).argmax(-1), start, np_dtype)
    return lambda value: _offset(_numpy(value), start, np_dtype)


def _offset(index: np.ndarray, start: Any, np_dtype: np.dtype) -> np.ndarray:
    if not isinstance(start, np.ndarray) and not start:
        return index.astype(np_dtype, copy=False)
    return (index + start).astype(np_dtype, copy=False)


__all__ = ["Decoder", "Encoder", "make_decoder", "make_encoder"]
