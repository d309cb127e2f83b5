"""Checks of rollouts and reset inputs for users' tests, as TorchRL's ``torchrl.testing`` has
them. A failed check raises ``AssertionError`` saying which entry broke which rule."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from tensordict.utils import NestedKey

from rl_core import EnvBase
from rl_core.keys import DONE, NEXT


def _check(ok: torch.Tensor | bool, message: str) -> None:
    if not bool(ok):
        raise AssertionError(message)


def rollout_consistency_assertion(
    rollout: TensorDictBase,
    *,
    done_key: NestedKey = DONE,
    observation_key: NestedKey = "observation",
    done_strict: bool = False,
) -> None:
    """Checks a batched rollout ``[batch, time]`` of an auto-resetting env: where a step is
    not done, the next step's observation is the ``"next"`` one; where it is done, the reset
    observations differ from the ``"next"`` ones somewhere.

    Args:
        rollout: the rollout, batch dim first and time second.
        done_key: the done flag's key.
        observation_key: the observation's key.
        done_strict: also fail when no step of the rollout is done.

    Raises:
        AssertionError: a check fails (it says which).
        RuntimeError: ``done_strict`` and no step is done.
    """
    done = rollout[..., :-1].get((NEXT, done_key)).squeeze(-1)
    stepped = rollout[..., :-1].get(NEXT)
    following = rollout[..., 1:]
    torch.testing.assert_close(
        stepped[~done].get(observation_key),
        following[~done].get(observation_key),
        msg=lambda m: (
            f"{observation_key!r}: the next step does not start where the step ended ({m})"
        ),
    )
    if done_strict and not done.any():
        raise RuntimeError("rollout_consistency_assertion: no step is done; nothing to check.")
    if done.any():
        _check(
            not torch.isclose(
                stepped[done].get(observation_key), following[done].get(observation_key)
            ).all(),
            f"{observation_key!r}: the observations after the done steps equal the reset ones; "
            "expected a reset to change them.",
        )


def rand_reset(env: EnvBase) -> TensorDictBase:
    """A reset input for ``env``: at each done level a random ``"_reset"`` mask shaped like the
    level's done flag, with at least one element set.

    Args:
        env: the env.

    Returns:
        A TensorDict with the ``"_reset"`` entries only, its nested levels keeping their batch
        sizes.

    Examples:
        >>> from rl_envs.testing import NestedCountingEnv, rand_reset
        >>> env = NestedCountingEnv(batch_size=[2], nested_dim=3)
        >>> td = rand_reset(env)
        >>> td["data", "_reset"].shape, bool(td["data", "_reset"].any())
        (torch.Size([2, 3, 1]), True)
    """
    done_spec = env.full_done_spec
    out = done_spec.zero()
    for level in env.done_levels():
        flag_spec = done_spec[(*level, DONE)]
        mask = flag_spec.rand()
        while not mask.any():
            mask = flag_spec.rand()
        out.set((*level, "_reset"), mask.to(torch.bool))
    return out.exclude(*done_spec.keys(True, True))


def _check_level(
    td: TensorDictBase,
    prefix: tuple[str, ...],
    max_steps: int,
    next_first_obs: torch.Tensor,
    counted: torch.Tensor,
    reward_key: str,
) -> None:
    """The checks of one level of a MultiKeyCountingEnv rollout (see the caller)."""
    where = "/".join(prefix) or "root"
    index = (0,) * (td.ndim - 1)
    at_max = next_first_obs == max_steps + 1
    next_done = td.get((NEXT, *prefix, DONE))
    _check(next_done[at_max].all(), f"{where}: not done where the count is max_steps + 1")
    _check((~next_done[~at_max]).all(), f"{where}: done where the count is below max_steps + 1")
    root_done = td.get((NEXT, DONE))[index][:-1].squeeze(-1)
    obs = td.get((*prefix, "observation"))
    next_obs = td.get((NEXT, *prefix, "observation"))
    _check((obs[index][1:][root_done] == 0).all(), f"{where}: a reset observation is not 0")
    _check(
        (obs[index][1:][~root_done] == next_obs[index][:-1][~root_done]).all(),
        f"{where}: a step does not start from the previous step's next observation",
    )
    reward = td.get((NEXT, *prefix, reward_key))
    _check(
        (next_obs[counted] == obs[counted] + 1).all(),
        f"{where}: a counting action did not add 1 to the observation",
    )
    _check((reward[counted] == 1).all(), f"{where}: a counting action's reward is not 1")
    _check(
        (next_obs[~counted] == obs[~counted]).all(),
        f"{where}: a non-counting action changed the observation",
    )
    _check((reward[~counted] == 0).all(), f"{where}: a non-counting action's reward is not 0")


def check_rollout_consistency_multikey_env(td: TensorDictBase, max_steps: int) -> None:
    """Checks a rollout of :class:`~rl_envs.testing.MultiKeyCountingEnv` driven by
    :class:`~rl_envs.testing.MultiKeyCountingEnvPolicy`: at each level (root, ``"nested_1"``,
    ``"nested_2"``) done exactly where the count is ``max_steps + 1``, observations 0 after a
    (root) reset and carried over otherwise, and a counting action adds 1 to the
    observation with a reward of 1 while another adds nothing with a reward of 0.

    Args:
        td: the rollout (time last among the batch dims).
        max_steps: the env's ``max_steps``.

    Raises:
        AssertionError: a check fails (it names the level and the rule).
    """
    root_counted = td.get("action").long().argmax(-1).to(torch.bool)
    _check_level(
        td,
        (),
        max_steps,
        td.get((NEXT, "observation"))[..., 0, 0, 0],
        root_counted,
        "reward",
    )
    _check_level(
        td,
        ("nested_1",),
        max_steps,
        td.get((NEXT, "nested_1", "observation"))[..., 0],
        td.get(("nested_1", "action")).to(torch.bool),
        "gift",
    )
    _check_level(
        td,
        ("nested_2",),
        max_steps,
        td.get((NEXT, "nested_2", "observation"))[..., 0],
        td.get(("nested_2", "azione")).squeeze(-1).to(torch.bool),
        "reward",
    )


__all__ = ["check_rollout_consistency_multikey_env", "rand_reset", "rollout_consistency_assertion"]
