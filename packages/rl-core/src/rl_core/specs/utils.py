"""Building specs from example data."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase, is_non_tensor

from rl_core.specs.composite import Composite
from rl_core.specs.non_tensor import NonTensor
from rl_core.specs.unbounded import Unbounded


def _example(value: NonTensorData | NonTensorStack) -> Any:
    """The payload of non-tensor data: its shared object, or a stack's first element."""
    while isinstance(value, NonTensorStack):
        if not value.tensordicts:
            return None
        value = value.tensordicts[0]
    return value.data if isinstance(value, NonTensorData) else None


def make_composite_from_td(td: TensorDictBase, *, unsqueeze_null_shapes: bool = True) -> Composite:
    """Builds a Composite that describes an example TensorDict.

    Each tensor becomes an :class:`Unbounded` of its shape, dtype and device; non-tensor
    data a :class:`NonTensor` of its batch size (its payload, or a stack's first element, as
    ``example_data``); each nested TensorDict a nested Composite with its batch size.

    Args:
        td: the example TensorDict.

    Keyword Args:
        unsqueeze_null_shapes: give 0-dim tensors the spec shape ``(1,)`` instead of ``()``
            (the spec then describes the value after ``unsqueeze(-1)``). Defaults to ``True``.

    Returns:
        A Composite of batch shape ``td.batch_size`` on ``td.device``.

    Raises:
        TypeError: ``td`` is not a TensorDict, or holds a leaf of another kind.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.specs import make_composite_from_td
        >>> td = TensorDict({"obs": torch.zeros(4, 3), "next": {"reward": torch.zeros(4, 1)}}, [4])
        >>> spec = make_composite_from_td(td)
        >>> spec["next", "reward"]
        Unbounded(shape=(4, 1), dtype=float32, device=cpu)
        >>> spec.is_in(td)
        True
    """
    if not isinstance(td, TensorDictBase):
        raise TypeError(f"make_composite_from_td: expected a TensorDict, got {type(td).__name__}.")
    out = Composite(shape=td.batch_size, device=td.device)
    for key, value in td.items():
        if isinstance(value, torch.Tensor):
            shape = value.shape
            if not shape and unsqueeze_null_shapes:
                shape = torch.Size((1,))
            out[key] = Unbounded(shape=shape, device=value.device, dtype=value.dtype)
        elif is_non_tensor(value):
            out[key] = NonTensor(
                shape=value.batch_size, device=value.device, example_data=_example(value)
            )
        elif isinstance(value, TensorDictBase):
            out[key] = make_composite_from_td(value, unsqueeze_null_shapes=unsqueeze_null_shapes)
        else:
            raise TypeError(
                f"make_composite_from_td: the entry {key!r} is a {type(value).__name__}, "
                f"expected a tensor, a TensorDict or non-tensor data."
            )
    return out
