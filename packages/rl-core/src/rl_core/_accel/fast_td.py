"""Fast access to plain TensorDicts: the one module of rl-core that uses tensordict's private API.

Private to rl-core: sibling packages use the public :mod:`rl_core._accel.td_access` (the
read-only subset of this module that hands out no tensordict internals) or public tensordict.

The per-step paths of envs, rollouts and transforms move the same few entries in and out of
TensorDicts thousands of times a second. The public tensordict calls validate keys, batch sizes
and devices each time; the functions here skip that work where it is known to hold, and give
the same result as the public call they replace. Everything that reads tensordict internals
(``_tensordict``, ``_new_unsafe``, ``_set_str``, ``_batch_size``) lives here, so a tensordict
upgrade touches this file and its tests only.

A *plain* TensorDict is an instance of ``TensorDict`` itself (not a lazy stack, a tensorclass
or a subclass). Functions that need one say so; the others fall back to the public call for
anything else.

* :func:`is_plain`, :func:`entries`: the test, and the entry dict of one level (the
  TensorDict's own dict: rl-core reads it, never writes it).
* :func:`get_leaf`, :func:`set_leaf`: ``td.get(path)`` and ``td.set(key, value)``;
  :func:`writable_entries`: the entry dict ``set_leaf`` writes into directly.
* :func:`leaf_paths`: the leaf paths of a plain nested TensorDict of tensors.
* :func:`build_tensordict`, :class:`TreeBuilder`: a TensorDict (flat, or nested from leaf
  paths) built from values already known to fit, without checks.
* :class:`StepMdpMerge`: the body of :class:`rl_core.ted.StepMdpPlan`.
* :func:`module_io_keys`, :func:`sequence_children`: the call layout of a
  ``TensorDictModule`` / ``TensorDictSequential`` whose call is plain (read by
  ``PolicyCallPlan``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensordict._td as _td_module
import torch
from tensordict import TensorDict, TensorDictBase

Path = tuple[str, ...]

_new_tensordict = TensorDict.__new__
# build_tensordict sets up a TensorDict itself where tensordict's entry dict is a plain dict.
_PLAIN_ENTRY_DICT = getattr(_td_module, "_StringOnlyDict", None) is dict
_is_compiling = torch.compiler.is_compiling

_MISSING: Any = object()


def is_plain(td: Any) -> bool:
    """Whether ``td`` is a plain ``TensorDict`` (the type itself, not a subclass or lazy stack)."""
    return type(td) is TensorDict


def entries(td: TensorDict) -> dict[str, Any]:
    """The entry dict of one level of a plain TensorDict: names to tensors or sub-TensorDicts.

    The dict is the TensorDict's own: read it, never write to it.

    Args:
        td: a plain TensorDict (see :func:`is_plain`); other types raise ``TypeError``.

    Raises:
        TypeError: ``td`` is not a plain TensorDict.
    """
    if type(td) is not TensorDict:
        raise TypeError(
            f"_fast_td.entries: expected a plain TensorDict, got {type(td).__name__}. Check "
            f"is_plain(td) first, or use td.keys()."
        )
    return td._tensordict


def _writes_directly(td: TensorDict) -> bool:
    """Whether a value may go into the entry dict itself: tensordict raises on a locked
    TensorDict and marks a consolidated one's copy stale (``_set_str`` does both)."""
    return not td._is_locked and not hasattr(td, "_consolidated")


def writable_entries(td: Any) -> dict[str, Any] | None:
    """The entry dict of a plain, unlocked, unconsolidated TensorDict without a device or on
    the CPU, where :func:`set_leaf` stores a CPU tensor of the batch size directly; ``None``
    for anything else.

    A caller may then write such tensors into the dict itself (what ``set_leaf`` would do),
    and only such tensors.
    """
    if type(td) is not TensorDict or not _writes_directly(td):
        return None
    device = td._device
    if device is not None and device.type != "cpu":
        return None
    return td._tensordict


def get_leaf(td: TensorDictBase, path: Path, default: Any = _MISSING) -> Any:
    """``td.get(path)`` (or ``td.get(path, default)``) through the entry dicts of plain levels.

    A few times faster than ``get`` on plain TensorDicts; any other level falls back to it.

    Args:
        td: any TensorDict.
        path: the key path, a tuple of strings.
        default: returned when the entry is missing. Without it a missing entry raises.

    Raises:
        KeyError: the entry is missing and no default was given.
    """
    node: Any = td
    for name in path:
        if type(node) is not TensorDict:
            return td.get(path) if default is _MISSING else td.get(path, default)
        node = node._tensordict.get(name, _MISSING)
        if node is _MISSING:
            if default is _MISSING:
                return td.get(path)  # raises tensordict's KeyError
            return default
    return node


def set_leaf(td: TensorDictBase, key: str, value: Any) -> None:
    """``td.set(key, value)``; skips validation where the value already fits.

    A tensor (not nested) or plain TensorDict whose leading dims are ``td``'s batch size and
    whose device is ``td``'s is stored directly in a plain ``td``; anything else goes through
    ``td.set``.
    """
    if type(td) is TensorDict and type(key) is str:
        batch, device = td._batch_size, td._device
        kind = type(value)
        if kind is torch.Tensor:
            fits = (
                not value.is_nested
                and (not batch or value.shape[: len(batch)] == batch)
                and (device is None or value.device == device)
            )
        elif kind is TensorDict:
            fits = (not batch or value._batch_size[: len(batch)] == batch) and (
                device is None or value._device == device
            )
        else:
            fits = False
        if fits:
            if not _writes_directly(td):
                # tensordict raises (locked) or marks its consolidated copy stale
                td._set_str(key, value, inplace=False, validated=True)
            else:
                td._tensordict[key] = value  # what _set_str does for a validated value
            return
    td.set(key, value)


def leaf_paths(td: Any) -> list[Path] | None:
    """The paths of the tensor leaves of a plain nested TensorDict, in entry order.

    Returns:
        The paths, or ``None`` when a level is not a plain TensorDict or a leaf is not a plain
        tensor (non-tensor data, a lazy stack): callers then take the generic path.
    """
    paths: list[Path] = []

    def visit(node: Any, prefix: Path) -> bool:
        if type(node) is not TensorDict:
            return False
        for name, value in node._tensordict.items():
            if type(value) is torch.Tensor:
                paths.append((*prefix, name))
            elif not visit(value, (*prefix, name)):
                return False
        return True

    return paths if visit(td, ()) else None


def build_tensordict(
    source: dict[str, Any], batch_size: torch.Size, device: torch.device | None = None
) -> TensorDict:
    """A plain TensorDict holding ``source`` as its entries, built without any check.

    The caller guarantees what ``TensorDict(source, batch_size, device)`` would check: string
    keys, values (tensors or TensorDicts) whose leading dims are ``batch_size``, on ``device``
    when it is set. ``source`` becomes the TensorDict's entry dict (do not reuse it).

    Args:
        source: the entries of the root level.
        batch_size: a ``torch.Size``.
        device: the TensorDict's device, or ``None``.
    """
    if (
        not _PLAIN_ENTRY_DICT
        or (device is not None and type(device) is not torch.device)
        or _td_module._CHECK_INVARIANTS
        or _is_compiling()
    ):
        return TensorDict._new_unsafe(
            source=source, batch_size=batch_size, device=device, nested=False
        )
    # What ``_new_unsafe`` does for a flat dict on a torch.device (or none), eagerly, without
    # its argument handling, and keeping ``source`` as the entry dict instead of a copy.
    td = _new_tensordict(TensorDict)
    td._device = device
    td._tensordict = source
    td._batch_size = batch_size
    td._td_dim_names = None
    return td


def only_tensors(values: Any) -> bool:
    """Whether every value of ``values`` (e.g. an entry dict's ``values()``) is a plain
    ``torch.Tensor``: no sub-TensorDict, no tensor subclass.
    """
    for value in values:  # noqa: SIM110 (a loop, not all(<generator>): every reset runs it)
        if type(value) is not torch.Tensor:
            return False
    return True


def batch_size_of(td: TensorDict) -> torch.Size:
    """The batch size of a plain TensorDict, read without the property call."""
    return td._batch_size


def device_of(td: TensorDict) -> torch.device | None:
    """The device of a plain TensorDict, read without the property call."""
    return td._device


class TreeBuilder:
    """Builds TensorDicts of one fixed (possibly nested) key layout from lists of leaf values.

    Args:
        paths: the leaf paths, in the order :meth:`build` gets the values.
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = [tuple(path) for path in paths]
        self.flat = all(len(path) == 1 for path in self.paths)
        self.names = [path[0] for path in self.paths]

    def build(
        self, values: Sequence[Any], batch_size: torch.Size, device: torch.device | None
    ) -> TensorDict:
        """The TensorDict with ``values[i]`` at ``paths[i]``, built without checks (see
        :func:`build_tensordict` for what the caller guarantees)."""
        if self.flat:
            return build_tensordict(dict(zip(self.names, values)), batch_size, device)
        root: dict[str, Any] = {}
        for path, value in zip(self.paths, values):
            node = root
            for name in path[:-1]:
                node = node.setdefault(name, {})
            node[path[-1]] = value
        return _nested(root, batch_size, device)


def _nested(
    tree: dict[str, Any], batch_size: torch.Size, device: torch.device | None
) -> TensorDict:
    source = {
        name: _nested(value, batch_size, device) if isinstance(value, dict) else value
        for name, value in tree.items()
    }
    return build_tensordict(source, batch_size, device)


class StepMdpMerge:
    """The body of :class:`rl_core.ted.StepMdpPlan` (its base class): ``step_mdp`` with the
    exclusion rules resolved once, the flat case merged through the entry dicts.

    Args:
        rules: ``(root_drop, next_drop)``, the exclusion trees of ``step_mdp``.
        merge: ``merge(tensordict, next, root_drop, next_drop)``, the level-by-level merge.
        generic: ``generic(tensordict)``, the full ``step_mdp`` (raises for a missing
            ``"next"``).

    ``rl_core.ted`` passes its own functions in, so this module imports no other of rl-core.
    """

    def __init__(
        self,
        rules: tuple[dict[str, Any], dict[str, Any]],
        merge: Callable[..., TensorDictBase],
        generic: Callable[[TensorDictBase], TensorDictBase],
    ) -> None:
        self._rules, self._merge, self._generic = rules, merge, generic
        root_drop, next_drop = rules
        # Rules that drop root-level entries only (no group to merge level by level): a
        # transition whose "next" holds tensors only is merged by two dict comprehensions.
        self._flat = all(rule is True for rule in (*root_drop.values(), *next_drop.values()))
        self._root_skip = frozenset(("next", "_reset", *root_drop))
        self._next_skip = frozenset(("_reset", *next_drop))

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The next root of the transition ``tensordict`` (see :func:`rl_core.ted.step_mdp`).

        Raises:
            KeyError: ``tensordict`` has no ``"next"`` entry.
        """
        if type(tensordict) is TensorDict:
            root = tensordict._tensordict
            nxt = root.get("next", None)
            if self._flat and type(nxt) is TensorDict:
                # With flat rules, a "next" of plain tensors: the root entries that neither
                # "next" holds nor a rule drops, then the entries of "next" no rule drops, in
                # that order (what the level merge gives). Inline: this runs every env step.
                found = nxt._tensordict
                skip = self._next_skip
                picked = {name: value for name, value in found.items() if name not in skip}
                for value in picked.values():
                    if type(value) is not torch.Tensor:
                        break  # a group, or non-tensor data: merged level by level
                else:
                    skip = self._root_skip
                    out = {n: v for n, v in root.items() if n not in found and n not in skip}
                    out.update(picked)
                    return build_tensordict(out, nxt._batch_size, nxt._device)
        else:
            nxt = tensordict.get("next", None)
        if nxt is None:
            return self._generic(tensordict)  # raises step_mdp's KeyError
        root_drop, next_drop = self._rules
        return self._merge(tensordict, nxt, root_drop, next_drop)


def module_io_keys(module: Any) -> tuple[list[Path], list[Any]] | None:
    """The ``(in paths, out keys)`` of a ``TensorDictModule`` whose call is plain, else ``None``.

    Plain: the tensors at ``in_keys`` go to the wrapped module positionally (``in_keys`` was no
    dict, no ``get_kwargs``), the module itself is called (no ``method``, no
    ``method_kwargs``), the outputs are written into the input (``inplace=True``) and every
    output key is kept (no ``select_out_keys``). Only the configuration is read here; the
    caller checks the type, the hooks and the call-time modes.
    """
    state = module.__dict__
    if (
        state.get("_kwargs", _MISSING) is not None
        or state.get("_get_kwargs", _MISSING)
        or state.get("method", _MISSING) is not None
        or state.get("method_kwargs", _MISSING)
        or state.get("inplace", _MISSING) is not True
        or module.out_keys != module.out_keys_source
    ):
        return None
    in_paths = [(key,) if type(key) is str else tuple(key) for key in module.in_keys]
    return in_paths, list(module.out_keys_source)


def sequence_children(sequence: Any) -> list[Any] | None:
    """The modules of a ``TensorDictSequential`` whose call is plain, in order, else ``None``.

    Plain: the modules run one after the other on the input (``inplace`` ``True`` or
    ``None``; with ``True`` the outputs of a module that returned another TensorDict are
    copied back into the input, with ``None`` that TensorDict is returned), none is
    skipped for missing inputs (``partial_tolerant=False``) and every output key is kept (no
    ``select_out_keys``). The caller checks the type, the hooks and the call-time modes.
    """
    state = sequence.__dict__
    inplace = state.get("inplace", _MISSING)
    if (
        (inplace is not True and inplace is not None)
        or state.get("partial_tolerant", _MISSING) is not False
        or sequence._select_before_return
    ):
        return None
    modules = sequence.module
    return list(modules.values()) if isinstance(modules, torch.nn.ModuleDict) else list(modules)


__all__ = [
    "Path",
    "StepMdpMerge",
    "TreeBuilder",
    "batch_size_of",
    "build_tensordict",
    "device_of",
    "entries",
    "get_leaf",
    "is_plain",
    "leaf_paths",
    "module_io_keys",
    "only_tensors",
    "sequence_children",
    "set_leaf",
    "writable_entries",
]
