import os

import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import EnvBase, StepPlan
from rl_core.specs import Categorical, Composite, Unbounded
from rl_core.testing import ConformanceError, CountingEnv, EnvConformanceSuite, run_env_conformance
from rl_core.testing._conformance import (
    check_done_flags,
    check_partial_reset,
    check_seeding,
    check_step_and_reset,
)
from rl_core.transforms import InitTracker, StepCounter, TransformedEnv


class TestCountingEnv(EnvConformanceSuite):
    def make_env(self):
        return CountingEnv(max_count=4, start_high=3)


class TestBatchedCountingEnv(EnvConformanceSuite):
    def make_env(self):
        return CountingEnv(max_count=4, start_high=3, batch_size=[3])


class TestTransformedCountingEnv(EnvConformanceSuite):
    def make_env(self):
        return TransformedEnv(
            CountingEnv(max_count=4, batch_size=[2, 2]), StepCounter(max_steps=3)
        ).append_transform(InitTracker())


def test_run_env_conformance_lists_what_ran():
    ran = run_env_conformance(lambda: CountingEnv(batch_size=[2]))
    assert "partial_reset" in ran
    assert "seeding" in ran
    ran = run_env_conformance(lambda: CountingEnv(), seedable=False)
    assert "partial_reset" not in ran
    assert "seeding" not in ran


class _StatefulEnv(EnvBase):
    """Keeps the count inside; `share_reset` makes it reset every sub-env at once."""

    def __init__(self, *, share_reset=False, unseeded=False, lie_about_done=False):
        super().__init__(batch_size=[3])
        self.observation_spec = Composite(observation=Unbounded(shape=(3, 1)), shape=(3,))
        self.action_spec = Categorical(2, shape=(3, 1))
        self.share_reset = share_reset
        self.unseeded = unseeded
        self.lie_about_done = lie_about_done
        self.state = torch.zeros(3, 1)
        self.rng = torch.Generator().manual_seed(0)
        # An unseeded env draws from a generator that set_seed never reaches.
        self.wild = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))

    def _reset(self, td, **kwargs):
        mask = (
            td.get("_reset")
            if td is not None and not self.share_reset
            else torch.ones(3, 1, dtype=torch.bool)
        )
        noise = torch.rand(3, 1, generator=self.wild if self.unseeded else self.rng)
        self.state = torch.where(mask, noise, self.state)
        return TensorDict(observation=self.state.clone(), batch_size=[3])

    def _step(self, td):
        self.state = self.state + td["action"]
        out = TensorDict(
            observation=self.state.clone(),
            reward=torch.zeros(3, 1),
            terminated=self.state > 2,
            truncated=torch.zeros(3, 1, dtype=torch.bool),
            batch_size=[3],
        )
        if self.lie_about_done:
            out["done"] = torch.zeros(3, 1, dtype=torch.bool)
        return out

    def _set_seed(self, seed):
        self.rng.manual_seed(seed)


def test_the_stateful_env_conforms():
    run_env_conformance(_StatefulEnv)


def test_a_partial_reset_that_resets_everything_fails():
    with pytest.raises(
        ConformanceError,
        match=r"check_partial_reset\(_StatefulEnv\): after resetting sub-env 0 only, the next 'observation' of the other sub-envs differs from a twin env",
    ):
        check_partial_reset(lambda: _StatefulEnv(share_reset=True))


def test_an_unseeded_env_fails_seeding():
    with pytest.raises(
        ConformanceError, match=r"check_seeding: two rollouts seeded with 7 differ at"
    ):
        check_seeding(lambda: _StatefulEnv(unseeded=True))


def test_inconsistent_done_flags_fail():
    with pytest.raises(
        ConformanceError,
        match=r"check_done_flags\(_StatefulEnv\): 'done' differs from 'terminated \| truncated' under the root",
    ):
        check_done_flags(lambda: _StatefulEnv(lie_about_done=True))


class _FusedPlan(StepPlan):
    """A fused step-and-reset; the env's ``keep_flags`` breaks it (reset rows keep their
    done)."""

    def step_and_reset(self, tensordict):
        env = self.env
        next_td = env._step(tensordict)
        done = next_td["done"].clone()
        if not bool(done.any()):
            return next_td, None
        return next_td, (done, env._reset(TensorDict({"_reset": done}, env.batch_size)))

    def merge_reset_rows(self, next_root, pending):
        done, fresh = pending
        next_root["observation"] = torch.where(done, fresh["observation"], next_root["observation"])
        if not self.env.keep_flags:
            for key in ("done", "terminated", "truncated"):
                next_root[key] = next_root[key] & ~done
        return next_root


class _FusedCountingEnv(CountingEnv):
    """A CountingEnv with a fused step-and-reset plan."""

    keep_flags = False

    def _make_step_plan(self):
        return _FusedPlan(self)


class _BrokenFusedCountingEnv(_FusedCountingEnv):
    keep_flags = True


def test_step_and_reset_check_compares_the_hook_with_step_then_reset():
    check_step_and_reset(lambda: _FusedCountingEnv(max_count=3, start_high=2, batch_size=[3]))
    assert "step_and_reset" in run_env_conformance(
        lambda: _FusedCountingEnv(max_count=3, batch_size=[2])
    )
    with pytest.raises(
        ConformanceError,
        match=r"check_step_plan\(_BrokenFusedCountingEnv\): step_and_maybe_reset, step \d+: 'done' of the next root differs",
    ):
        check_step_and_reset(lambda: _BrokenFusedCountingEnv(max_count=3, batch_size=[3]))
