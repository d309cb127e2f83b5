"""Stack: several entries of the same shape stacked into one along a new dim."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_core import Composite, TensorSpec, Transform
from rl_core.keys import NestedKey, as_key_list
from rl_envs.transforms._common import leaf_keys

_GROUPS = ("full_observation_spec", "full_reward_spec", "full_done_spec")


def _has(spec: Composite, key: NestedKey) -> bool:
    try:
        spec[key]
    except KeyError:
        return False
    return True


class Stack(Transform):
    """Stacks the entries ``in_keys`` (tensors or TensorDicts of one shape) into ``out_key``.

    The typical use: agents with identical specs under separate keys (``"agent_0"``,
    ``"agent_1"``) seen as one group ``"agents"`` with an agent dim, as multi-agent losses
    expect. The inverse path unstacks the policy's ``in_key_inv`` into the env's
    ``out_keys_inv`` (e.g. a stacked action back to one action per agent). Stacked
    observations are not unstacked for the env below: an env that reads its observations
    back from the TensorDict (a stateless one) needs ``del_keys=False``.

    Args:
        in_keys: the entries to stack, all of one shape.
        out_key: where the stacked entry goes.
        in_key_inv: the stacked entry to unstack on the inverse path. Default: none.
        out_keys_inv: the entries the unstacked parts go to (the env's keys).
        dim: the new dim, counted from the end (negative). Defaults to -1.
        allow_positive_dim: accept a non-negative ``dim`` (then counted from the first dim
            of the data, batch dims included). Defaults to ``False``.
        del_keys: remove ``in_keys`` once stacked (and the stacked entry once unstacked).
            Defaults to ``True``.

    Raises:
        ValueError: a non-negative ``dim`` without ``allow_positive_dim``; ``in_key_inv``
            without as many ``out_keys_inv`` as ``in_keys``; (on the specs) entries whose
            specs differ in shape.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = Stack(in_keys=["a", "b"], out_key="ab")
        >>> td = t(TensorDict(a=torch.zeros(2, 3), b=torch.ones(2, 3), batch_size=[2]))
        >>> td["ab"].shape, "a" in td.keys()
        (torch.Size([2, 3, 2]), False)
    """

    def __init__(
        self,
        in_keys: Sequence[NestedKey],
        out_key: NestedKey,
        in_key_inv: NestedKey | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        dim: int = -1,
        allow_positive_dim: bool = False,
        *,
        del_keys: bool = True,
    ) -> None:
        super().__init__(in_keys=in_keys)
        if not self.in_keys:
            raise ValueError("Stack: expected at least one in_key.")
        (self.out_key,) = as_key_list(out_key, "Stack: out_key")
        self.out_keys = [self.out_key]
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise TypeError(f"Stack: expected dim as an int, got {dim!r}.")
        if dim >= 0 and not allow_positive_dim:
            raise ValueError(
                f"Stack: expected a negative dim (counted from the end, so that it means the "
                f"same for any batch size), got {dim}; pass allow_positive_dim=True to use it."
            )
        self.dim = dim
        self.allow_positive_dim = allow_positive_dim
        self.del_keys = del_keys
        self.in_key_inv = None if in_key_inv is None else as_key_list(in_key_inv, "Stack")[0]
        unstacked = as_key_list(out_keys_inv, "Stack: out_keys_inv")
        if self.in_key_inv is not None and len(unstacked) != len(self.in_keys):
            raise ValueError(
                f"Stack: expected as many out_keys_inv as in_keys ({len(self.in_keys)}) with "
                f"in_key_inv, got {unstacked}."
            )
        # What the inverse path writes (the env's keys) and reads (the policy's entry).
        self.in_keys_inv = unstacked if self.in_key_inv is not None else []
        self.out_keys_inv = [self.in_key_inv] * len(self.in_keys_inv)

    # ------------------------------------------------------------------ data
    def _call(self, tensordict: TensorDictBase) -> TensorDictBase:
        values = [tensordict.get(key, None) for key in self.in_keys]
        if all(v is None for v in values):
            return tensordict
        missing = [k for k, v in zip(self.in_keys, values) if v is None]
        if missing:
            raise KeyError(
                f"Stack: the entries {missing} are missing; expected all of {self.in_keys}."
            )
        shapes = {tuple(v.shape) for v in values}
        if len(shapes) != 1:
            raise ValueError(f"Stack: expected entries of one shape, got shapes {sorted(shapes)}.")
        tensordict.set(self.out_key, torch.stack(values, self.dim))
        if self.del_keys:
            for key in self.in_keys:
                if key != self.out_key:
                    del tensordict[key]
        return tensordict

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self.in_key_inv is None:
            return tensordict
        value = tensordict.get(self.in_key_inv, None)
        if value is None:
            return tensordict
        parts = value.unbind(self.dim)
        if len(parts) != len(self.in_keys_inv):
            raise ValueError(
                f"Stack: expected {len(self.in_keys_inv)} entries along dim {self.dim} of "
                f"{self.in_key_inv!r}, got {len(parts)}."
            )
        for key, part in zip(self.in_keys_inv, parts):
            tensordict.set(key, part)
        if self.del_keys and self.in_key_inv not in self.in_keys_inv:
            del tensordict[self.in_key_inv]
        return tensordict

    # ------------------------------------------------------------------ specs
    def _stacked(self, specs: list[TensorSpec]) -> TensorSpec:
        shapes = {tuple(s.shape) for s in specs}
        if len(shapes) != 1:
            raise ValueError(
                f"Stack: the specs of {self.in_keys} differ in shape ({sorted(shapes)}); "
                f"expected one shape."
            )
        ndim = len(specs[0].shape) + 1
        dim = self.dim if self.dim < 0 else self.dim - ndim
        return torch.stack(specs, dim)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        for group in _GROUPS:
            leaves = output_spec[group]
            if not all(_has(leaves, key) for key in self.in_keys):
                continue
            leaves[self.out_key] = self._stacked([leaves[key] for key in self.in_keys])
            if self.del_keys:
                for key in self.in_keys:
                    if key != self.out_key:
                        del leaves[key]
            return output_spec
        known = leaf_keys(output_spec["full_observation_spec"])
        raise KeyError(
            f"Stack: the entries {self.in_keys} are not all outputs of one kind (observations, "
            f"rewards or done flags) of the env below it (its observations: {known})."
        )

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        if self.in_key_inv is None:
            return input_spec
        for group in ("full_action_spec", "full_state_spec"):
            leaves = input_spec[group]
            if not all(_has(leaves, key) for key in self.in_keys_inv):
                continue
            leaves[self.in_key_inv] = self._stacked([leaves[k] for k in self.in_keys_inv])
            for key in self.in_keys_inv:
                if key != self.in_key_inv:
                    del leaves[key]
            return input_spec
        raise KeyError(
            f"Stack: out_keys_inv {self.in_keys_inv} are not all actions (or all states) of the "
            f"env below it (its actions: {leaf_keys(input_spec['full_action_spec'])})."
        )

    def extra_repr(self) -> str:
        inv = f", in_key_inv={self.in_key_inv!r}" if self.in_key_inv is not None else ""
        return f"in_keys={self.in_keys}, out_key={self.out_key!r}{inv}, dim={self.dim}"


__all__ = ["Stack"]
