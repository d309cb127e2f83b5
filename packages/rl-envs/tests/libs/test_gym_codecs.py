"""Actions encoded for gymnasium and observations decoded from it, through an env that echoes
the action as its observation: both directions must agree, space by space."""

import numpy as np
import pytest
import torch

from rl_core.envs import check_env_specs
from rl_envs.libs import GymWrapper

gym = pytest.importorskip("gymnasium")
spaces = gym.spaces

SPACES = {
    "box": spaces.Box(-1.0, 1.0, (3,)),
    "int-box": spaces.Box(0, 10, (2,), dtype=np.int64),
    "discrete-start": spaces.Discrete(5, start=2),
    "multi-discrete-start": spaces.MultiDiscrete([3, 4], start=[1, -1]),
    "multi-discrete-2d": spaces.MultiDiscrete(np.full((2, 2), 3)),
    "multi-binary": spaces.MultiBinary(4),
    "dict": spaces.Dict(
        {"a": spaces.Box(-1.0, 1.0, (2,)), "b": spaces.Dict({"c": spaces.Discrete(3)})}
    ),
    "tuple": spaces.Tuple((spaces.Box(-1.0, 1.0, (2,)), spaces.Box(-1.0, 1.0, (2,)))),
}


def _actions(env):
    keys = env.action_keys
    return env.full_action_spec.rand(), keys


def _check_echo(env, steps=3):
    """Each step's next observations equal the actions taken (same keys for Dict spaces)."""
    td = env.reset()
    for _ in range(steps):
        actions = env.full_action_spec.rand()
        td = env.step(td.update(actions))
        for key in env.action_keys:
            observed_key = "observation" if key == "action" else key
            assert torch.equal(td["next", observed_key], actions[key]), key
        td = td["next"].exclude("reward")


@pytest.mark.parametrize("name", list(SPACES))
@pytest.mark.parametrize("categorical", [False, True], ids=["one-hot", "categorical"])
def test_single_env_echo_round_trip(echo_env, name, categorical):
    env = GymWrapper(echo_env(SPACES[name]), categorical_action_encoding=categorical)
    check_env_specs(env, seed=0)
    _check_echo(env)


@pytest.mark.parametrize("name", ["box", "discrete-start", "multi-discrete-start", "dict"])
@pytest.mark.parametrize("categorical", [False, True], ids=["one-hot", "categorical"])
def test_vector_env_echo_round_trip(echo_env, name, categorical):
    space = SPACES[name]
    vector = gym.vector.SyncVectorEnv([lambda: echo_env(space)] * 3, autoreset_mode="Disabled")
    env = GymWrapper(vector, categorical_action_encoding=categorical)
    assert env.batch_size == (3,)
    check_env_specs(env, seed=0)
    _check_echo(env)


def test_tuple_of_discretes_round_trips_as_stacked_indices(echo_env):
    space = spaces.Tuple((spaces.Discrete(4), spaces.Discrete(2, start=5)))
    env = GymWrapper(echo_env(space), categorical_action_encoding=True)
    check_env_specs(env, seed=0)
    _check_echo(env)


def test_discrete_actions_reach_gymnasium_as_numpy_scalars_of_the_space(echo_env):
    env = GymWrapper(echo_env(spaces.Discrete(5, start=2)))
    raw = env.env.unwrapped
    td = env.reset()
    td["action"] = torch.tensor([False, False, False, True, False])
    out = env.step(td)
    assert raw.steps == 1
    assert out["next", "observation"].tolist() == [False, False, False, True, False]
    encoded = env._stepper.encode(td["action"])
    assert type(encoded) is np.int64
    assert encoded == 5


def test_text_observations_become_non_tensor_data(echo_env):
    space = spaces.Text(max_length=6, charset="abc")
    env = GymWrapper(echo_env(space))
    td = env.reset()
    assert isinstance(td["observation"], str)
    assert set(td["observation"]) <= set("abc")
    vector = GymWrapper(gym.vector.SyncVectorEnv([lambda: echo_env(space)] * 2))
    texts = vector.reset().get("observation")
    assert texts.batch_size == (2,)
    assert all(set(text) <= set("abc") for text in texts.tolist())


def test_observations_do_not_share_memory_with_the_env(echo_env):
    """The env may reuse its arrays: observations are copied out of them."""
    env = GymWrapper(echo_env(spaces.Box(0, 10, (2,), dtype=np.int64)))
    td = env.reset()
    td["action"] = torch.tensor([1, 2])
    first = env.step(td)["next", "observation"].clone()
    td["action"] = torch.tensor([3, 4])
    env.step(td)
    assert torch.equal(first, torch.tensor([1, 2]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float32])
def test_small_one_hot_actions_remembered_give_the_same_results(monkeypatch, dtype):
    # Oracle: encodings of small one-hot actions seen before (a lookup) against the check and
    # argmax of every call.
    from rl_core.specs import OneHot
    from rl_envs.libs import _gym_codecs

    space, batch = gym.spaces.Discrete(3, start=1), (4,)
    spec = OneHot(3, shape=(*batch, 3), dtype=dtype)
    encoders = []
    for small in (64, 0):  # remembered, then not
        monkeypatch.setattr(_gym_codecs, "_SMALL_ONE_HOT", small)
        encoders.append(_gym_codecs.make_encoder(space, spec, batch, who="Env"))
    torch.manual_seed(0)
    valid = [spec.rand() for _ in range(20)] * 2  # each seen twice: the second is looked up
    invalid = [torch.tensor([[1, 0, 0], [0, 0, 0], [0, 1, 0], [0, 0, 1]]).to(dtype)]
    if dtype is not torch.bool:
        invalid += [
            torch.tensor([[1, 0, 0], [2, 0, 0], [0, 1, 0], [0, 0, 1]]).to(dtype),
            torch.tensor([[1, 0, 0], [-1, 1, 1], [0, 1, 0], [0, 0, 1]]).to(dtype),
        ]
    if dtype.is_floating_point:
        invalid += [
            torch.tensor([[1, 0, 0], [0.5, 0.5, 0], [0, 1, 0], [0, 0, 1]]),
            torch.tensor([[1, 0, 0], [float("nan"), 1, 0], [0, 1, 0], [0, 0, 1]]),
        ]
    invalid.append(torch.ones(3, 3, dtype=dtype))  # wrong shape
    for value in valid:
        small, large = (encode(value) for encode in encoders)
        assert small.dtype == large.dtype
        assert small.tolist() == large.tolist()
        small[...] = 0  # a fresh array each call: what was remembered stays as it was
    for value in invalid:
        for encode in encoders:
            with pytest.raises(ValueError, match=r"Env\.step: bad action at key 'action'"):
                encode(value)
