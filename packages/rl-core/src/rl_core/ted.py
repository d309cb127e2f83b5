"""Functions over the TED layout: moving a transition forward and reading its done flags.

See :mod:`rl_core.keys` for the layout. ``step_mdp`` runs once per environment step, so it walks
the two TensorDict levels once, with no spec lookups, and caches the exclusion rules it derives
from its arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from rl_core._accel.seam import (
    StepMdpMerge,
    batch_size_of,
    build_tensordict,
    device_of,
    entries,
)
from rl_core.keys import ACTION, DONE_KEYS, NEXT, RESET, REWARD, NestedKey, as_key_list, key_path

# An exclusion tree: name -> True (drop this entry) or a nested tree (recurse into it).
_Tree = dict[str, Any]


class _KeyList(tuple):
    """A list of keys made hashable; unlike a plain tuple, not read as one nested key."""


def _as_key_tuple(keys: NestedKey | Sequence[NestedKey], argument: str) -> tuple[NestedKey, ...]:
    return tuple(as_key_list(keys, f"step_mdp: {argument}"))


def _hashable(keys: Any) -> Any:
    return _KeyList(keys) if isinstance(keys, list) else keys


@lru_cache(maxsize=256, typed=True)
def _exclusion_trees(
    reward_keys: Any,
    done_keys: Any,
    action_keys: Any,
    exclude_reward: bool,
    exclude_done: bool,
    exclude_action: bool,
) -> tuple[_Tree, _Tree]:
    """Returns the trees of entries to drop from the root and from ``"next"``.

    Cached on the raw arguments, so the key validation runs once per distinct call pattern.
    """
    dropped: list[NestedKey] = []
    if exclude_reward:
        dropped += _as_key_tuple(reward_keys, "reward_keys")
    if exclude_done:
        dropped += DONE_KEYS if done_keys is None else _as_key_tuple(done_keys, "done_keys")
    root_dropped = list(dropped)
    if exclude_action:
        root_dropped += _as_key_tuple(action_keys, "action_keys")
    return _tree(root_dropped), _tree(dropped)


@lru_cache(maxsize=64, typed=True)
def _action_paths(action_keys: Any) -> tuple[tuple[str, ...], ...]:
    """The action keys as paths, for ``keep_other=False, exclude_action=False``."""
    keys = _as_key_tuple(action_keys, "action_keys")
    return tuple(key_path(key) for key in keys)


def _tree(keys: Iterable[NestedKey]) -> _Tree:
    tree: _Tree = {}
    for key in keys:
        path = (key,) if isinstance(key, str) else key
        node = tree
        for name in path[:-1]:
            child = node.setdefault(name, {})
            if child is True:  # a whole sub-tree is already dropped
                break
            node = child
        else:
            node[path[-1]] = True
    return tree


def _is_tensordict(value: Any) -> bool:
    # Plain tensors are the common case: skip the (slower) abstract-class check for them.
    return type(value) is not torch.Tensor and isinstance(value, TensorDictBase)


def _sub_root(
    root: TensorDictBase | None, name: str, root_drop: _Tree
) -> tuple[TensorDictBase | None, _Tree]:
    """The root's group of the same name as a group of ``"next"``, and its exclusion rules."""
    rule = root_drop.get(name)
    if root is None or rule is True:
        return None, {}
    sub_root = root.get(name, None)
    if not isinstance(sub_root, TensorDictBase):
        return None, {}
    return sub_root, rule or {}


def _merge_level(
    root: TensorDictBase | None, nxt: TensorDictBase, root_drop: _Tree, next_drop: _Tree
) -> TensorDictBase:
    """One level of the output: entries of ``root`` not in ``nxt``, then entries of ``nxt``."""
    if isinstance(nxt, LazyStackedTensorDict):
        return _merge_lazy_stack(root, nxt, root_drop, next_drop)
    if type(nxt) is not TensorDict or (root is not None and type(root) is not TensorDict):
        return _merge_level_generic(root, nxt, root_drop, next_drop)
    out: dict[str, Any] = {}
    nxt_entries = entries(nxt)
    if root is not None:
        for name, value in entries(root).items():
            if name in (NEXT, RESET) or name in nxt_entries:
                continue
            rule = root_drop.get(name)
            if rule is True:
                continue
            if rule is not None and _is_tensordict(value):
                value = _merge_level(None, value, {}, rule)
                if value.is_empty():  # every entry dropped: the group goes too (TorchRL)
                    continue
            out[name] = value
    for name, value in nxt_entries.items():
        if name == RESET:
            continue
        rule = next_drop.get(name)
        if rule is True:
            continue
        # Plain tensors are the common case: skip the abstract-class check for them.
        if type(value) is not torch.Tensor and isinstance(value, TensorDictBase):
            sub_root, sub_drop = _sub_root(root, name, root_drop)
            value = _merge_level(sub_root, value, sub_drop, rule or {})
            if (rule or sub_drop) and value.is_empty():
                continue
        out[name] = value
    return build_tensordict(out, batch_size_of(nxt), device_of(nxt))


def _merge_lazy_stack(
    root: TensorDictBase | None, nxt: LazyStackedTensorDict, root_drop: _Tree, next_drop: _Tree
) -> LazyStackedTensorDict:
    """:func:`_merge_level` member by member, the result stacked lazily again.

    Members may differ in shape (agents with different observation sizes) or in keys, so
    they are never read as one dense tensor.
    """
    dim = nxt.stack_dim
    members = nxt.tensordicts
    roots: Sequence[TensorDictBase | None]
    if root is None:
        roots = [None] * len(members)
    else:
        roots = root.tensordicts if _same_stack(root, nxt) else root.unbind(dim)  # type: ignore[attr-defined]
    merged = [_merge_level(r, m, root_drop, next_drop) for r, m in zip(roots, members)]
    return LazyStackedTensorDict.lazy_stack(merged, dim)


def _same_stack(a: TensorDictBase, b: LazyStackedTensorDict) -> bool:
    return (
        isinstance(a, LazyStackedTensorDict)
        and a.stack_dim == b.stack_dim
        and len(a.tensordicts) == len(b.tensordicts)
    )


def _update_into(dest: TensorDictBase, src: TensorDictBase) -> TensorDictBase:
    """``dest.update(src)``, member by member where both are lazy stacks along one dim."""
    if isinstance(src, LazyStackedTensorDict) and _same_stack(dest, src):
        for d, s in zip(dest.tensordicts, src.tensordicts):  # type: ignore[attr-defined]
            _update_into(d, s)
        return dest
    return dest.update(src)


def _with_root_actions(
    tensordict: TensorDictBase, out: TensorDictBase, paths: tuple[tuple[str, ...], ...]
) -> TensorDictBase:
    """Adds the root's action entries to ``out`` (``keep_other=False, exclude_action=False``)."""
    if isinstance(out, LazyStackedTensorDict):
        members = (
            tensordict.tensordicts
            if _same_stack(tensordict, out)
            else tensordict.unbind(out.stack_dim)
        )
        for src, dest in zip(members, out.tensordicts):  # type: ignore[attr-defined]
            _with_root_actions(src, dest, paths)
        return out
    for path in paths:
        value = tensordict.get(path, None)
        if value is not None and out.get(path, None) is None:  # "next" wins, as with keep_other
            out.set(path, value)
    return out


def _merge_level_generic(
    root: TensorDictBase | None, nxt: TensorDictBase, root_drop: _Tree, next_drop: _Tree
) -> TensorDictBase:
    """Same as :func:`_merge_level` for any TensorDict type (lazy stacks, tensorclasses)."""
    out = nxt.empty()
    if root is not None:
        nxt_names = set(nxt.keys())
        for name in root.keys():
            if name in (NEXT, RESET) or name in nxt_names:
                continue
            rule = root_drop.get(name)
            if rule is True:
                continue
            value = root.get(name)
            if rule is not None and isinstance(value, TensorDictBase):
                value = _merge_level(None, value, {}, rule)
                if value.is_empty():
                    continue
            out.set(name, value)
    for name in nxt.keys():
        if name == RESET:
            continue
        rule = next_drop.get(name)
        if rule is True:
            continue
        value = nxt.get(name)
        if isinstance(value, TensorDictBase):
            sub_root, sub_drop = _sub_root(root, name, root_drop)
            value = _merge_level(sub_root, value, sub_drop, rule or {})
            if (rule or sub_drop) and value.is_empty():
                continue
        out.set(name, value)
    return out


def step_mdp(
    tensordict: TensorDictBase,
    next_tensordict: TensorDictBase | None = None,
    keep_other: bool = True,
    exclude_reward: bool = True,
    exclude_done: bool = False,
    exclude_action: bool = True,
    reward_keys: NestedKey | Sequence[NestedKey] = REWARD,
    done_keys: NestedKey | Sequence[NestedKey] | None = None,
    action_keys: NestedKey | Sequence[NestedKey] = ACTION,
) -> TensorDictBase:
    """Moves a transition one step forward: the ``"next"`` entries become the root.

    The result holds every entry of ``tensordict["next"]`` and, with ``keep_other``, the root
    entries that ``"next"`` does not hold (a recurrent state, a step counter, …). Entries of a
    nested group merge level by level; a lazy stack (agents or sub-envs whose entries differ
    in shape or keys) merges member by member and stays a lazy stack. Tensors are shared, not copied. ``"_reset"`` entries
    never carry over: they are one-step instructions to the env.

    Args:
        tensordict: a TED transition with a ``"next"`` sub-TensorDict.
        next_tensordict: if given, the result is written into it (in place) and returned.
        keep_other: keep root entries that ``"next"`` does not hold. Defaults to ``True``.
            With ``keep_other=False`` the action keys still carry over unless
            ``exclude_action`` (as in TorchRL).
        exclude_reward: drop the reward keys. Defaults to ``True``.
        exclude_done: drop the done keys. Defaults to ``False``.
        exclude_action: drop the action keys from the root. Defaults to ``True``.
        reward_keys: reward key or keys. Defaults to ``"reward"``.
        done_keys: done key or keys (a list; a tuple of str is one nested key). Defaults to
            ``None``: ``"done"``, ``"terminated"`` and ``"truncated"``.
        action_keys: action key or keys. Defaults to ``"action"``.

    Returns:
        A new TensorDict (or ``next_tensordict``) with the batch size of ``"next"``.

    Raises:
        KeyError: ``tensordict`` has no ``"next"`` entry.
        TypeError: a key argument is not a str or a tuple of str.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.ted import step_mdp
        >>> td = TensorDict(
        ...     observation=torch.zeros(2, 3),
        ...     action=torch.ones(2, 1),
        ...     hidden=torch.ones(2, 4),
        ...     next=TensorDict(
        ...         observation=torch.ones(2, 3),
        ...         reward=torch.ones(2, 1),
        ...         done=torch.zeros(2, 1, dtype=torch.bool),
        ...         batch_size=[2],
        ...     ),
        ...     batch_size=[2],
        ... )
        >>> out = step_mdp(td)
        >>> sorted(out.keys())
        ['done', 'hidden', 'observation']
        >>> out["observation"].sum().item()
        6.0
    """
    if (
        next_tensordict is done_keys is None and exclude_done is False
        and keep_other is exclude_reward is exclude_action is True
        and (reward_keys, action_keys) == (REWARD, ACTION)
    ):  # fmt: skip
        return _DEFAULT_MDP(tensordict)  # the defaults: their rules, resolved once
    nxt = tensordict.get(NEXT, None)
    if nxt is None:
        raise KeyError(
            f"step_mdp: expected a TensorDict with a {NEXT!r} entry, got one with keys "
            f"{sorted(tensordict.keys())}. Call env.step(td) first, which writes {NEXT!r}."
        )
    try:
        root_drop, next_drop = _exclusion_trees(
            _hashable(reward_keys),
            _hashable(done_keys),
            _hashable(action_keys),
            bool(exclude_reward),
            bool(exclude_done),
            bool(exclude_action),
        )
    except TypeError as err:
        if "unhashable" not in str(err):
            raise
        raise TypeError(
            f"step_mdp: reward_keys, done_keys and action_keys must be keys or lists of keys, "
            f"got {reward_keys!r}, {done_keys!r}, {action_keys!r}."
        ) from err
    out = _merge_level(tensordict if keep_other else None, nxt, root_drop, next_drop)
    if not keep_other and not exclude_action:
        # As TorchRL: without the other root entries, the action still carries over.
        out = _with_root_actions(tensordict, out, _action_paths(_hashable(action_keys)))
    if next_tensordict is not None:
        return _update_into(next_tensordict, out)
    return out


def _mdp_plan(
    reward_keys: NestedKey | Sequence[NestedKey] = REWARD,
    done_keys: NestedKey | Sequence[NestedKey] | None = None,
    action_keys: NestedKey | Sequence[NestedKey] = ACTION,
) -> tuple[_Tree, _Tree]:
    """The exclusion rules of ``step_mdp(td, reward_keys=..., done_keys=..., action_keys=...)``
    with the other arguments at their defaults, for :class:`StepMdpPlan`.

    An env computes them once and reuses them every step, skipping the argument handling.
    """
    return _exclusion_trees(
        _hashable(reward_keys), _hashable(done_keys), _hashable(action_keys), True, False, True
    )


class StepMdpPlan(StepMdpMerge):
    """``step_mdp(td, reward_keys=..., done_keys=..., action_keys=...)`` with the keys resolved
    once: the same result every step, without the argument handling.

    Envs hand out theirs through :meth:`rl_core.envs.EnvBase.step_mdp_plan`.

    Args:
        reward_keys: the env's reward keys.
        done_keys: the env's done keys.
        action_keys: the env's action keys.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> plan = StepMdpPlan(["reward"], ["done"], ["action"])
        >>> td = TensorDict(
        ...     {"obs": torch.zeros(2), "action": torch.ones(2),
        ...      "next": {"obs": torch.ones(2), "reward": torch.ones(2), "done": torch.zeros(2)}},
        ...     batch_size=[2],
        ... )
        >>> sorted(plan(td).keys())
        ['done', 'obs']
    """

    def __init__(
        self,
        reward_keys: Sequence[Any],
        done_keys: Sequence[Any],
        action_keys: Sequence[Any],
    ) -> None:
        self.reward_keys, self.done_keys = list(reward_keys), list(done_keys)
        self.action_keys = list(action_keys)
        rules = _mdp_plan(self.reward_keys, self.done_keys, self.action_keys)
        # The call (StepMdpMerge.__call__) merges through the entry dicts where the rules are
        # flat and falls back to this module's level merge (and step_mdp) elsewhere.
        super().__init__(rules, _merge_level, step_mdp)


# step_mdp's defaults resolved once (a missing "next" goes to the generic route: it raises).
_DEFAULT_MDP = StepMdpMerge(_mdp_plan(), _merge_level, lambda t: step_mdp(t, reward_keys=[REWARD]))


def _done_groups(done_keys: Iterable[NestedKey]) -> dict[tuple[str, ...], list]:
    groups: dict[tuple[str, ...], list] = {}
    for key in done_keys:
        path = key_path(key)
        groups.setdefault(path[:-1], []).append(path)
    return groups


def _find_done_keys(data: TensorDictBase) -> list[tuple[str, ...]]:
    names = set(DONE_KEYS)
    found = []
    for key in data.keys(include_nested=True, leaves_only=True):
        path = (key,) if isinstance(key, str) else key
        if path[-1] in names and NEXT not in path[:-1]:
            found.append(path)
    return found


def terminated_or_truncated(
    data: TensorDictBase,
    full_done_spec: Any | None = None,
    key: NestedKey | None = RESET,
    write_full_false: bool = False,
) -> bool:
    """Reads the done flags of ``data``, level by level, and marks what ended.

    For every level that holds done flags (the root, or a group such as ``"agents"``), the
    flags are OR-ed together; the result, shaped like the flags, is written under ``key`` at
    that level (``"_reset"`` by default, the partial-reset mask an env's ``reset`` reads).

    Args:
        data: a TensorDict holding done flags, typically the ``"next"`` part of a transition.
        full_done_spec: a ``Composite`` whose leaf keys name the done flags. Without it, every
            ``done``/``terminated``/``truncated`` leaf of ``data`` outside ``"next"`` counts.
        key: where to write the per-level mask, or ``None`` to write nothing.
        write_full_false: also write the mask when nothing ended at that level.

    Returns:
        ``True`` if any flag at any level is set.

    Raises:
        KeyError: a done key named by ``full_done_spec`` is missing from ``data``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.ted import terminated_or_truncated
        >>> data = TensorDict(
        ...     terminated=torch.tensor([[True], [False]]),
        ...     truncated=torch.tensor([[False], [False]]),
        ...     batch_size=[2],
        ... )
        >>> terminated_or_truncated(data)
        True
        >>> data["_reset"].squeeze(-1).tolist()
        [True, False]
    """
    if full_done_spec is not None:
        done_keys = [
            (k,) if isinstance(k, str) else k
            for k in full_done_spec.keys(include_nested=True, leaves_only=True)
        ]
    else:
        done_keys = _find_done_keys(data)
    any_done = False
    for level, paths in _done_groups(done_keys).items():
        flags = None
        for path in paths:
            try:
                value = data.get(path)
            except KeyError:
                value = None
            if value is None:
                raise KeyError(
                    f"terminated_or_truncated: the done spec names {path}, which the data lacks "
                    f"(keys: {sorted(map(str, data.keys(True, True)))})."
                )
            flags = value if flags is None else flags | value
        if flags is None:
            continue
        level_done = bool(flags.any())
        any_done = any_done or level_done
        if key is not None and (level_done or write_full_false):
            path = key_path(key)
            data.set(level + path, flags.bool() if flags.dtype != torch.bool else flags)
    return any_done


__all__ = ["StepMdpPlan", "step_mdp", "terminated_or_truncated"]
