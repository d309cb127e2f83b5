"""set_gym_backend / gym_backend: TorchRL's gym backend switch, on the installed libraries."""

import sys
import types

import pytest

from rl_envs import gym_backend, set_gym_backend

gymnasium = pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')


def test_gymnasium_is_the_default_and_submodules_come_from_the_backend():
    assert gym_backend() is gymnasium
    assert gym_backend("spaces") is gymnasium.spaces
    assert gym_backend(".wrappers") is sys.modules["gymnasium.wrappers"]


def test_context_manager_decorator_and_set_restore_as_documented():
    gym = pytest.importorskip("gym", reason="the old gym library is not installed")
    with set_gym_backend("gym"):
        assert gym_backend() is gym
        assert gym_backend("spaces") is gym.spaces
        with set_gym_backend(lambda: gymnasium):  # nested: a callable returning the module
            assert gym_backend() is gymnasium
        assert gym_backend() is gym
    assert gym_backend() is gymnasium

    @set_gym_backend(gym)
    def inside():
        return gym_backend()

    assert inside() is gym
    assert gym_backend() is gymnasium
    try:
        set_gym_backend("gym").set()  # for the rest of the process, as TorchRL's .set()
        assert gym_backend() is gym
    finally:
        set_gym_backend("gymnasium").set()
    assert gym_backend() is gymnasium


def test_bad_backends_are_named():
    with pytest.raises(ImportError, match="set_gym_backend: the backend 'no_such_gym' is not"):
        set_gym_backend("no_such_gym").__enter__()
    with pytest.raises(ValueError, match="expected the gymnasium or gym module, got 'types'"):
        set_gym_backend(types).set()
    with pytest.raises(TypeError, match="expected the backend callable to return a module"):
        set_gym_backend(lambda: 3).set()
    with pytest.raises(TypeError, match="expected backend as a module, a module name"):
        set_gym_backend(3).set()
    assert gym_backend() is gymnasium
