"""Transforms composed as training scripts use them, on batched envs."""

import pytest
import torch

from rl_core import Compose, StepCounter, Transform, TransformedEnv, check_env_specs
from rl_core.envs._plans import active_plan
from rl_envs import GymEnv, GymWrapper, ParallelEnv
from rl_envs.transforms import (
    CatFrames,
    GrayScale,
    NoopResetEnv,
    Resize,
    RewardClipping,
    RewardSum,
    ToTensorImage,
)

OBS = ["observation"]


def _atari_pipeline(*, noops: bool) -> Compose:
    transforms = [NoopResetEnv(3)] if noops else []
    transforms += [
        ToTensorImage(in_keys=OBS),
        GrayScale(in_keys=OBS),
        Resize(84, 84, in_keys=OBS),
        CatFrames(4, -3, in_keys=OBS),
        RewardClipping(-1.0, 1.0),
        StepCounter(max_steps=8),
        RewardSum(),
    ]
    return Compose(*transforms)


def _make_pong():
    return TransformedEnv(
        GymEnv("ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0),
        _atari_pipeline(noops=True),
    )


def test_atari_pipeline_in_parallel_env_workers(pong):
    env = ParallelEnv(2, _make_pong)
    try:
        env.set_seed(0)
        check_env_specs(env)
        assert env.observation_spec["observation"].shape == (2, 4, 84, 84)
        traj = env.rollout(10, break_when_any_done=False)
        assert traj["next", "step_count"][:, -1].squeeze(-1).tolist() == [2, 2]
        first = traj["observation"][:, 0]
        assert torch.equal(first, first[:, :1].expand_as(first))  # 4 copies at the start
    finally:
        env.close()


@pytest.mark.slow
def test_atari_pipeline_on_the_parent_of_a_parallel_env(pong):
    base = ParallelEnv(2, lambda: GymEnv("ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0))
    env = TransformedEnv(base, _atari_pipeline(noops=False))
    try:
        env.set_seed(0)
        check_env_specs(env)
        traj = env.rollout(10, break_when_any_done=False)  # StepCounter resets at 8 (partial)
        assert traj["observation"].shape == (2, 10, 4, 84, 84)
        restart = traj["observation"][:, 8]
        assert torch.equal(restart, restart[:, :1].expand_as(restart))
    finally:
        env.close()


def test_generic_transforms_on_a_pixel_env(pong):
    from rl_core import Unbounded
    from rl_envs.transforms import (
        CatTensors,
        ClipTransform,
        DTypeCastTransform,
        FlattenObservation,
        FrameSkipTransform,
        RewardScaling,
        SignTransform,
        TensorDictPrimer,
        TrajCounter,
        VecNorm,
    )

    env = TransformedEnv(
        pong,
        Compose(
            FrameSkipTransform(2),
            DTypeCastTransform(torch.float32, torch.float64, in_keys=["reward"]),
            ToTensorImage(in_keys=OBS),
            Resize(21, 21, in_keys=OBS),
            VecNorm(in_keys=OBS),
            ClipTransform(OBS, low=-3.0, high=3.0),
            FlattenObservation(-3, -1, in_keys=OBS),
            CatTensors(OBS, "vector"),
            RewardScaling(0.0, 0.5),
            SignTransform(["reward"]),
            TensorDictPrimer(hidden=Unbounded(shape=(4,))),
            TrajCounter(),
        ),
    )
    check_env_specs(env)
    traj = env.rollout(4)
    assert traj["vector"].shape == (4, 3 * 21 * 21)
    assert traj["next", "reward"].dtype == torch.float64
    assert traj["vector"].abs().max() <= 3.0


def _fuses(env):
    """Whether ``env``'s step plan steps and resets its base env in one call."""
    plan = active_plan(env)
    return plan is not None and plan.fuses


def _random_rollout(env, start, max_steps, **stop):
    """``env``'s step plan's random rollout, or ``None`` where it has no plan."""
    plan = active_plan(env)
    return None if plan is None else plan.random_rollout(start, max_steps, **stop)


class _Unfusable(Transform):
    """Changes nothing but is not ``fusable``: the env then steps, then resets (generic)."""


def _cartpole_pipeline(num_envs, *extra):
    from rl_core.transforms import InitTracker
    from rl_envs.transforms import ObservationNorm

    base = GymEnv("CartPole-v1", num_envs=num_envs) if num_envs else GymEnv("CartPole-v1")
    norm = ObservationNorm(loc=torch.ones(4), scale=torch.full((4,), 2.0), standard_normal=True)
    env = TransformedEnv(base, Compose(norm, RewardSum(), StepCounter(), InitTracker(), *extra))
    env.set_seed(0)
    return env


def _reward_and_observation_maps():
    """The output maps of rl-envs that are ``fusable`` (none writes a done flag)."""
    from rl_envs.transforms import ClipTransform, RewardClipping, RewardScaling, SignTransform

    return [
        RewardScaling(0.5, 2.0),
        RewardClipping(-2.0, 2.0),
        ClipTransform(["observation"], low=-1.0, high=1.0),
        SignTransform(["episode_reward"], ["reward_sign"]),
    ]


@pytest.mark.parametrize("maps", [False, True], ids=["core", "with-rl-envs-maps"])
@pytest.mark.parametrize("num_envs", [0, 3])
def test_fused_step_and_reset_matches_step_then_reset(num_envs, maps):
    """Oracle: the base env's fused step-and-reset under fusable transforms gives what the
    generic path (step, then reset through the transforms) gives."""
    extra = _reward_and_observation_maps() if maps else []
    fused = _cartpole_pipeline(num_envs, *extra)
    extra = _reward_and_observation_maps() if maps else []
    generic = _cartpole_pipeline(num_envs, *extra, _Unfusable())
    assert _fuses(fused)
    assert not _fuses(generic)
    trajs = []
    for env in (fused, generic):
        torch.manual_seed(1)
        trajs.append(env.rollout(60, break_when_any_done=False, policy=env.rand_action))
    ours, ref = trajs
    assert ref["next", "done"].any()  # episodes ended (and were reset) on the way
    assert set(ours.keys(True, True)) == set(ref.keys(True, True))
    for key in ref.keys(True, True):
        torch.testing.assert_close(ours.get(key), ref.get(key), msg=str(key))


def test_fused_step_and_reset_through_nested_transformed_envs():
    from rl_envs.transforms import ObservationNorm

    def make(*extra):
        norm = ObservationNorm(loc=torch.ones(4), scale=torch.full((4,), 2.0))
        inner = TransformedEnv(GymEnv("CartPole-v1", num_envs=3), norm)
        env = TransformedEnv(inner, Compose(RewardSum(), StepCounter(), *extra))
        env.set_seed(0)
        return env

    fused, generic = make(), make(_Unfusable())
    assert _fuses(fused)
    trajs = []
    for env in (fused, generic):
        torch.manual_seed(2)
        trajs.append(env.rollout(50, break_when_any_done=False, policy=env.rand_action))
    ours, ref = trajs
    assert ref["next", "done"].any()
    for key in ref.keys(True, True):
        torch.testing.assert_close(ours.get(key), ref.get(key), msg=str(key))


def test_truncating_step_counter_is_not_fused():
    env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter(max_steps=5))
    assert not _fuses(env)
    traj = env.rollout(12, break_when_any_done=False)
    assert traj["next", "step_count"].max().item() <= 5


class _RewardSumThatEndsEpisodes(RewardSum):
    """Overrides ``_step`` (it sets the done flags), so RewardSum's ``fusable`` must not
    carry over to it."""

    def _step(self, tensordict, next_tensordict):
        next_tensordict = super()._step(tensordict, next_tensordict)
        next_tensordict.set("done", torch.ones_like(next_tensordict.get("done")))
        return next_tensordict


class _DeclaredFusableRewardSum(_RewardSumThatEndsEpisodes):
    fusable = True  # declared by the subclass itself: honoured


def test_a_subclass_overriding_step_is_not_fused_unless_it_says_so():
    plain = TransformedEnv(GymEnv("CartPole-v1", num_envs=2), RewardSum())
    overriding = TransformedEnv(GymEnv("CartPole-v1", num_envs=2), _RewardSumThatEndsEpisodes())
    in_compose = TransformedEnv(
        GymEnv("CartPole-v1", num_envs=2), Compose(StepCounter(), _RewardSumThatEndsEpisodes())
    )
    declared = TransformedEnv(GymEnv("CartPole-v1", num_envs=2), _DeclaredFusableRewardSum())
    assert _fuses(plain)
    assert not _fuses(overriding)
    assert not _fuses(in_compose)
    assert _fuses(declared)


@pytest.mark.parametrize("maps", [False, True], ids=["core", "with-rl-envs-maps"])
@pytest.mark.parametrize("num_envs", [0, 3], ids=["single", "vector-partial-resets"])
def test_rollout_without_policy_replays_the_transforms_on_the_base_loop(num_envs, maps):
    """Oracle: without a policy, the base env's gymnasium loop runs and the transforms are
    replayed on its trajectory; the result equals the generic loop fed the same actions
    (check_random_rollout, with and without break_when_any_done), and the fast path is the
    one taken."""
    from rl_core.testing import check_random_rollout

    def make():
        return _cartpole_pipeline(num_envs, *(_reward_and_observation_maps() if maps else []))

    env = make()
    start = env.reset()
    assert (
        _random_rollout(env, start, 30, break_when_any_done=False, break_when_all_done=False)
        is not None
    )
    check_random_rollout(make, steps=120)
    traj = make().rollout(120, break_when_any_done=False)
    assert traj["next", "done"].any()  # episodes ended and were reset on the way
    assert traj["next", "step_count"].min() == 1


class _GymReadingTheRoot(GymWrapper):
    """A subclass whose step reads more than the action: the replay must not apply."""

    def _step(self, tensordict):
        return super()._step(tensordict)


def test_rollout_without_policy_keeps_the_generic_loop_where_replay_does_not_apply():
    import gymnasium

    from rl_envs.transforms import ObservationNorm

    pendulum = GymEnv("Pendulum-v1")
    inner = TransformedEnv(GymEnv("CartPole-v1", num_envs=2), RewardSum())
    wrapped = _GymReadingTheRoot(gymnasium.make("CartPole-v1"))
    cases = [
        # the base env (a TransformedEnv) reads its transforms' entries from the root
        TransformedEnv(inner, Compose(StepCounter(), ObservationNorm(loc=1.0, scale=2.0))),
        # a GymWrapper subclass overriding _step has no step plan
        TransformedEnv(wrapped, RewardSum()),
        # truncation changes the done flags: not fusable
        TransformedEnv(GymEnv("CartPole-v1"), StepCounter(max_steps=5)),
        # an inverse path on the action
        TransformedEnv(pendulum, ObservationNorm(loc=0.0, scale=2.0, in_keys_inv=["action"])),
        # not fusable
        TransformedEnv(GymEnv("CartPole-v1"), Compose(RewardSum(), _Unfusable())),
    ]
    for env in cases:
        start = env.reset()
        assert (
            _random_rollout(env, start, 5, break_when_any_done=False, break_when_all_done=False)
            is None
        )
    # a start holding an entry the env does not output
    env = TransformedEnv(GymEnv("CartPole-v1"), ObservationNorm(loc=0.0, scale=1.0))
    start = env.reset().set("extra", torch.zeros(1))
    assert (
        _random_rollout(env, start, 5, break_when_any_done=False, break_when_all_done=False) is None
    )
    traj = env.rollout(5, auto_reset=False, tensordict=start, break_when_any_done=False)
    assert traj["extra"].shape == (5, 1)


def test_rollout_without_policy_replay_stops_when_all_sub_envs_are_done():
    """break_when_all_done: the replayed trajectory ends where the generic loop fed the same
    actions ends, with the same entries."""
    env = _cartpole_pipeline(3)
    fast = env.rollout(200, break_when_any_done=False, break_when_all_done=True)
    actions = fast["action"].unbind(1)
    taken = iter(actions)
    env = _cartpole_pipeline(3)
    slow = env.rollout(
        200,
        lambda td: td.set("action", next(taken)),
        break_when_any_done=False,
        break_when_all_done=True,
    )
    assert fast.batch_size == slow.batch_size
    assert fast.batch_size[1] < 200
    for key in slow.keys(True, True):
        assert torch.equal(fast.get(key), slow.get(key)), key


class _ResetCountingEnv(TransformedEnv):
    """Overrides ``_reset``: resets must go through it (the step plan does not apply)."""

    resets = 0

    def _reset(self, tensordict, **kwargs):
        type(self).resets += 1
        return super()._reset(tensordict, **kwargs)


def test_an_overridden_reset_turns_the_plan_and_its_direct_reset_off():
    from rl_envs.transforms import ObservationNorm

    def transforms():
        norm = ObservationNorm(loc=torch.ones(4), scale=torch.full((4,), 2.0))
        return Compose(norm, RewardSum(), StepCounter())

    direct = TransformedEnv(GymEnv("CartPole-v1"), transforms())
    overriding = _ResetCountingEnv(GymEnv("CartPole-v1"), transforms())
    assert active_plan(direct).direct
    assert active_plan(overriding) is None
    trajs = []
    for env in (direct, overriding):
        env.set_seed(0)
        torch.manual_seed(3)
        trajs.append(env.rollout(80, break_when_any_done=False, policy=env.rand_action))
    ours, ref = trajs
    episodes = int(ref["next", "done"].sum())
    assert episodes >= 2
    assert _ResetCountingEnv.resets == 1 + episodes  # the rollout's reset and every other
    for key in ref.keys(True, True):
        torch.testing.assert_close(ours.get(key), ref.get(key), msg=str(key))
