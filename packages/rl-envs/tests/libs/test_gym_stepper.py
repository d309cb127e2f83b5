import numpy as np
import pytest
import torch

from rl_core.specs import Unbounded
from rl_envs.libs import GymEnv, default_info_dict_reader

gym = pytest.importorskip("gymnasium")


def test_vector_stepper_writes_rows_and_resets_only_finished_sub_envs():
    env = GymEnv("CartPole-v1", num_envs=3)
    env.set_seed(0)
    stepper = env.numpy_stepper()
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
    stepper = env.numpy_stepper()
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

    assert Shaped("CartPole-v1").numpy_stepper() is None
    assert GymEnv("CartPole-v1", from_pixels=True).numpy_stepper() is None
    env = GymEnv("CartPole-v1")
    stepper = env.numpy_stepper()
    assert stepper is not None
    assert not stepper.retired
    env.set_info_dict_reader(
        default_info_dict_reader(["steps"], spec=[Unbounded(shape=(), dtype=torch.int64)])
    )
    assert stepper.retired
    assert env.numpy_stepper() is None
