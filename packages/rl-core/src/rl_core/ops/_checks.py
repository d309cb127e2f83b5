"""Argument checks and the move to and from the ``[T, N]`` kernel layout (value ops)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import reduce

import torch
from torch import Tensor


def scalar(where: str, arg: str, value: float | Tensor) -> float:
    """Returns ``value`` as a Python float; accepts numbers and one-element tensors."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise TypeError(
                f"{where}: expected {arg} to be a float or a one-element tensor, got a tensor "
                f"of shape {tuple(value.shape)}. Per-step values are not supported; pass one "
                f"scalar."
            )
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{where}: expected {arg} to be a float or a one-element tensor, got "
            f"{type(value).__name__}."
        )
    return float(value)


def unit_interval(where: str, arg: str, value: float | Tensor) -> float:
    """Returns ``value`` as a float after checking that it lies in ``[0, 1]``."""
    number = scalar(where, arg, value)
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{where}: expected {arg} in [0, 1], got {number}.")
    return number


def positive(where: str, arg: str, value: float | Tensor) -> float:
    """Returns ``value`` as a float after checking that it is > 0."""
    number = scalar(where, arg, value)
    if not number > 0.0:
        raise ValueError(f"{where}: expected {arg} > 0, got {number}.")
    return number


def to_kernel_layout(
    where: str,
    floats: dict[str, Tensor],
    masks: dict[str, Tensor],
    time_dim: int,
) -> tuple[list[Tensor], list[Tensor], Callable[[Tensor], Tensor]]:
    """Checks the value-op inputs and moves them to the ``[T, N]`` kernel layout.

    The ``[T, N]`` tensors are views of the inputs where a reshape allows it (no copy: a
    ``[B, T, 1]`` input gives a ``[T, B]`` view with time as the fast axis), else copies.

    Args:
        where: the public function name, for error messages.
        floats: float tensors by argument name; the first one sets the expected shape.
        masks: bool tensors by argument name (``done``, ``terminated``).
        time_dim: the time dimension of the inputs.

    Returns:
        The float tensors (promoted to one dtype) and the masks in ``[T, N]`` layout, and a
        function that maps a ``[T, N]`` output back to the input shape.

    Raises:
        ValueError: shapes differ, ``time_dim`` is out of range, or devices differ.
        TypeError: a float input is not floating point, or a mask is not bool.
    """
    first_name, first = next(iter(floats.items()))
    shape = first.shape
    ndim = len(shape)
    if not -ndim <= time_dim < ndim:
        raise ValueError(
            f"{where}: time_dim={time_dim} is out of range for {first_name} of shape "
            f"{tuple(shape)}. Inputs are [*B, T, F] with time at time_dim; add a trailing "
            f"feature dim ({first_name}.unsqueeze(-1)) or pass the right time_dim."
        )
    for arg, tensor in {**floats, **masks}.items():
        if tensor.shape != shape:
            raise ValueError(
                f"{where}: expected {arg} of shape {tuple(shape)} like {first_name}, got "
                f"{tuple(tensor.shape)}. Expand or reshape it to match (e.g. "
                f"{arg}.expand_as({first_name}))."
            )
        if tensor.device != first.device:
            raise ValueError(
                f"{where}: expected {arg} on {first.device} like {first_name}, got "
                f"{tensor.device}. Move it with {arg}.to({first_name}.device)."
            )
    for arg, tensor in floats.items():
        if not tensor.is_floating_point():
            raise TypeError(
                f"{where}: expected {arg} to be a floating-point tensor, got {tensor.dtype}. "
                f"Convert it with {arg}.float()."
            )
    for arg, tensor in masks.items():
        if tensor.dtype != torch.bool:
            raise TypeError(
                f"{where}: expected {arg} to be a torch.bool tensor, got {tensor.dtype}. "
                f"Convert it with {arg}.bool()."
            )
    dtype = reduce(torch.promote_types, (tensor.dtype for tensor in floats.values()))
    time_dim = time_dim % ndim
    steps = shape[time_dim]
    moved_shape = (steps, *shape[:time_dim], *shape[time_dim + 1 :])
    batch = math.prod(moved_shape[1:])

    def pack(tensor: Tensor) -> Tensor:
        # A view where possible: the kernels read any strides, and copying every input
        # into a time-first block would cost more than the scan itself.
        return tensor.movedim(time_dim, 0).reshape(steps, batch)

    def unpack(tensor: Tensor) -> Tensor:
        return tensor.reshape(moved_shape).movedim(0, time_dim)

    packed_floats = [pack(tensor.to(dtype)) for tensor in floats.values()]
    packed_masks = [pack(tensor) for tensor in masks.values()]
    return packed_floats, packed_masks, unpack
