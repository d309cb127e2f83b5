"""Log-probabilities of the data's actions, one action or several heads (private).

An actor over several action heads (a ``tensordict.nn.CompositeDistribution``) writes one
log-probability per head. A loss or an estimator then reads the behaviour log-probabilities
at a list of keys (``set_keys(sample_log_prob=[k1, k2])``) and adds them up, as it sums the
per-dimension log-probabilities of a factorised distribution: the log-probability of a joint
action is the sum over its heads.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

from tensordict import TensorDictBase, is_tensor_collection
from torch import Tensor

from rl_core.keys import NestedKey

__all__: list[str] = []

#: a key, or a list of keys whose entries are added (one per action head)
LogProbKeys = NestedKey | list[NestedKey]


def _is_key(value: object) -> bool:
    if isinstance(value, str):
        return True
    return isinstance(value, tuple) and len(value) > 0 and all(isinstance(v, str) for v in value)


def check_key_list(owner: str, name: str, value: object) -> LogProbKeys:
    """``value`` if it is a key or a non-empty list of keys (a list is copied).

    Raises:
        TypeError: anything else, naming ``owner.set_keys`` and ``name``.
    """
    if _is_key(value):
        return value  # type: ignore[return-value]
    if isinstance(value, list) and value and all(_is_key(v) for v in value):
        return list(value)
    raise TypeError(
        f"{owner}.set_keys: {name} must be a key (a string or a tuple of strings) or a "
        f"non-empty list of keys (one per action head), got {value!r}."
    )


def key_list(keys: LogProbKeys) -> list[NestedKey]:
    """``keys`` as a list."""
    return list(keys) if isinstance(keys, list) else [keys]


def sum_to(value: Tensor, ndim: int) -> Tensor:
    """Sums the trailing dims of ``value`` until it has at most ``ndim`` dims."""
    while value.dim() > ndim:
        value = value.sum(-1)
    return value


def total(value: Tensor | TensorDictBase, ndim: int) -> Tensor:
    """A log-probability (or entropy) summed to ``ndim`` dims.

    Args:
        value: a tensor ``[*B, *F]``, or a TensorDict of them (one per action head, as a
            ``CompositeDistribution`` returns).
        ndim: the number of batch dims ``len(B)`` to keep.

    Returns:
        A tensor ``[*B]``: the features summed, and the heads added.
    """
    if is_tensor_collection(value):
        leaves = [sum_to(leaf, ndim) for leaf in value.values(True, True)]
        if not leaves:
            raise ValueError(
                "expected at least one log-probability entry, got an empty TensorDict."
            )
        return functools.reduce(operator.add, leaves)
    return sum_to(value, ndim)


def read_log_prob(owner: str, tensordict: TensorDictBase, keys: LogProbKeys, ndim: int) -> Tensor:
    """The log-probabilities stored at ``keys``, each summed to ``ndim`` dims, added.

    Raises:
        KeyError: an entry is missing, naming it and how to rename it.
    """
    parts = []
    for key in key_list(keys):
        entry = tensordict.get(key, None)
        if entry is None:
            raise KeyError(
                f"{owner}: expected the behaviour log-probabilities at {key!r}, found none. "
                f"Build the actor with return_log_prob=True or rename the key with "
                f"set_keys(sample_log_prob=...)."
            )
        parts.append(total(entry, ndim))
    return functools.reduce(operator.add, parts)


def is_composite(dist: Any) -> bool:
    """Whether ``dist`` is a distribution over several action heads."""
    from tensordict.nn import CompositeDistribution

    return isinstance(dist, CompositeDistribution)


def action_of(dist: Any, tensordict: TensorDictBase, action_keys: LogProbKeys) -> Any:
    """What ``dist.log_prob`` takes: the TensorDict of the action entries for a composite
    distribution (it reads each head at its own key), the action tensor otherwise."""
    for key in key_list(action_keys):
        if tensordict.get(key, None) is None:
            raise KeyError(
                f"expected the batch's action at {key!r} (its log-probability under the "
                f"current policy is scored), found none."
            )
    if is_composite(dist):
        return tensordict.select(*key_list(action_keys))
    if isinstance(action_keys, list):
        if len(action_keys) != 1:
            raise TypeError(
                f"expected one action key for a distribution over one action "
                f"({type(dist).__name__}), got {action_keys!r}."
            )
        action_keys = action_keys[0]
    return tensordict.get(action_keys)


def action_log_prob(
    dist: Any, tensordict: TensorDictBase, action_keys: LogProbKeys, ndim: int
) -> Tensor:
    """The log-probability of the data's action under ``dist``, summed to ``ndim`` dims."""
    return total(dist.log_prob(action_of(dist, tensordict, action_keys)), ndim)
