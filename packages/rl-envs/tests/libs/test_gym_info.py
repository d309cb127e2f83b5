import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import check_env_specs
from rl_core.specs import Categorical, Composite, Unbounded
from rl_core.testing import EnvConformanceSuite
from rl_envs.libs import GymWrapper, InfoDictReader, default_info_dict_reader

gym = pytest.importorskip("gymnasium")
BOX = gym.spaces.Box(-1.0, 1.0, (2,))


def test_inferred_specs_take_every_numeric_public_entry(echo_env):
    env = GymWrapper(echo_env(BOX, horizon=4)).set_info_dict_reader()
    spec = env.observation_spec
    assert isinstance(spec["steps"], Unbounded)
    assert spec["steps"].dtype == torch.int64
    assert isinstance(spec["half"], Categorical)
    assert spec["half"].dtype == torch.bool
    assert spec["pair"].shape == (2,)
    assert "_private" not in spec.keys()
    check_env_specs(env, seed=0)
    traj = env.rollout(10)
    assert traj["next", "steps"].tolist() == [1, 2, 3, 4]
    assert traj["steps"].tolist() == [0, 1, 2, 3]
    assert traj["next", "half"].tolist() == [False, True, True, True]
    assert traj["next", "pair"][-1].tolist() == [4.0, -4.0]


def test_selected_keys_with_given_specs(echo_env):
    reader = default_info_dict_reader(["steps"], spec=[Unbounded(shape=(), dtype=torch.float64)])
    env = GymWrapper(echo_env(BOX)).set_info_dict_reader(reader)
    assert env.observation_spec["steps"].dtype == torch.float64
    assert "pair" not in env.observation_spec.keys()
    traj = env.rollout(3)
    assert traj["next", "steps"].dtype == torch.float64
    assert traj["next", "steps"].tolist() == [1.0, 2.0, 3.0]


def test_specs_as_a_mapping_or_a_composite():
    by_map = InfoDictReader(spec={"a": Unbounded(shape=(2,))})
    assert by_map.keys == ["a"]
    by_composite = InfoDictReader(["a"], Composite(a=Unbounded(shape=(2,))))
    assert by_composite.info_spec["a"].shape == (2,)


def test_a_missing_key_is_written_as_zeros():
    reader = default_info_dict_reader(["lives"], spec=[Unbounded(shape=(), dtype=torch.int64)])
    td = reader({}, TensorDict(batch_size=[3]))
    assert td["lives"].tolist() == [0, 0, 0]


def test_vector_env_info_with_batched_values(echo_env):
    vector = gym.vector.SyncVectorEnv(
        [lambda: echo_env(BOX, horizon=3)] * 2, autoreset_mode="Disabled"
    )
    env = GymWrapper(vector).set_info_dict_reader()
    assert env.observation_spec["pair"].shape == (2, 2)
    check_env_specs(env, seed=0)
    traj = env.rollout(5, break_when_any_done=False)
    assert traj["next", "steps"][0].tolist() == [1, 2, 3, 1, 2]
    assert traj["steps"][0].tolist() == [0, 1, 2, 0, 1]


def test_same_step_vector_env_reads_the_final_info_of_finished_sub_envs(echo_env):
    vector = gym.vector.SyncVectorEnv(
        [lambda: echo_env(BOX, horizon=3)] * 2, autoreset_mode="SameStep"
    )
    env = GymWrapper(vector).set_info_dict_reader(default_info_dict_reader(["steps"]))
    traj = env.rollout(5, break_when_any_done=False)
    # The final step reports the episode's own info (3 steps), the next root the reset's (0).
    assert traj["next", "steps"][0].tolist() == [1, 2, 3, 1, 2]
    assert traj["steps"][0].tolist() == [0, 1, 2, 0, 1]


def test_a_reader_entry_may_not_shadow_an_observation(echo_env):
    env = GymWrapper(echo_env(gym.spaces.Dict({"steps": BOX})))
    with pytest.raises(ValueError, match="'steps' clashes with an observation entry"):
        env.set_info_dict_reader(default_info_dict_reader(["steps"]))


def test_a_key_absent_from_the_reset_info_needs_a_spec(echo_env):
    env = GymWrapper(echo_env(BOX))
    with pytest.raises(KeyError, match=r"'lives' is not in the info dict of a reset.*spec="):
        env.set_info_dict_reader(default_info_dict_reader(["lives"]))


def test_a_non_numeric_entry_cannot_be_read():
    reader = default_info_dict_reader(["name"])
    with pytest.raises(TypeError, match="'name' holds <U3 values; only numbers"):
        reader.infer_spec({"name": "abc"})


def test_a_custom_reader_needs_specs(echo_env):
    env = GymWrapper(echo_env(BOX))
    with pytest.raises(TypeError, match="no info_spec and no infer_spec"):
        env.set_info_dict_reader(lambda info, td: td)


def test_spec_argument_errors():
    with pytest.raises(ValueError, match="expected one spec per key \\(2 keys"):
        InfoDictReader(["a", "b"], [Unbounded(shape=())])
    with pytest.raises(ValueError, match="needs the keys they belong to"):
        InfoDictReader(None, [Unbounded(shape=())])
    with pytest.raises(TypeError, match="expected a TensorSpec for 'a', got int"):
        InfoDictReader(spec={"a": 3})
    with pytest.raises(RuntimeError, match="specs are not known yet"):
        InfoDictReader(["a"])({"a": 1}, TensorDict())


def test_reading_info_values_copies_them():
    reader = default_info_dict_reader(["x"], spec=[Unbounded(shape=(2,))])
    value = np.zeros(2, dtype=np.float32)
    td = reader({"x": value}, TensorDict())
    value[0] = 5.0
    assert td["x"].tolist() == [0.0, 0.0]


class TestInfoReaderEnv(EnvConformanceSuite):
    @pytest.fixture(autouse=True)
    def _echo_env(self, echo_env):
        self.echo_env = echo_env

    def make_env(self):
        return GymWrapper(self.echo_env(BOX, horizon=3)).set_info_dict_reader()


def test_with_info_entries_expands_the_reader_specs_to_the_batch():
    from rl_envs.libs._gym_info import with_info_entries

    observation = Composite({"observation": Unbounded(shape=(3, 4))}, shape=(3,))
    reader = default_info_dict_reader(["steps"], spec=[Unbounded(shape=(), dtype=torch.int64)])
    merged = with_info_entries(observation, reader, lambda: pytest.fail("no reset needed"), "X")
    assert merged["steps"].shape == (3,)
    assert "steps" not in observation.keys()  # the given spec is not modified
    inferred = with_info_entries(observation, default_info_dict_reader(), lambda: {"n": 1}, "X")
    assert inferred["n"].shape == (3,)
