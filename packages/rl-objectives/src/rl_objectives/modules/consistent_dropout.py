"""Dropout whose masks are drawn during the rollout and replayed in the loss:
:class:`ConsistentDropout` and :class:`ConsistentDropoutModule` (Hausknecht & Wagener,
"Consistent Dropout for Policy Gradient Reinforcement Learning", 2022)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import Tensor, nn

from rl_core.keys import NestedKey
from rl_core.specs import Unbounded
from rl_core.transforms import TensorDictPrimer

__all__ = ["ConsistentDropout", "ConsistentDropoutModule"]


def _check_p(owner: str, p: float) -> float:
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
        raise ValueError(f"{owner}: expected p to be a probability in [0, 1), got {p!r}.")
    return float(p)


class ConsistentDropout(nn.Module):
    """Dropout that returns its mask and can be given one to replay.

    In training mode ``forward(x)`` draws a mask (each entry ``0`` with probability ``p``,
    ``1 / (1 - p)`` otherwise) and returns ``(x * mask, mask)``; ``forward(x, mask)`` applies
    the given mask instead, so the loss sees exactly the network the rollout ran. Entries of
    ``mask`` that are NaN (what :meth:`ConsistentDropoutModule.make_tensordict_primer` writes at
    a reset) are drawn anew. In eval mode the input is returned unchanged (a tensor, not a
    pair).

    Args:
        p: probability of zeroing an entry, in ``[0, 1)``. Defaults to 0.5.

    Raises:
        ValueError: ``p`` is not in ``[0, 1)``; at call time, a mask whose shape is not the
            input's.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import ConsistentDropout
        >>> drop = ConsistentDropout(p=0.5)
        >>> x = torch.ones(2, 4)
        >>> y, mask = drop(x)
        >>> bool(torch.equal(drop(x, mask)[0], y))
        True
        >>> _ = drop.eval()
        >>> bool(torch.equal(drop(x), x))
        True
    """

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = _check_p("ConsistentDropout", p)

    def make_mask(
        self,
        *,
        input: Tensor | None = None,
        shape: Sequence[int] | None = None,
    ) -> Tensor:
        """A fresh mask shaped like ``input`` (and of its dtype and device) or of ``shape``.

        Raises:
            ValueError: neither ``input`` nor ``shape`` is given.
        """
        if input is not None:
            ones = torch.ones_like(input)
        elif shape is not None:
            ones = torch.ones(tuple(shape))
        else:
            raise ValueError("ConsistentDropout.make_mask: expected input= or shape=, got neither.")
        if self.p == 0:
            return ones
        keep = torch.rand_like(ones) >= self.p
        return keep.to(ones.dtype) / (1.0 - self.p)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
        """``(x * mask, mask)`` in training mode, ``x`` in eval mode."""
        if not self.training:
            return x
        if mask is None:
            mask = self.make_mask(input=x)
        else:
            if mask.shape != x.shape:
                raise ValueError(
                    f"ConsistentDropout: expected a mask of the input's shape {tuple(x.shape)}, "
                    f"got {tuple(mask.shape)}."
                )
            unset = torch.isnan(mask)
            if bool(unset.any()):
                mask = torch.where(unset, self.make_mask(input=x), mask.to(x.dtype))
        return x * mask, mask


class ConsistentDropoutModule(TensorDictModuleBase):
    """:class:`ConsistentDropout` on TensorDicts: the mask travels with the transitions.

    Reads ``in_keys[0]`` (the input) and ``in_keys[1]`` (the mask, when present) and, in
    training mode, writes the dropped-out input at ``out_keys[0]`` and the mask used at
    ``out_keys[1]``. During a rollout the mask is drawn at the first step after a reset and
    kept for the episode (the env needs :meth:`make_tensordict_primer`); the collected
    transitions hold it, so the loss, run on them in training mode, replays it. In eval mode
    the input is copied through unchanged.

    Args:
        p: dropout probability, in ``[0, 1)``.
        in_keys: the input key, or ``[input, mask]``. With one key the mask key is
            ``"mask_<id>"`` (unique to this module).
        out_keys: the output key, or ``[output, mask]``. Defaults to ``in_keys``.

    Keyword Args:
        input_shape: the input's shape without batch dims, for :meth:`make_tensordict_primer`.
        input_dtype: the mask's dtype in the primer. Defaults to torch's default dtype.

    Raises:
        ValueError: ``p`` out of ``[0, 1)``, or key lists that do not have two entries.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.modules import ConsistentDropoutModule
        >>> module = ConsistentDropoutModule(0.5, in_keys=["x", "mask"])
        >>> td = module(TensorDict(x=torch.ones(3, 4), batch_size=[3]))
        >>> td["mask"].shape
        torch.Size([3, 4])
        >>> bool(torch.equal(module(td.exclude("x").set("x", torch.ones(3, 4)))["x"], td["x"]))
        True
    """

    def __init__(
        self,
        p: float,
        in_keys: NestedKey | Sequence[NestedKey],
        out_keys: NestedKey | Sequence[NestedKey] | None = None,
        *,
        input_shape: Sequence[int] | None = None,
        input_dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        mask_key = f"mask_{id(self)}"
        if isinstance(in_keys, (str, tuple)):
            in_keys = [in_keys, mask_key]
        in_keys = list(in_keys)
        if out_keys is None:
            out_keys = list(in_keys)
        elif isinstance(out_keys, (str, tuple)):
            out_keys = [out_keys, in_keys[1] if len(in_keys) == 2 else mask_key]
        out_keys = list(out_keys)
        if len(in_keys) != 2 or len(out_keys) != 2:
            raise ValueError(
                f"ConsistentDropoutModule: expected in_keys and out_keys of two entries (the "
                f"tensor and its mask), got in_keys={in_keys!r} and out_keys={out_keys!r}."
            )
        self.in_keys = in_keys
        self.out_keys = out_keys
        self.input_shape = None if input_shape is None else tuple(input_shape)
        self.input_dtype = input_dtype
        self.consistent_dropout = ConsistentDropout(_check_p("ConsistentDropoutModule", p))

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Applies the dropout (see the class docstring); returns ``tensordict``, updated."""
        x = tensordict.get(self.in_keys[0])
        if not self.consistent_dropout.training:
            tensordict.set(self.out_keys[0], x)
            return tensordict
        mask = tensordict.get(self.in_keys[1], None)
        y, mask = self.consistent_dropout(x, mask)
        tensordict.set(self.out_keys[0], y)
        tensordict.set(self.out_keys[1], mask)
        return tensordict

    def make_tensordict_primer(self) -> TensorDictPrimer:
        """The env transform that resets the mask: it writes NaN (an unset mask, drawn anew by
        the next forward) at reset, and carries the policy's mask from step to step.

        ``env.append_transform(module.make_tensordict_primer())``. (Not through
        :func:`rl_core.modules.get_primers_from_module`: it merges the primers' specs and
        resets every entry to zeros, which this module would read as a mask that drops
        everything.)

        Raises:
            RuntimeError: the module was built without ``input_shape``.
        """
        if self.input_shape is None:
            raise RuntimeError(
                "ConsistentDropoutModule.make_tensordict_primer: the input's shape is unknown; "
                "build the module with input_shape=(...) (without batch dims)."
            )
        dtype = self.input_dtype or torch.get_default_dtype()
        spec = Unbounded(shape=self.input_shape, dtype=dtype)
        return TensorDictPrimer({self.in_keys[1]: spec}, default_value=float("nan"))
