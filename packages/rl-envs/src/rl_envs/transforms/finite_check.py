"""FiniteTensorDictCheck: an error as soon as an env output holds a NaN or an infinity."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from rl_core import Transform


class FiniteTensorDictCheck(Transform):
    """Raises when a floating tensor of the step or reset output (or of a TensorDict given
    to the transform) holds a NaN or an infinity; it changes nothing otherwise.

    Raises:
        ValueError: naming the entries with non-finite values.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FiniteTensorDictCheck()
        >>> t(TensorDict(obs=torch.zeros(2))).batch_size
        torch.Size([])
    """

    def __init__(self) -> None:
        super().__init__()

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        bad = []
        for key, value in tensordict.items(include_nested=True, leaves_only=True):
            if (
                isinstance(value, torch.Tensor)
                and (value.dtype.is_floating_point or value.dtype.is_complex)
                and not bool(torch.isfinite(value).all())
            ):
                bad.append(key)
        if bad:
            raise ValueError(
                f"FiniteTensorDictCheck: non-finite values (NaN or inf) under {bad}; expected "
                f"finite values in every floating entry."
            )
        return tensordict


__all__ = ["FiniteTensorDictCheck"]
