"""The env conformance kit: checks every EnvBase implementation passes.

Each check is a plain function taking a zero-argument env factory, so it runs anywhere;
:class:`EnvConformanceSuite` wraps them as pytest tests. Required checks run on every env;
optional ones depend on a capability the env declares (a batch dimension for partial resets,
a seedable random state for determinism).

Use it in a test module::

    from rl_core.testing import EnvConformanceSuite

    class TestMyEnv(EnvConformanceSuite):
        def make_env(self):
            return MyEnv(batch_size=[4])

or call :func:`run_env_conformance` directly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDictBase

from rl_core._accel.seam import check_step_plan as _check_step_plan
from rl_core._accel.seam import reference_only, seeded_twins
from rl_core.envs import EnvBase, check_env_specs
from rl_core.envs._plans import built_plan
from rl_core.envs._spec_checks import _same_device
from rl_core.keys import DONE, NEXT, RESET, TERMINATED, TRUNCATED, key_path
from rl_core.ted import step_mdp

EnvFactory = Callable[[], EnvBase]


class ConformanceError(AssertionError):
    """An env broke the contract; the message says which rule and how."""


def _fail(check: str, env: EnvBase, message: str) -> None:
    raise ConformanceError(f"{check}({type(env).__name__}): {message}")


def _done_levels(env: EnvBase) -> list[tuple[str, ...]]:
    return env.done_levels()


def check_specs_match_rollout(make_env: EnvFactory) -> None:
    """A short rollout holds exactly the entries the specs describe, inside the specs."""
    env = make_env()
    try:
        check_env_specs(env, seed=0)
    finally:
        env.close()


def check_reset(make_env: EnvFactory) -> None:
    """``reset()`` returns every observation and done flag, batch-shaped, nothing done."""
    env = make_env()
    try:
        td = env.reset()
        if td.batch_size != env.batch_size:
            _fail(
                "check_reset",
                env,
                f"batch size {tuple(td.batch_size)}, expected {tuple(env.batch_size)}.",
            )
        for key in env.observation_keys:
            if td.get(key, None) is None:
                _fail("check_reset", env, f"the reset output lacks the observation {key!r}.")
        for level in _done_levels(env):
            for name in (DONE, TERMINATED, TRUNCATED):
                flag = td.get((*level, name), None)
                if flag is None:
                    _fail("check_reset", env, f"the reset output lacks {(*level, name)}.")
                if flag.any():
                    _fail("check_reset", env, f"{(*level, name)} is set right after reset.")
        if NEXT in td.keys():
            _fail("check_reset", env, "the reset output holds a 'next' entry.")
        if any(RESET in (k if isinstance(k, tuple) else (k,)) for k in td.keys(True, True)):
            _fail("check_reset", env, "the reset output holds a '_reset' entry.")
    finally:
        env.close()


def check_done_flags(make_env: EnvFactory, *, steps: int = 50) -> None:
    """In every step, ``done == terminated | truncated`` at every level."""
    env = make_env()
    try:
        env.set_seed(0)
        traj = env.rollout(steps, break_when_any_done=False)
        for level in _done_levels(env):
            done = traj.get((NEXT, *level, DONE))
            either = traj.get((NEXT, *level, TERMINATED)) | traj.get((NEXT, *level, TRUNCATED))
            if not torch.equal(done, either):
                _fail(
                    "check_done_flags",
                    env,
                    f"'done' differs from 'terminated | truncated' under {level or 'the root'}.",
                )
    finally:
        env.close()


def check_step_mdp_round_trip(make_env: EnvFactory) -> None:
    """``step`` writes ``"next"`` and ``step_mdp`` of it feeds the next ``step``."""
    env = make_env()
    try:
        td = env.reset()
        td = env.rand_step(td)
        if NEXT not in td.keys():
            _fail("check_step_mdp_round_trip", env, "step wrote no 'next' entry.")
        nxt = step_mdp(td, **env._step_mdp_kwargs())
        for key in env.observation_keys:
            if not _same(nxt.get(key), td.get((NEXT, *key_path(key)))):
                _fail("check_step_mdp_round_trip", env, f"step_mdp moved {key!r} wrongly.")
        for key in env.action_keys:
            if nxt.get(key, None) is not None:
                _fail("check_step_mdp_round_trip", env, f"the action {key!r} survived step_mdp.")
        env.rand_step(nxt)
    finally:
        env.close()


def check_rollout_shapes(make_env: EnvFactory, *, steps: int = 5) -> None:
    """``rollout`` returns ``[*batch, T]`` with ``T <= max_steps``, and exactly T without breaks."""
    env = make_env()
    try:
        traj = env.rollout(steps, break_when_any_done=False)
        expected = torch.Size([*env.batch_size, steps])
        if traj.batch_size != expected:
            _fail(
                "check_rollout_shapes",
                env,
                f"rollout batch size {tuple(traj.batch_size)}, expected {tuple(expected)}.",
            )
        traj = env.rollout(steps)
        if (
            tuple(traj.batch_size[:-1]) != tuple(env.batch_size)
            or not 1 <= traj.batch_size[-1] <= steps
        ):
            _fail(
                "check_rollout_shapes",
                env,
                f"rollout batch size {tuple(traj.batch_size)} with break_when_any_done.",
            )
    finally:
        env.close()


def check_seeding(make_env: EnvFactory, *, steps: int = 20) -> None:
    """The same seed gives the same rollout (env seed and torch seed both set)."""
    first = _seeded_rollout(make_env, 7, steps)
    second = _seeded_rollout(make_env, 7, steps)
    for key in first.keys(include_nested=True, leaves_only=True):
        if not _same(first.get(key), second.get(key)):
            raise ConformanceError(
                f"check_seeding: two rollouts seeded with 7 differ at {key!r}; _set_seed must "
                f"seed every random source of the env."
            )


def _seeded_rollout(make_env: EnvFactory, seed: int, steps: int) -> TensorDictBase:
    env = make_env()
    try:
        env.set_seed(seed)
        torch.manual_seed(seed)
        return env.rollout(steps, break_when_any_done=False)
    finally:
        env.close()


def check_random_rollout(make_env: EnvFactory, *, steps: int = 100) -> None:
    """A rollout without a policy equals the generic loop fed the same actions.

    An env's step plan may take random rollouts in a faster loop
    (``StepPlan.random_rollout``); its trajectory (with and without ``break_when_any_done``)
    must match, entry by entry, a rollout from the same seed whose policy replays its actions
    on the reference code (no step plan).
    """
    for break_when_any_done in (False, True):
        env = make_env()
        try:
            env.set_seed(3)
            fast = env.rollout(steps, break_when_any_done=break_when_any_done)
        finally:
            env.close()
        replay = _replay(fast.select(*env.action_keys), len(env.batch_size))
        env = make_env()
        try:
            with reference_only():
                env.set_seed(3)
                slow = env.rollout(steps, replay, break_when_any_done=break_when_any_done)
        finally:
            env.close()
        where = f"check_random_rollout (break_when_any_done={break_when_any_done})"
        if fast.batch_size != slow.batch_size:
            raise ConformanceError(
                f"{where}: the rollout without a policy has batch size {tuple(fast.batch_size)}, "
                f"the generic loop replaying its actions {tuple(slow.batch_size)}."
            )
        fast_keys = set(fast.keys(include_nested=True, leaves_only=True))
        slow_keys = set(slow.keys(include_nested=True, leaves_only=True))
        if fast_keys != slow_keys:
            raise ConformanceError(
                f"{where}: the rollout without a policy has the entries {sorted(map(str, fast_keys))}, "
                f"the generic loop {sorted(map(str, slow_keys))}."
            )
        for key in fast_keys:
            if not _same(fast.get(key), slow.get(key)):
                raise ConformanceError(
                    f"{where}: {key!r} differs between the rollout without a policy and the "
                    f"generic loop replaying its actions; StepPlan.random_rollout must give what the "
                    f"generic loop gives."
                )


def _replay(actions: TensorDictBase, time_dim: int) -> Callable[[TensorDictBase], TensorDictBase]:
    """A policy writing the actions of ``actions`` (time along ``time_dim``), one step per call."""
    taken = 0

    def replay(td: TensorDictBase) -> TensorDictBase:
        nonlocal taken
        index = (slice(None),) * time_dim + (taken,)
        taken += 1
        return td.update(actions[index])

    return replay


def check_partial_reset(
    make_env: EnvFactory, *, steps: int = 3, deterministic_steps: bool = True
) -> None:
    """A ``"_reset"`` mask resets only the marked sub-env; the others go on untouched.

    The reset output must keep the other sub-envs' entries. With ``deterministic_steps`` (the
    env's steps are a function of its state and the actions), a twin env seeded alike takes
    the same actions without the reset, and the other sub-envs' next observations must match
    the twin's: this catches envs that reset every sub-env's internal state.
    """
    env = make_env()
    twin = make_env() if deterministic_steps else None
    try:
        if not env.batch_size:
            _fail("check_partial_reset", env, "needs a batched env (batch_size non-empty).")
        envs = [e for e in (env, twin) if e is not None]
        roots, draws = seeded_twins(envs, 0, steps)
        for actions in draws:
            roots = [
                e.step_and_maybe_reset(r.update(actions.clone()))[1] for e, r in zip(envs, roots)
            ]
        td = roots[0]
        mask = torch.zeros((*env.batch_size, 1), dtype=torch.bool, device=env.device)
        mask.view(-1)[0] = True
        for level in _done_levels(env):
            shape = env.full_done_spec[(*level, DONE)].shape
            level_mask = mask.reshape(*env.batch_size, *([1] * (len(shape) - len(env.batch_size))))
            td.set((*level, RESET), level_mask.expand(shape).clone())
        before = td.clone()
        out = env.reset(td)
        keep = ~mask.reshape(-1)
        for key in env.observation_keys:
            if not _same(_rows(out.get(key), keep), _rows(before.get(key), keep)):
                _fail(
                    "check_partial_reset", env, f"{key!r} changed in a sub-env that was not reset."
                )
        for key in out.keys(True, True):
            if key_path(key)[-1] == RESET:
                _fail("check_partial_reset", env, "the reset output still holds '_reset'.")
        actions = env.full_action_spec.rand()
        stepped = env.step(out.update(actions.clone()))
        if twin is not None:
            twin_stepped = twin.step(roots[1].update(actions.clone()))
            for key in env.observation_keys:
                mine = _rows(stepped.get((NEXT, *key_path(key))), keep)
                theirs = _rows(twin_stepped.get((NEXT, *key_path(key))), keep)
                if not _same(mine, theirs):
                    _fail(
                        "check_partial_reset",
                        env,
                        f"after resetting sub-env 0 only, the next {key!r} of the other sub-envs "
                        f"differs from a twin env that was not reset: the reset touched their "
                        f"state.",
                    )
    finally:
        env.close()
        if twin is not None:
            twin.close()


def check_step_plan(make_env: EnvFactory, *, steps: int = 60) -> None:
    """The env's step plan (``rl_core.envs.StepPlan``) changes no result.

    Twin envs seeded alike take the same actions for ``steps`` steps, one with its plan, the
    other on the reference code only (:func:`rl_core.envs.reference_only`), first through
    ``step_and_maybe_reset`` (the fused step-and-reset, the numpy-row lane, the direct
    reset), then through ``step`` and ``reset`` of the finished sub-envs; every entry of the
    transitions and next roots must match (values, shapes, dtypes, done flags, reset rows).
    With :func:`check_random_rollout` (the plan's random rollouts) it is the oracle of every
    accelerated route. Envs without a plan pass trivially.

    Examples:
        >>> from rl_core.testing import CountingEnv, check_step_plan
        >>> from rl_core.transforms import StepCounter, TransformedEnv
        >>> check_step_plan(lambda: TransformedEnv(CountingEnv(max_count=3), StepCounter()))
    """
    _check_step_plan(make_env, steps=steps, fail=_fail, same=_same, plan_of=built_plan)


def check_step_and_reset(make_env: EnvFactory, *, steps: int = 60) -> None:
    """The fused step-and-reset changes no result: :func:`check_step_plan` (which checks it
    with the plan's other routes)."""
    check_step_plan(make_env, steps=steps)


def _rows(value: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    return value.reshape(keep.numel(), -1)[keep]


def check_device(make_env: EnvFactory) -> None:
    """Everything the env writes lives on ``env.device`` (when the env has one)."""
    env = make_env()
    try:
        if env.device is None:
            return
        traj = env.rollout(2, break_when_any_done=False)
        for key in traj.keys(include_nested=True, leaves_only=True):
            value = traj.get(key)
            if isinstance(value, torch.Tensor) and not _same_device(value.device, env.device):
                _fail("check_device", env, f"{key!r} is on {value.device}, expected {env.device}.")
    finally:
        env.close()


def check_close(make_env: EnvFactory) -> None:
    """``close()`` can be called twice."""
    env = make_env()
    env.close()
    env.close()


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    return a == b


REQUIRED_CHECKS: dict[str, Callable[[EnvFactory], None]] = {
    "specs_match_rollout": check_specs_match_rollout,
    "reset": check_reset,
    "done_flags": check_done_flags,
    "step_mdp_round_trip": check_step_mdp_round_trip,
    "rollout_shapes": check_rollout_shapes,
    "device": check_device,
    "close": check_close,
}
OPTIONAL_CHECKS: dict[str, Callable[[EnvFactory], None]] = {
    "seeding": check_seeding,
    "random_rollout": check_random_rollout,
    "partial_reset": check_partial_reset,
    "step_and_reset": check_step_plan,
}


def run_env_conformance(
    make_env: EnvFactory, *, seedable: bool = True, skip: tuple[str, ...] = ()
) -> list[str]:
    """Runs every applicable check; returns the names of the checks that ran.

    Args:
        make_env: builds a fresh env each call.
        seedable: the env's randomness follows ``set_seed`` (and torch's seed).
        skip: names of checks not to run (see ``REQUIRED_CHECKS`` / ``OPTIONAL_CHECKS``).

    Raises:
        ConformanceError: the first broken rule.
    """
    probe = make_env()
    batched = bool(probe.batch_size)
    probe.close()
    ran = []
    for name, check in {**REQUIRED_CHECKS, **OPTIONAL_CHECKS}.items():
        deterministic = ("seeding", "random_rollout", "step_and_reset")
        if name in skip or (name in deterministic and not seedable):
            continue
        if name == "partial_reset" and not batched:
            continue
        if name == "partial_reset":
            check_partial_reset(make_env, deterministic_steps=seedable)
        else:
            check(make_env)
        ran.append(name)
    return ran


class EnvConformanceSuite:
    """Pytest tests for an env: subclass it as ``TestMyEnv`` and implement ``make_env``.

    Set ``seedable = False`` for an env whose randomness cannot be seeded, and
    ``deterministic_steps = False`` for one whose steps are random even given a seed and the
    actions. The partial-reset test is skipped for unbatched envs.
    """

    seedable: bool = True
    deterministic_steps: bool = True

    def make_env(self) -> EnvBase:
        raise NotImplementedError(f"{type(self).__name__} must implement make_env().")

    def test_specs_match_rollout(self) -> None:
        check_specs_match_rollout(self.make_env)

    def test_reset(self) -> None:
        check_reset(self.make_env)

    def test_done_flags(self) -> None:
        check_done_flags(self.make_env)

    def test_step_mdp_round_trip(self) -> None:
        check_step_mdp_round_trip(self.make_env)

    def test_rollout_shapes(self) -> None:
        check_rollout_shapes(self.make_env)

    def test_device(self) -> None:
        check_device(self.make_env)

    def test_close(self) -> None:
        check_close(self.make_env)

    def test_seeding(self) -> None:
        import pytest

        if not self.seedable:
            pytest.skip("the env declares seedable = False")
        check_seeding(self.make_env)

    def test_random_rollout(self) -> None:
        import pytest

        if not (self.seedable and self.deterministic_steps):
            pytest.skip("replaying actions needs a seedable env with deterministic steps")
        check_random_rollout(self.make_env)

    def test_partial_reset(self) -> None:
        import pytest

        env = self.make_env()
        batched = bool(env.batch_size)
        env.close()
        if not batched:
            pytest.skip("partial resets need a batched env")
        check_partial_reset(self.make_env, deterministic_steps=self.deterministic_steps)

    def test_step_and_reset(self) -> None:
        import pytest

        if not (self.seedable and self.deterministic_steps):
            pytest.skip("comparing twin envs needs a seedable env with deterministic steps")
        check_step_plan(self.make_env)
