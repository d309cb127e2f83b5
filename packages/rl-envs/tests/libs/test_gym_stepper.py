import numpy as np
import pytest
import torch

from rl_core.specs import Unbounded
from rl_envs._accel.seam import numpy_stepper
from rl_envs.libs import GymEnv, default_info_dict_reader

gym = pytest.importorskip("gymnasium")


def test_vector_stepper_writes_rows_and_resets_only_finished_sub_envs():
    env = GymEnv("CartPole-v1", num_envs=3)
    env.set_seed(0)
    stepper = numpy_stepper(env)
    steps = 60
    obs = np.zeros((steps + 1, 3, 4), np.float32)
    obs[0] = env.reset()["observation"].numpy()
    reward = np.zeros((steps, 3), np.float32)
    flags = np.zeros((3, steps, 3), np.bool_)
    blocks = (obs[1:], reward, flags[0], flags[1], flags[2])
    action = env.action_spec.encode(np.array([1, 1, 1]))
    finished = 0
    for t in range(steps):
        done = stepper.step_at(action, blocks, t)
        expected = flags[1, t] | flags[2, t]
        assert flags[0, t].tolist() == expected.tolist()
        if done is None:
            assert not expected.any()
        else:
            assert done.tolist() == expected.tolist()
            finished += 1
            before = obs[t + 1].copy()
            stepper.reset_finished_at(done, obs, t + 1)
            assert np.array_equal(obs[t + 1][~done], before[~done])  # others untouched
            assert (np.abs(obs[t + 1][done]) <= 0.05).all()  # CartPole's reset state
    assert finished > 0
    assert (reward == 1.0).all()


def test_single_stepper_checks_actions_and_resets_whole():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    env.reset()
    stepper = numpy_stepper(env)
    obs = np.zeros((1, 4), np.float32)
    rows = (obs, np.zeros(1, np.float32), None, np.zeros(1, np.bool_), np.zeros(1, np.bool_))
    with pytest.raises(ValueError, match=r"GymEnv\(CartPole-v1\)\.step: bad action"):
        stepper.step_at(torch.tensor([1, 1]), rows, 0)
    assert stepper.step_at(torch.tensor([0, 1]), rows, 0) is None  # not finished
    stepper.reset_finished_at(True, obs, 0)
    assert (np.abs(obs[0]) <= 0.05).all()


def test_stepper_is_handed_out_only_where_the_numpy_paths_apply():
    class Shaped(GymEnv):
        def _reset(self, tensordict=None, **kwargs):
            return super()._reset(tensordict, **kwargs)

    assert numpy_stepper(Shaped("CartPole-v1")) is None
    assert numpy_stepper(GymEnv("CartPole-v1", from_pixels=True)) is None
    env = GymEnv("CartPole-v1")
    stepper = numpy_stepper(env)
    assert stepper is not None
    assert not stepper.retired
    env.set_info_dict_reader(
        default_info_dict_reader(["steps"], spec=[Unbounded(shape=(), dtype=torch.int64)])
    )
    assert stepper.retired
    assert numpy_stepper(env) is None


def _generic_step_and_maybe_reset(env, td):
    # rl-core's path without the fused hook: step, step_mdp, reset of the finished sub-envs.
    td = env.step(td)
    next_root = env.step_mdp_plan()(td)
    if env.mark_finished(next_root):
        next_root = env.reset(next_root)
    return td, next_root


@pytest.mark.parametrize("num_envs", [0, 3])
@pytest.mark.parametrize("carried", [False, True])
def test_fused_step_and_reset_matches_step_then_reset(num_envs, carried):
    # Oracle: GymWrapper's _step_and_reset/_merge_reset_rows against step then reset, on
    # twin envs seeded alike, over many episodes (random actions, carried policy entries).
    envs = [GymEnv("CartPole-v1", num_envs=num_envs) for _ in range(2)]
    for env in envs:
        env.set_seed(3)
    fused_root, generic_root = envs[0].reset(), envs[1].reset()
    resets = 0
    for t in range(200):
        action = envs[0].rand_action(fused_root.clone())["action"]
        for root in (fused_root, generic_root):
            root.set("action", action.clone())
            if carried:
                root.set("hidden", torch.full((*envs[0].batch_size, 2), float(t)))
        fused_td, fused_root = envs[0].step_and_maybe_reset(fused_root)
        generic_td, generic_root = _generic_step_and_maybe_reset(envs[1], generic_root)
        assert (fused_td == generic_td).all()
        assert sorted(fused_root.keys()) == sorted(generic_root.keys())
        for key in generic_root.keys():
            assert fused_root[key].dtype == generic_root[key].dtype
            assert torch.equal(fused_root[key], generic_root[key]), (t, key)
        resets += int(fused_td["next", "done"].any())
    assert resets > 2


def test_fused_step_and_reset_steps_aside_for_overrides_and_spec_checks():
    from rl_core import set_spec_checks

    class Shaped(GymEnv):
        def _step(self, tensordict):
            out = super()._step(tensordict)
            out.set("reward", out["reward"] * 2)
            return out

    from rl_core.envs._plans import active_plan

    env = Shaped("CartPole-v1", num_envs=2)
    assert active_plan(env) is None  # an override of _step: the reference only
    plain = GymEnv("CartPole-v1", num_envs=2)
    assert active_plan(plain).step_and_reset(plain.rand_action(plain.reset())) is not None
    with set_spec_checks(True):
        assert active_plan(plain) is None
    plain.set_info_dict_reader(default_info_dict_reader())
    assert active_plan(plain).step_and_reset(plain.rand_action(plain.reset())) is None
