"""VmapModule: a TensorDict module mapped with ``torch.vmap`` over one batch dim."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase


class VmapModule(TensorDictModuleBase):
    """Runs ``module`` with ``torch.vmap`` over one batch dim of the input TensorDict and
    writes its outputs back into it (TorchRL's ``VmapModule``): a module written for one
    element less of batch sees each slice.

    Args:
        module: the TensorDict module (its ``in_keys``/``out_keys`` are this module's).
        vmap_dim: the batch dim mapped over (for inputs and outputs). Defaults to the last
            batch dim.
        mock: loop over the slices with ``unbind`` and ``torch.stack`` instead of ``vmap``
            (same result; for modules vmap cannot trace). Defaults to False.

    Raises:
        ValueError: the input has no batch dim to map over.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.nn import TensorDictModule
        >>> first = TensorDictModule(lambda x: x[0], in_keys=["x"], out_keys=["y"])
        >>> td = TensorDict(x=torch.arange(6.0).reshape(2, 3), batch_size=[2])
        >>> VmapModule(first, 0)(td)["y"].tolist()
        [0.0, 3.0]
    """

    def __init__(
        self, module: TensorDictModuleBase, vmap_dim: int | None = None, mock: bool = False
    ) -> None:
        super().__init__()
        self.in_keys = module.in_keys
        self.out_keys = module.out_keys
        self.module = module
        self.vmap_dim = vmap_dim
        self.mock = bool(mock)

    def mock_(self, value: bool = True) -> None:
        """Switches the ``unbind``/``stack`` loop on (or off)."""
        self.mock = bool(value)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        if tensordict.ndim == 0:
            raise ValueError(
                "VmapModule: the input TensorDict has no batch dim to map over (batch_size=[])."
            )
        dim = tensordict.ndim - 1 if self.vmap_dim is None else self.vmap_dim
        if self.mock:
            out = torch.stack([self.module(part) for part in tensordict.unbind(dim)], dim)
        else:
            out = torch.vmap(self.module, (dim,), (dim,))(tensordict)
        return tensordict.update(out)


__all__ = ["VmapModule"]
