"""Keeps the valid steps of a padded batch: :func:`mask_batch`."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_objectives.trainers._utils import valid_mask


def mask_batch(batch: TensorDictBase) -> TensorDictBase:
    """Returns the steps of ``batch`` its ``("collector", "mask")`` marks valid, flattened.

    A batch without a mask is returned as it is. Register it at ``"batch_process"`` to train
    on the valid steps of a padded collector batch only.

    Args:
        batch: a TensorDict, optionally with a boolean ``("collector", "mask")`` entry of the
            batch's shape.

    Returns:
        ``batch[mask]`` (one dimension: the valid steps), or ``batch``.

    Raises:
        TypeError: ``batch`` is not a TensorDict, or its mask is not boolean.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.trainers import mask_batch
        >>> batch = TensorDict(
        ...     {"x": torch.arange(6).reshape(2, 3),
        ...      ("collector", "mask"): torch.tensor([[True, True, False], [True, False, False]])},
        ...     batch_size=[2, 3])
        >>> print(mask_batch(batch)["x"].tolist())
        [0, 1, 3]
    """
    if not isinstance(batch, TensorDictBase):
        raise TypeError(f"mask_batch: expected a TensorDict, got {type(batch).__name__}.")
    mask = valid_mask(batch)
    if mask is None:
        return batch
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask_batch: ('collector', 'mask') must be a torch.bool tensor, got {mask.dtype}."
        )
    return batch[mask]
