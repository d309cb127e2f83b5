import pytest
import torch
from tensordict import LazyStackedTensorDict

from rl_core.envs import StepPlan
from rl_core.testing import CountingEnv


def _ones_policy(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def test_rollout_stops_after_the_first_done():
    env = CountingEnv(max_count=3)
    traj = env.rollout(10, _ones_policy)
    assert traj.batch_size == (3,)
    assert traj["observation"].squeeze(-1).tolist() == [0.0, 1.0, 2.0]
    assert traj["next", "observation"].squeeze(-1).tolist() == [1.0, 2.0, 3.0]
    assert traj["next", "done"].squeeze(-1).tolist() == [False, False, True]


def test_rollout_without_break_resets_finished_episodes():
    env = CountingEnv(max_count=3)
    traj = env.rollout(7, _ones_policy, break_when_any_done=False)
    assert traj.batch_size == (7,)
    assert traj["observation"].squeeze(-1).tolist() == [0, 1, 2, 0, 1, 2, 0]
    assert traj["next", "terminated"].squeeze(-1).tolist() == [0, 0, 1, 0, 0, 1, 0]
    # No reward or observation of a reset leaks into "next".
    assert traj["next", "observation"].squeeze(-1).tolist() == [1, 2, 3, 1, 2, 3, 1]


class _ResetLogEnv(CountingEnv):
    """A CountingEnv recording, per ``_reset`` call, which sub-envs it resets."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.resets: list[list[bool]] = []

    def _reset(self, tensordict, **kwargs):
        mask = None if tensordict is None else tensordict.get("_reset", None)
        rows = [True] * self.batch_size[0] if mask is None else mask.reshape(-1).tolist()
        self.resets.append(rows)
        return super()._reset(tensordict, **kwargs)


@pytest.mark.parametrize("auto_reset", [True, False])
def test_rollout_without_break_does_not_reset_after_its_last_step(auto_reset):
    # As TorchRL's rollout: the last step is a plain step, finished sub-envs stay finished,
    # so a rollout can go on from where the last one stopped; the callback sees every step.
    env = _ResetLogEnv(max_count=3, batch_size=[2])
    start = None if auto_reset else env.reset()
    env.resets.clear()
    seen = []
    traj = env.rollout(
        3,
        _ones_policy,
        callback=lambda e, td: seen.append(td["next", "observation"][:, 0].tolist()),
        auto_reset=auto_reset,
        tensordict=start,
        break_when_any_done=False,
    )
    assert traj["next", "done"][:, -1].squeeze(-1).tolist() == [True, True]
    assert env.resets == ([[True, True]] if auto_reset else [])
    assert seen == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
    # Steps before the last one still reset the finished sub-envs.
    env.resets.clear()
    traj = env.rollout(4, _ones_policy, break_when_any_done=False)
    assert env.resets == [[True, True], [True, True]]
    assert traj["observation"][0].squeeze(-1).tolist() == [0.0, 1.0, 2.0, 0.0]


def test_batched_rollout_is_batch_then_time():
    env = CountingEnv(max_count=100, batch_size=[4])
    traj = env.rollout(5, _ones_policy)
    assert traj.batch_size == (4, 5)
    assert traj["next", "observation"][0].squeeze(-1).tolist() == [1, 2, 3, 4, 5]


def test_long_rollouts_cross_several_write_chunks():
    env = CountingEnv(max_count=10_000, batch_size=[2])
    traj = env.rollout(200, _ones_policy)
    assert traj.batch_size == (2, 200)
    expected = torch.arange(1, 201, dtype=torch.float32)
    assert torch.equal(traj["next", "observation"][1].squeeze(-1), expected)
    assert torch.equal(traj["observation"][0].squeeze(-1), expected - 1)


def test_break_when_all_done_waits_for_every_sub_env():
    env = CountingEnv(max_count=3, batch_size=[2])
    calls = {"n": 0}

    def policy(td):
        # Sub-env 0 counts every step, sub-env 1 every other step.
        calls["n"] += 1
        return td.set("action", torch.tensor([[1], [calls["n"] % 2]]))

    traj = env.rollout(50, policy, break_when_any_done=False, break_when_all_done=True)
    done = traj["next", "done"].squeeze(-1)
    assert traj.batch_size == (2, 5)  # sub-env 1 reaches 3 at its 5th step
    assert done[0].tolist() == [False, False, True, False, False]
    assert done[1].tolist() == [False, False, False, False, True]


def test_set_truncated_marks_the_last_step_only():
    env = CountingEnv(max_count=100)
    traj = env.rollout(4, _ones_policy, set_truncated=True)
    assert traj["next", "truncated"].squeeze(-1).tolist() == [False, False, False, True]
    assert traj["next", "done"].squeeze(-1).tolist() == [False, False, False, True]
    assert not traj["next", "terminated"].any()


def test_policy_outputs_are_recorded():
    env = CountingEnv(max_count=100)

    def policy(td):
        return _ones_policy(td).set("action_log_prob", torch.full((1,), -0.5))

    traj = env.rollout(3, policy)
    assert traj["action_log_prob"].shape == (3, 1)
    assert (traj["action_log_prob"] == -0.5).all()


@pytest.mark.parametrize("break_when_any_done", [True, False])
def test_an_out_of_place_policy_gives_what_an_in_place_one_gives(break_when_any_done):
    # TorchRL updates the input with the policy's output, so a policy may return a new
    # TensorDict holding only the action
    def in_place(td):
        return td.set("action", torch.ones(1, dtype=torch.int64))

    def out_of_place(td):
        return td.empty().set("action", torch.ones(1, dtype=torch.int64))

    kwargs = {"break_when_any_done": break_when_any_done}
    a = CountingEnv(max_count=4).rollout(6, in_place, **kwargs)
    b = CountingEnv(max_count=4).rollout(6, out_of_place, **kwargs)
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    assert (a == b).all()
    assert b["next", "observation"].flatten().tolist()[:4] == [1, 2, 3, 4]


def test_heterogeneous_steps_lose_no_data():
    env = CountingEnv(max_count=1000)
    calls = {"n": 0}

    def policy(td):
        calls["n"] += 1
        if calls["n"] == 70:
            td.set("extra", torch.ones(2))
        return _ones_policy(td)

    traj = env.rollout(100, policy)
    assert traj.batch_size == (100,)
    assert isinstance(traj, LazyStackedTensorDict)
    assert (traj[69]["extra"] == 1).all()
    assert traj[99]["next", "observation"].item() == 100.0
    assert torch.equal(traj.get(("next", "observation")).squeeze(-1), torch.arange(1.0, 101.0))


def test_batched_rollout_writes_small_and_large_leaves_in_order():
    # Small leaves go through time-major blocks, a large one straight into the buffer; both
    # must hold every step, batch first then time, also after a switch to the lazy stack.
    env = CountingEnv(max_count=10_000, batch_size=[3])
    calls = {"n": 0}

    def policy(td):
        calls["n"] += 1
        td.set("big", torch.full((3, 5000), float(calls["n"])))
        if calls["n"] == 90:
            td.set("extra", torch.ones(3))
        return _ones_policy(td)

    for max_steps, lazy in ((80, False), (100, True)):
        calls["n"] = 0
        traj = env.rollout(max_steps, policy)
        assert traj.batch_size == (3, max_steps)
        assert isinstance(traj, LazyStackedTensorDict) is lazy
        steps = torch.arange(1.0, max_steps + 1)
        for row in range(3):
            assert torch.equal(traj.get(("next", "observation"))[row].squeeze(-1), steps)
            assert torch.equal(traj.get("big")[row, :, 0], steps)
            assert torch.equal(traj.get("big")[row, :, -1], steps)


def test_callback_sees_every_transition():
    env = CountingEnv(max_count=100)
    seen = []
    env.rollout(
        3, _ones_policy, callback=lambda e, td: seen.append(td["next", "observation"].item())
    )
    assert seen == [1.0, 2.0, 3.0]


def test_rollout_from_a_given_tensordict():
    env = CountingEnv(max_count=100)
    start = env.reset()
    start["observation"] += 10
    traj = env.rollout(2, _ones_policy, auto_reset=False, tensordict=start)
    assert traj["observation"].squeeze(-1).tolist() == [10.0, 11.0]


def test_bad_rollout_arguments():
    env = CountingEnv()
    with pytest.raises(ValueError, match=r"CountingEnv.rollout: expected max_steps >= 1, got 0"):
        env.rollout(0)
    with pytest.raises(ValueError, match=r"with auto_reset=False, pass the starting TensorDict"):
        env.rollout(3, auto_reset=False)


def test_random_policy_by_default():
    env = CountingEnv(max_count=1000, batch_size=[3])
    torch.manual_seed(0)
    traj = env.rollout(50)
    assert env.action_spec.is_in(traj["action"][:, 0])
    assert 0 < traj["action"].float().mean() < 1


class _LoopEnv(CountingEnv):
    """A CountingEnv whose random rollouts run a loop of its own (the generic one, recorded)."""

    def __init__(self, *, corrupt=False, **kwargs):
        super().__init__(**kwargs)
        self.corrupt = corrupt
        self.calls = []

    def _make_step_plan(self):
        return _LoopPlan(self)


class _LoopPlan(StepPlan):
    """``_LoopEnv``'s plan: the generic loop with an explicit random policy, recorded."""

    def random_rollout(self, start, max_steps, *, break_when_any_done, break_when_all_done):
        env = self.env
        env.calls.append((max_steps, break_when_any_done, break_when_all_done))
        from rl_core.envs._rollout import rollout

        # The generic loop with an explicit random policy, so this route is not re-entered.
        out = rollout(
            env,
            max_steps,
            env.rand_action,
            auto_reset=False,
            tensordict=start,
            break_when_any_done=break_when_any_done,
            break_when_all_done=break_when_all_done,
        )
        if env.corrupt:
            out["next", "reward"] += 1
        return out


def test_rollout_without_policy_uses_the_env_loop():
    env = _LoopEnv(max_count=100)
    traj = env.rollout(7, break_when_any_done=False, set_truncated=True)
    assert env.calls == [(7, False, False)]
    assert traj.batch_size == (7,)
    # set_truncated still applies to what the hook returned.
    assert bool(traj["next", "truncated"][-1])
    assert bool(traj["next", "done"][-1])


def test_policy_callback_or_spec_checks_bypass_the_env_loop():
    from rl_core.envs import set_spec_checks

    env = _LoopEnv(max_count=3)
    env.rollout(4, env.rand_action)
    env.rollout(4, callback=lambda env, td: None)
    with set_spec_checks(True):
        env.rollout(4)
    assert env.calls == []


def test_check_random_rollout_catches_a_loop_that_differs():
    from rl_core.testing import ConformanceError, check_random_rollout

    check_random_rollout(lambda: _LoopEnv(max_count=3, batch_size=[2]))
    with pytest.raises(ConformanceError, match=r"\('next', 'reward'\) differs"):
        check_random_rollout(lambda: _LoopEnv(max_count=3, corrupt=True))
