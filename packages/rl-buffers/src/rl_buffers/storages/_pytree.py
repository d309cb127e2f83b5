"""Dict (pytree) items of tensor storages: flattened to a TensorDict of their leaves.

A batch given as a mapping (``{"a": tensor, "b": {"c": [t0, t1]}}``, TorchRL's "pytree"
data) is stored as a TensorDict whose entries ``"0"``, ``"1"``, ... are its tensor leaves in
``torch.utils._pytree`` order; the structure is kept once and rebuilt around what is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tensordict import TensorDict, TensorDictBase
from torch import Tensor
from torch.utils import _pytree

__all__ = [
    "flatten_items",
    "is_tensor_tree",
    "is_tree",
    "tree_batch_len",
    "unflatten_items",
    "unsqueeze_tree",
]


def is_tree(data: Any) -> bool:
    """Whether ``data`` is a mapping batch (stored through :func:`flatten_items`)."""
    return isinstance(data, Mapping) and not isinstance(data, TensorDictBase)


def flatten_items(
    where: str, data: Mapping[Any, Any], batch_dims: int
) -> tuple[TensorDict, _pytree.TreeSpec]:
    """``data``'s tensor leaves as a TensorDict of batch dims ``batch_dims``, and its
    structure.

    Raises:
        TypeError: a leaf is not a tensor.
        ValueError: the mapping holds no tensor, or the leaves' leading ``batch_dims`` dims
            differ.
    """
    leaves, spec = _pytree.tree_flatten_with_path(data)
    if not leaves:
        raise ValueError(f"{where}: expected a mapping of tensors, got one with no leaf: {data!r}.")
    shape = None
    for path, leaf in leaves:
        name = _pytree.keystr(path)
        if not isinstance(leaf, Tensor):
            raise TypeError(
                f"{where}: expected every leaf of the mapping to be a tensor, got "
                f"{type(leaf).__name__} at {name}. Store other objects in a ListStorage."
            )
        if leaf.dim() < batch_dims:
            raise ValueError(
                f"{where}: expected the leaf at {name} to have at least {batch_dims} batch "
                f"dims, got shape {tuple(leaf.shape)}."
            )
        if shape is None:
            shape = leaf.shape[:batch_dims]
        elif leaf.shape[:batch_dims] != shape:
            raise ValueError(
                f"{where}: expected every leaf of the mapping to share the batch shape "
                f"{tuple(shape)} (the first leaf's), got {tuple(leaf.shape)} at {name}."
            )
    out = TensorDict({str(i): leaf for i, (_, leaf) in enumerate(leaves)}, batch_size=shape)
    return out, spec


def unflatten_items(data: TensorDictBase, spec: _pytree.TreeSpec) -> Any:
    """The mapping that :func:`flatten_items` flattened, rebuilt around ``data``'s leaves."""
    return _pytree.tree_unflatten([data.get(str(i)) for i in range(spec.num_leaves)], spec)


def is_tensor_tree(data: Any) -> bool:
    """Whether ``data`` is a mapping whose leaves are all tensors (a batch that a tensor
    storage keeps; other mappings are items of a list storage)."""
    if not is_tree(data):
        return False
    leaves = _pytree.tree_leaves(data)
    return bool(leaves) and all(isinstance(leaf, Tensor) for leaf in leaves)


def tree_batch_len(data: Mapping[Any, Any]) -> int:
    """The number of items in a mapping batch: its first leaf's leading dim."""
    leaves = _pytree.tree_leaves(data)
    if not leaves or not isinstance(leaves[0], Tensor) or leaves[0].dim() == 0:
        got = type(leaves[0]).__name__ if leaves else "no leaf"
        if leaves and isinstance(leaves[0], Tensor):
            got = "a 0-dim tensor"
        raise ValueError(
            f"extend: expected a mapping of tensors with a leading batch dim, got {got} as its "
            f"first leaf. Use add() for one item."
        )
    return leaves[0].shape[0]


def unsqueeze_tree(data: Mapping[Any, Any]) -> Any:
    """A mapping item as a batch of one (each tensor leaf unsqueezed)."""
    return _pytree.tree_map(lambda x: x.unsqueeze(0) if isinstance(x, Tensor) else x, data)
