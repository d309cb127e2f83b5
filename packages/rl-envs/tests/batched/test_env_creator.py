import pickle
import sys

import pytest

from rl_core.testing import CountingEnv
from rl_envs.batched import EnvCreator, EnvMetadata
from rl_envs.native import CartPoleEnv

built = []


def counted(**kwargs):
    built.append(kwargs)
    return CountingEnv(**kwargs)


def test_call_builds_an_env_with_the_kwargs():
    creator = EnvCreator(CountingEnv, {"max_count": 3})
    env = creator()
    assert env.max_count == 3
    assert creator(max_count=9).max_count == 9


def test_lambdas_survive_pickling():
    offset = 4
    creator = EnvCreator(lambda: CountingEnv(max_count=offset + 1))
    clone = pickle.loads(pickle.dumps(creator))
    assert clone().max_count == 5
    assert clone.create_env_kwargs == {}


def test_meta_data_is_read_once_and_travels_with_the_creator():
    built.clear()
    creator = EnvCreator(counted, {"max_count": 2})
    first = creator.meta_data
    assert creator.meta_data is first
    assert built == [{"max_count": 2}]
    assert first == EnvMetadata.from_env(CountingEnv())
    assert pickle.loads(pickle.dumps(creator)).meta_data == first
    assert len(built) == 1


def test_meta_data_describes_the_env():
    meta = EnvCreator(CartPoleEnv, {"batch_size": [3]}).meta_data
    assert meta.batch_size == (3,)
    assert meta.env_type == "CartPoleEnv"
    assert meta.output_spec["full_observation_spec"]["observation"].shape == (3, 4)
    assert meta.difference(EnvCreator(CartPoleEnv, {"batch_size": [2]}).meta_data) == (
        "batch_size (2,) instead of (3,)"
    )


def test_rejects_what_is_not_an_env_factory():
    with pytest.raises(
        TypeError, match="EnvCreator: expected a callable returning an env, got int"
    ):
        EnvCreator(3)
    with pytest.raises(TypeError, match="create_env_fn returned a dict, expected an EnvBase"):
        EnvCreator(dict)()


def test_without_cloudpickle_lambdas_get_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    assert pickle.loads(pickle.dumps(EnvCreator(CountingEnv)))().max_count == 5
    creator = EnvCreator(lambda: CountingEnv())
    with pytest.raises(TypeError, match="pip install cloudpickle to send lambdas"):
        pickle.dumps(creator)


def test_repr():
    assert repr(EnvCreator(CountingEnv, {"max_count": 2})) == (
        "EnvCreator(CountingEnv, create_env_kwargs={'max_count': 2})"
    )
