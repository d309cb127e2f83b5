import pytest

from rl_envs.libs import GymEnv
from rl_envs.libs._gym_make import check_frame_skip, frame_skip_wrapper

gym = pytest.importorskip("gymnasium")


def test_frame_skip_wrapper_sums_rewards_and_stops_at_the_end_of_an_episode():
    env = frame_skip_wrapper(gym.make("CartPole-v1", max_episode_steps=5), 4)
    env.reset(seed=0)
    _, reward, terminated, truncated, _ = env.step(0)
    assert (reward, terminated, truncated) == (4.0, False, False)
    _, reward, terminated, truncated, _ = env.step(0)
    assert (reward, truncated) == (1.0, True)


def test_check_frame_skip():
    assert check_frame_skip(None, "X") == 1
    assert check_frame_skip(3, "X") == 3
    with pytest.raises(ValueError, match="X: expected frame_skip to be None or an int >= 1"):
        check_frame_skip(True, "X")


def test_frame_skip_reaches_async_sub_envs():
    env = GymEnv("CartPole-v1", num_envs=2, vectorization_mode="async", frame_skip=2)
    try:
        env.set_seed(0)
        assert env.rollout(2)["next", "reward"].eq(2.0).all()
    finally:
        env.close()


def test_num_workers_is_refused_with_the_parallel_env_to_write():
    # TorchRL 0.14's GymEnv(..., num_workers=n) returns a ParallelEnv; here a constructor
    # returns its own type, and the error says what to write instead.
    with pytest.raises(TypeError, match=r"GymEnv: num_workers=2 is not taken.*ParallelEnv\(n"):
        GymEnv("CartPole-v1", num_workers=2)
