"""SafeModule and SafeSequential: TensorDict modules that carry the specs of their outputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule, TensorDictSequential, dispatch

from rl_core.keys import NestedKey, key_path
from rl_core.modules._spec_utils import as_composite, project_into
from rl_core.specs import Composite, TensorSpec


def _as_key_list(keys: NestedKey | Sequence[NestedKey], where: str, arg: str) -> list[NestedKey]:
    if isinstance(keys, str | tuple):
        return [keys]
    if not isinstance(keys, Sequence):
        raise TypeError(
            f"{where}: expected {arg} to be a key or a list of keys, got {type(keys).__name__}."
        )
    return list(keys)


def _output_spec(
    spec: TensorSpec | None, out_keys: list[NestedKey], safe: bool, where: str
) -> Composite:
    """The spec of the outputs as a Composite with one entry (maybe ``None``) per out key.

    Raises:
        ValueError: ``safe`` without a spec, or a spec entry that is not an output.
    """
    if safe and spec is None:
        raise ValueError(
            f"{where}: safe=True projects the outputs into the spec, but got spec=None. Pass "
            f"the spec of the outputs or set safe=False."
        )
    if spec is not None and not isinstance(spec, Composite) and len(out_keys) != 1:
        raise ValueError(
            f"{where}: a single (leaf) spec describes one output, got out_keys={out_keys}. "
            f"Pass a Composite keyed by output key."
        )
    composite = as_composite(spec, out_keys, where)
    out = Composite() if composite is None else composite.clone()
    outputs = {key_path(k) for k in out_keys}
    for key in out.keys(include_nested=True, leaves_only=True):
        path = key_path(key)
        if not any(path[: len(o)] == o for o in outputs):
            raise ValueError(
                f"{where}: the spec has an entry {key!r} that is not an output; out_keys are "
                f"{out_keys}."
            )
    for key in out_keys:
        if out.get(key, None) is None:
            out[key] = None
    return out


class SafeModule(TensorDictModule):
    """A :class:`~tensordict.nn.TensorDictModule` with the specs of its outputs.

    With ``safe=True`` every output that the spec describes is projected into it after the
    call (``spec.project``: a ``Bounded`` value is clamped, a one-hot vector is made one-hot),
    so out-of-domain values from the network or from numerical error never leave the module.

    Args:
        module: the network (or any callable), called with the tensors at ``in_keys``.
        in_keys: the keys it reads.
        out_keys: the keys of its outputs.
        spec: the spec of the output (a leaf spec for a single output) or a Composite keyed by
            output key. Kept in :attr:`spec` as a Composite with an entry (maybe ``None``)
            per output. Defaults to ``None``.

    Keyword Args:
        safe: project the outputs into the spec. Defaults to ``False``.
        inplace: as for ``TensorDictModule``: write into the input TensorDict. Defaults to
            ``True``.

    Raises:
        ValueError: ``safe=True`` without a spec, a leaf spec for several outputs, or a spec
            entry that is not an output.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import SafeModule
        >>> from rl_core.specs import Bounded
        >>> module = SafeModule(
        ...     torch.nn.Identity(), ["observation"], ["action"],
        ...     spec=Bounded(-1.0, 1.0, shape=(2,)), safe=True,
        ... )
        >>> module(TensorDict(observation=torch.tensor([3.0, -0.5])))["action"]
        tensor([ 1.0000, -0.5000])
    """

    def __init__(
        self,
        module: Callable[..., Any],
        in_keys: NestedKey | Sequence[NestedKey],
        out_keys: NestedKey | Sequence[NestedKey],
        spec: TensorSpec | None = None,
        *,
        safe: bool = False,
        inplace: bool | str = True,
    ) -> None:
        out_keys = _as_key_list(out_keys, "SafeModule", "out_keys")
        super().__init__(
            module,
            in_keys=_as_key_list(in_keys, "SafeModule", "in_keys"),
            out_keys=out_keys,
            inplace=inplace,
        )
        self.spec = _output_spec(spec, out_keys, safe, "SafeModule")
        self.safe = safe

    @dispatch(auto_batch_size=False)
    def forward(self, tensordict: TensorDictBase, *args: Any, **kwargs: Any) -> TensorDictBase:
        """Runs the module; with ``safe``, projects its outputs into the spec."""
        out = super().forward(tensordict, *args, **kwargs)
        if self.safe:
            project_into(out, self.spec)
        return out


class SafeSequential(TensorDictSequential):
    """A :class:`~tensordict.nn.TensorDictSequential` whose :attr:`spec` gathers its modules'.

    The spec holds an entry per output of the sequence: the spec of the module that writes
    it (a module's ``spec`` attribute, e.g. a :class:`SafeModule` or an ``Actor``; a later
    module's spec wins) or ``None``. Each module projects its own outputs if it is ``safe``.

    Args:
        *modules: the TensorDict modules, called in order.

    Keyword Args:
        partial_tolerant: as for ``TensorDictSequential``. Defaults to ``False``.
        selected_out_keys: as for ``TensorDictSequential``. Defaults to ``None``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import SafeModule, SafeSequential
        >>> from rl_core.specs import Bounded
        >>> hidden = SafeModule(torch.nn.Linear(3, 4), ["observation"], ["hidden"])
        >>> head = SafeModule(
        ...     torch.nn.Linear(4, 2), ["hidden"], ["action"],
        ...     spec=Bounded(-1.0, 1.0, shape=(2,)), safe=True,
        ... )
        >>> seq = SafeSequential(hidden, head)
        >>> sorted(seq.spec.keys()), seq.spec["hidden"] is None
        (['action', 'hidden'], True)
        >>> seq(TensorDict(observation=torch.randn(5, 3), batch_size=[5]))["action"].shape
        torch.Size([5, 2])
    """

    def __init__(
        self,
        *modules: Callable[[TensorDictBase], TensorDictBase],
        partial_tolerant: bool = False,
        selected_out_keys: list[NestedKey] | None = None,
    ) -> None:
        super().__init__(
            *modules, partial_tolerant=partial_tolerant, selected_out_keys=selected_out_keys
        )
        spec = Composite()
        for module in self.module:
            own = getattr(module, "spec", None)
            for key in getattr(module, "out_keys", []):
                entry = own.get(key, None) if isinstance(own, Composite) else None
                if entry is not None or spec.get(key, None) is None:
                    spec[key] = entry
        self.spec = spec


__all__ = ["SafeModule", "SafeSequential"]
