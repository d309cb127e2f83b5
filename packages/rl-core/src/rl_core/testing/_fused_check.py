"""The conformance check of the fused step-and-reset hook (``EnvBase._step_and_reset``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from tensordict import TensorDictBase

from rl_core.envs import EnvBase


def generic_step_and_maybe_reset(
    env: EnvBase, tensordict: TensorDictBase
) -> tuple[TensorDictBase, TensorDictBase]:
    """``env.step_and_maybe_reset`` without the fused hook: ``step``, ``step_mdp``, then a
    ``reset`` of the sub-envs that finished (the oracle of :func:`check_step_and_reset`)."""
    tensordict = env.step(tensordict)
    next_root = env.step_mdp_plan()(tensordict)
    if env._mark_finished(next_root):
        next_root = env.reset(next_root)
    return tensordict, next_root


def seeded_twins(
    envs: list[EnvBase], seed: int, steps: int
) -> tuple[list[TensorDictBase], Iterator[TensorDictBase]]:
    """Seeds and resets twin envs alike: their first roots, and ``steps`` random actions of
    ``envs[0]``'s action spec, each drawn after seeding torch from a generator seeded with
    ``seed`` (the same actions for every twin, whatever the envs draw in between)."""
    for env in envs:
        env.set_seed(seed)
    roots = [env.reset() for env in envs]
    generator = torch.Generator().manual_seed(seed)

    def actions() -> Iterator[TensorDictBase]:
        for _ in range(steps):
            torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=generator)))
            yield envs[0].full_action_spec.rand()

    return roots, actions()


def check_step_and_reset(
    make_env: Callable[[], EnvBase],
    *,
    steps: int = 60,
    fail: Callable[[str, EnvBase, str], None],
    same: Callable[[object, object], bool],
) -> bool:
    """An env overriding ``_step_and_reset`` gives, through ``step_and_maybe_reset``, what
    ``step`` then ``reset`` of the finished sub-envs give: twin envs seeded alike take the same
    actions, one through each path, and every entry of the transitions and next roots must
    match. Returns False (nothing checked) for envs without the hook."""
    envs = [make_env(), make_env()]
    try:
        if type(envs[0])._step_and_reset is EnvBase._step_and_reset:
            return False
        roots, draws = seeded_twins(envs, 5, steps)
        for t, actions in enumerate(draws):
            fused = envs[0].step_and_maybe_reset(roots[0].update(actions.clone()))
            generic = generic_step_and_maybe_reset(envs[1], roots[1].update(actions.clone()))
            for what, mine, theirs in zip(("transition", "next root"), fused, generic, strict=True):
                keys = set(mine.keys(True, True))
                if keys != set(theirs.keys(True, True)):
                    fail(
                        "check_step_and_reset",
                        envs[0],
                        f"step {t}: the {what} of step_and_maybe_reset (the _step_and_reset "
                        f"hook) has the entries {sorted(map(str, keys))}, step then reset "
                        f"{sorted(map(str, theirs.keys(True, True)))}.",
                    )
                for key in sorted(keys, key=str):
                    if not same(mine.get(key), theirs.get(key)):
                        fail(
                            "check_step_and_reset",
                            envs[0],
                            f"step {t}: {key!r} of the {what} differs between "
                            f"step_and_maybe_reset (the _step_and_reset hook) and step then "
                            f"reset of the finished sub-envs.",
                        )
            roots = [fused[1], generic[1]]
        return True
    finally:
        for env in envs:
            env.close()
