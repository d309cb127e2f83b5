"""CatTensors: several entries concatenated into one."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, Transform
from rl_core.keys import NestedKey
from rl_envs.transforms._common import bounds, check_negative_dim, continuous_like, find_group


class CatTensors(Transform):
    """Concatenates ``in_keys`` along ``dim`` into ``out_key``.

    Args:
        in_keys: the entries, in order (at least one).
        out_key: the concatenated entry. Defaults to ``"observation_vector"``.
        dim: a negative dim (counted from the last). Defaults to -1.
        del_keys: remove the ``in_keys`` afterwards. Defaults to True.
        unsqueeze_if_needed: entries with one dim fewer than the first are unsqueezed at
            ``dim`` first (scalars next to vectors). Defaults to True.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = CatTensors(["a", "b"], "ab")
        >>> out = t(TensorDict(a=torch.zeros(5, 3), b=torch.ones(5, 2), batch_size=[5]))
        >>> out["ab"].shape, "a" in out.keys()
        (torch.Size([5, 5]), False)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_key: NestedKey = "observation_vector",
        dim: int = -1,
        *,
        del_keys: bool = True,
        unsqueeze_if_needed: bool = True,
    ) -> None:
        super().__init__(in_keys=in_keys)
        if not self.in_keys:
            raise ValueError("CatTensors: expected at least one in_key, got none.")
        self.out_keys = [out_key]
        self.dim = check_negative_dim(dim, "CatTensors")
        self.del_keys = del_keys
        self.unsqueeze_if_needed = unsqueeze_if_needed

    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        values = [tensordict.get(key, None) for key in self.in_keys]
        present = [v for v in values if v is not None]
        if not present:
            return tensordict
        if len(present) != len(values):
            missing = [k for k, v in zip(self.in_keys, values) if v is None]
            raise KeyError(f"CatTensors: the entries {missing} are missing from the TensorDict.")
        ndim = max(v.ndim for v in values)
        if self.unsqueeze_if_needed:
            values = [v.unsqueeze(self.dim) if v.ndim == ndim - 1 else v for v in values]
        tensordict.set(self.out_keys[0], torch.cat(values, self.dim))
        if self.del_keys:
            tensordict = tensordict.exclude(*[k for k in self.in_keys if k != self.out_keys[0]])
        return tensordict

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        group = find_group(output_spec, self.in_keys[0], "CatTensors")
        leaves = output_spec[group]
        specs = []
        for key in self.in_keys:
            if find_group(output_spec, key, "CatTensors") != group:
                raise ValueError(
                    f"CatTensors: the entries {self.in_keys} mix observations and rewards."
                )
            specs.append(leaves[key])
        ndim = max(len(s.shape) for s in specs)
        try:
            zeros = [
                torch.zeros(s.shape).unsqueeze(self.dim)
                if self.unsqueeze_if_needed and len(s.shape) == ndim - 1
                else torch.zeros(s.shape)
                for s in specs
            ]
            shape = torch.cat(zeros, self.dim).shape
        except RuntimeError as err:
            raise ValueError(
                f"CatTensors: the entries {self.in_keys} of shapes "
                f"{[tuple(s.shape) for s in specs]} cannot be concatenated along dim {self.dim}."
            ) from err
        dtypes = {s.dtype for s in specs}
        if len(dtypes) != 1:
            raise TypeError(
                f"CatTensors: the entries {self.in_keys} have different dtypes {dtypes}; cast "
                f"them to one dtype first (DTypeCastTransform)."
            )
        found = [bounds(s) for s in specs]
        if all(f is not None for f in found):

            def expand(t: torch.Tensor, s) -> torch.Tensor:
                t = t.expand(s.shape)
                return t.unsqueeze(self.dim) if len(s.shape) == ndim - 1 else t

            low = torch.cat([expand(f[0], s) for f, s in zip(found, specs)], self.dim)
            high = torch.cat([expand(f[1], s) for f, s in zip(found, specs)], self.dim)
            new = continuous_like(specs[0], low=low, high=high, shape=shape)
        else:
            new = continuous_like(specs[0], shape=shape)
        if self.del_keys:
            for key in self.in_keys:
                del leaves[key]
        leaves[self.out_keys[0]] = new
        return output_spec

    def extra_repr(self) -> str:
        return f"in_keys={self.in_keys}, out_key={self.out_keys[0]!r}, dim={self.dim}"


__all__ = ["CatTensors"]
