"""register_gym_spec_conversion: a space type's conversion consulted by gym_space_to_spec and
GymWrapper (TorchRL's registry)."""

import numpy as np
import pytest
import torch

from rl_core import Bounded, Categorical, check_env_specs
from rl_envs.libs import GymWrapper, gym_space_to_spec, register_gym_spec_conversion

gym = pytest.importorskip("gymnasium")
spaces = gym.spaces


class Heading(spaces.Space):
    """A custom space: an angle in radians, values as float32 arrays of shape (1,)."""

    def __init__(self, seed=None):
        super().__init__(shape=(1,), dtype=np.float32, seed=seed)

    def sample(self, mask=None, probability=None):
        return self.np_random.uniform(-np.pi, np.pi, size=(1,)).astype(np.float32)

    def contains(self, x):
        return np.shape(x) == (1,)


class NarrowHeading(Heading):
    """A subclass: converted by the function registered for its base."""


calls = []


@register_gym_spec_conversion(Heading)
def _heading(space, *, dtype=None, device=None, batch_size=(), **kwargs):
    calls.append((type(space).__name__, tuple(batch_size), sorted(kwargs)))
    return Bounded(-np.pi, np.pi, shape=(*batch_size, 1), device=device, dtype=torch.float32)


class TurnEnv(gym.Env):
    """Turns the heading by the action (0: -0.5 rad, 1: +0.5 rad); reward: cos(heading)."""

    def __init__(self):
        self.observation_space = spaces.Dict({"heading": NarrowHeading()})
        self.action_space = spaces.Discrete(2)
        self.heading = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.heading = 0.0
        return {"heading": np.array([self.heading], dtype=np.float32)}, {}

    def step(self, action):
        self.heading += 0.5 if int(action) == 1 else -0.5
        obs = {"heading": np.array([self.heading], dtype=np.float32)}
        return obs, float(np.cos(self.heading)), False, False, {}


def test_a_registered_space_class_and_its_subclasses_convert_through_the_function():
    calls.clear()
    spec = gym_space_to_spec(NarrowHeading(), batch_size=(3,))
    assert spec == Bounded(-np.pi, np.pi, shape=(3, 1), dtype=torch.float32)
    assert calls == [
        (
            "NarrowHeading",
            (3,),
            ["categorical_action_encoding", "remap_state_to_observation"],
        )
    ]


def test_gym_wrapper_uses_it_inside_a_dict_space():
    env = GymWrapper(TurnEnv(), categorical_action_encoding=True)
    assert env.observation_spec["heading"] == Bounded(-np.pi, np.pi, shape=(1,))
    check_env_specs(env)
    traj = env.rollout(3, lambda td: td.set("action", torch.tensor(1)))
    assert traj["next", "heading"][:, 0].tolist() == pytest.approx([0.5, 1.0, 1.5])
    assert traj["next", "reward"][:, 0].tolist() == pytest.approx(
        [np.cos(0.5), np.cos(1.0), np.cos(1.5)], rel=1e-6
    )


def test_a_dotted_name_overrides_a_built_in_conversion():
    class Counter(spaces.Discrete):
        pass

    before = gym_space_to_spec(Counter(4))
    assert before.shape == (4,)  # the built-in: OneHot

    @register_gym_spec_conversion("Discrete")
    def _discrete_as_index(space, *, device=None, batch_size=(), **kwargs):
        return Categorical(int(space.n), shape=batch_size, device=device)

    try:
        assert gym_space_to_spec(Counter(4)) == Categorical(4, shape=())
        assert gym_space_to_spec(spaces.Box(-1, 1, shape=(2,))).shape == (2,)
    finally:
        from rl_envs.libs import _gym_specs

        _gym_specs._REGISTRY.pop("Discrete")
    assert gym_space_to_spec(Counter(4)).shape == (4,)


def test_errors():
    with pytest.raises(TypeError, match="expected a gymnasium space class or its dotted name"):
        register_gym_spec_conversion(3)
    with pytest.raises(
        TypeError, match=r"register_gym_spec_conversion\('Box'\): expected a function"
    ):
        register_gym_spec_conversion("Box")(None)
