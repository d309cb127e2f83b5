"""GymWrapper's observation layout: entries, readers and row blocks per kind of space."""

import numpy as np
import pytest

from rl_envs.libs._gym_observations import observation_layout

gym = pytest.importorskip("gymnasium")


def _layout(env, space, batch=(), **kwargs):
    options = {
        "vector": bool(batch),
        "categorical": False,
        "from_pixels": False,
        "pixels_only": True,
        "same_step": False,
        "who": "GymWrapper",
    }
    options.update(kwargs)
    return observation_layout(env, space, batch, **options)


def test_one_small_array_goes_into_the_step_rows():
    env = gym.make("CartPole-v1")
    layout = _layout(env, env.observation_space)
    assert list(layout.entries) == ["observation"]
    assert layout.rows.observation is not None
    assert layout.read_step is None  # the rows hold it: a step decodes nothing
    obs, _ = env.reset(seed=0)
    assert layout.read(obs)["observation"].shape == (4,)
    assert layout.decode_single is None


def test_a_dict_space_is_read_entry_by_entry():
    space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,)), "b": gym.spaces.Discrete(3)})
    layout = _layout(None, space)
    assert sorted(layout.entries) == ["a", "b"]
    assert layout.rows.observation is None
    out = layout.read_step({"a": np.zeros(2, np.float32), "b": 2})
    assert out["a"].shape == (2,)
    assert out["b"].tolist() == [0, 0, 1]


def test_pixels_only_keeps_the_frames_alone():
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    layout = _layout(env, env.observation_space, from_pixels=True)
    assert list(layout.entries) == ["pixels"]
    env.reset(seed=0)
    assert layout.read_step(None)["pixels"].shape == layout.entries["pixels"].shape


def test_same_step_vector_envs_get_single_decoders():
    env = gym.make_vec("CartPole-v1", num_envs=2)
    layout = _layout(env, env.single_observation_space, (2,), same_step=True)
    ((key, src, decode),) = layout.decode_single
    assert (key, src) == ("observation", None)
    assert decode(np.zeros(4, np.float32)).shape == (4,)
