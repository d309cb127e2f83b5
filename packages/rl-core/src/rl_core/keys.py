"""Names of the TensorDict entries that every package of the stack reads and writes.

A transition is one TensorDict (the "TED" layout)::

    TensorDict(
        observation: Tensor[*B, ...]          # what the policy saw
        action: Tensor[*B, ...]               # what it did
        done, terminated, truncated: bool[*B, 1]   # flags of the state it acted in
        next: TensorDict(
            observation: Tensor[*B, ...]      # where it landed
            reward: Tensor[*B, 1]
            done, terminated, truncated: bool[*B, 1]
        )
    )

Rewards and done flags keep a trailing singleton dimension, and ``done`` is always
``terminated | truncated``. Components take their key names from these constants (and from
their own ``keys`` settings), never from scattered string literals.

Multi-agent data lives under a group key: ``("agents", "observation")`` has shape
``[*B, n_agents, ...]``. Reward and done entries sit either inside the group (one per agent,
``("agents", "reward")`` of shape ``[*B, n_agents, 1]``) or at the root (shared by the whole
team, ``"reward"`` of shape ``[*B, 1]``); an env may provide both, in which case the root
``done`` is the "all agents done" summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from tensordict import unravel_key

NestedKey: TypeAlias = str | tuple[str, ...]


def as_key_list(keys: NestedKey | Sequence[NestedKey] | None, where: str) -> list[NestedKey]:
    """One key or a sequence of keys as a list of unravelled keys.

    A tuple of strings is one nested key (tensordict's convention); a list holds several keys.

    Args:
        keys: ``None`` (no key), a key, or a sequence of keys.
        where: what to name in the error, e.g. ``"step_mdp: reward_keys"``.

    Raises:
        TypeError: an entry is neither a str nor a tuple of str.

    Examples:
        >>> from rl_core.keys import as_key_list
        >>> as_key_list(("agents", "reward"), "example")
        [('agents', 'reward')]
        >>> as_key_list(["reward", ("agents", ("reward",))], "example")
        ['reward', ('agents', 'reward')]
    """
    if keys is None:
        return []
    if isinstance(keys, str) or (type(keys) is tuple and all(isinstance(k, str) for k in keys)):
        keys = [keys]
    out = []
    for key in keys:
        try:
            out.append(unravel_key(key))
        except Exception as err:
            raise TypeError(
                f"{where} must be a key or a list of keys (str or tuple of str), got {key!r}."
            ) from err
    return out


def key_path(key: NestedKey) -> tuple[str, ...]:
    """A key as the tuple of names leading to its entry: ``"a"`` is ``("a",)``.

    Args:
        key: a str or a tuple of str (nested tuples are not flattened here: see
            ``tensordict.unravel_key`` for that).

    Examples:
        >>> from rl_core.keys import key_path
        >>> key_path("reward"), key_path(("agents", "reward"))
        (('reward',), ('agents', 'reward'))
    """
    return (key,) if isinstance(key, str) else tuple(key)


# The transition layout.
OBSERVATION = "observation"
PIXELS = "pixels"
ACTION = "action"
REWARD = "reward"
DONE = "done"
TERMINATED = "terminated"
TRUNCATED = "truncated"
NEXT = "next"
DONE_KEYS: tuple[str, str, str] = (DONE, TERMINATED, TRUNCATED)

# Partial resets of batched envs: a boolean entry beside the done flags, shaped like them,
# True for the sub-envs (or agents) to reset.
RESET = "_reset"

# Entries written by common transforms and modules.
IS_INIT = "is_init"
STEP_COUNT = "step_count"
EPISODE_REWARD = "episode_reward"
ACTION_MASK = "action_mask"
MASK = "mask"

# Values and policy outputs.
STATE_VALUE = "state_value"
STATE_ACTION_VALUE = "state_action_value"
ACTION_VALUE = "action_value"
CHOSEN_ACTION_VALUE = "chosen_action_value"
ADVANTAGE = "advantage"
VALUE_TARGET = "value_target"
LOC = "loc"
SCALE = "scale"
LOGITS = "logits"
# tensordict's default key for the log-probability of a sample.
SAMPLE_LOG_PROB = "action_log_prob"

# Multi-agent group key used by the wrappers when all agents form one group.
AGENTS = "agents"

__all__ = [
    "NestedKey",
    "as_key_list",
    "key_path",
    "OBSERVATION",
    "PIXELS",
    "ACTION",
    "REWARD",
    "DONE",
    "TERMINATED",
    "TRUNCATED",
    "NEXT",
    "DONE_KEYS",
    "RESET",
    "IS_INIT",
    "STEP_COUNT",
    "EPISODE_REWARD",
    "ACTION_MASK",
    "MASK",
    "STATE_VALUE",
    "STATE_ACTION_VALUE",
    "ACTION_VALUE",
    "CHOSEN_ACTION_VALUE",
    "ADVANTAGE",
    "VALUE_TARGET",
    "LOC",
    "SCALE",
    "LOGITS",
    "SAMPLE_LOG_PROB",
    "AGENTS",
]
