import sys

import numpy as np
import pytest
import torch
from testkit.package import modules_loaded_by

from rl_core.envs import check_env_specs
from rl_core.specs import Bounded, Categorical, OneHot, Unbounded
from rl_core.testing import EnvConformanceSuite
from rl_envs.libs import GymEnv, GymWrapper

gym = pytest.importorskip("gymnasium")


def _nested_dict_cartpole() -> "gym.Env":
    """CartPole whose observation is a nested Dict (a real gymnasium wrapper builds it)."""
    box = gym.spaces.Box(-np.inf, np.inf, (2,), dtype=np.float32)
    space = gym.spaces.Dict({"cart": box, "pole": gym.spaces.Dict({"state": box})})

    def split(obs):
        return {"cart": obs[:2], "pole": {"state": obs[2:]}}

    return gym.wrappers.TransformObservation(gym.make("CartPole-v1"), split, space)


# ---------------------------------------------------------------- the conformance kit


class TestCartPole(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("CartPole-v1")


class TestCartPoleCategorical(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("CartPole-v1", categorical_action_encoding=True)


class TestCartPoleVector(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("CartPole-v1", num_envs=3)


class TestPendulum(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("Pendulum-v1")


class TestPendulumVector(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("Pendulum-v1", num_envs=2)


class TestMountainCarContinuous(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("MountainCarContinuous-v0")


class TestDictObservation(EnvConformanceSuite):
    def make_env(self):
        return GymWrapper(_nested_dict_cartpole())


class TestDictObservationVector(EnvConformanceSuite):
    def make_env(self):
        return GymWrapper(
            gym.vector.SyncVectorEnv([_nested_dict_cartpole] * 2, autoreset_mode="Disabled")
        )


class TestFrozenLake(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("FrozenLake-v1")


class TestCartPoleAsync(EnvConformanceSuite):
    def make_env(self):
        return GymEnv("CartPole-v1", num_envs=2, vectorization_mode="async")


# ---------------------------------------------------------------- specs and outputs


def test_cartpole_specs_follow_the_torchrl_conventions():
    env = GymEnv("CartPole-v1")
    assert env.batch_size == ()
    assert isinstance(env.action_spec, OneHot)
    assert env.action_spec.shape == (2,)
    assert isinstance(env.observation_spec["observation"], Bounded)
    assert env.observation_spec["observation"].shape == (4,)
    assert isinstance(env.reward_spec, Unbounded)
    assert env.reward_spec.shape == (1,)
    assert env.reward_spec.dtype == torch.float32
    assert sorted(env.done_keys) == ["done", "terminated", "truncated"]
    env.close()


def test_vector_specs_lead_with_num_envs():
    env = GymEnv("CartPole-v1", num_envs=4, categorical_action_encoding=True)
    assert env.batch_size == (4,)
    assert isinstance(env.action_spec, Categorical)
    assert env.action_spec.shape == (4,)
    assert env.observation_spec["observation"].shape == (4, 4)
    assert env.reward_spec.shape == (4, 1)
    assert env.full_done_spec["done"].shape == (4, 1)
    env.close()


def test_dict_observation_entries_sit_at_the_root_under_their_keys():
    env = GymWrapper(_nested_dict_cartpole())
    assert set(env.observation_keys) == {"cart", ("pole", "state")}
    td = env.rollout(3)
    assert td["next", "pole", "state"].shape == (3, 2)
    assert torch.equal(td["next", "cart"][:-1], td["cart"][1:])


def test_truncation_is_reported_as_truncated_not_terminated():
    env = GymEnv("CartPole-v1", max_episode_steps=3)
    env.set_seed(0)
    holding = torch.tensor([True, False])
    traj = env.rollout(10, policy=lambda td: td.set("action", holding.clone()))
    assert traj.batch_size == (3,)
    assert traj["next", "truncated"].squeeze(-1).tolist() == [False, False, True]
    assert traj["next", "terminated"].squeeze(-1).tolist() == [False, False, False]
    assert traj["next", "done"].squeeze(-1).tolist() == [False, False, True]


def test_termination_is_reported_as_terminated_with_the_final_observation():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    left = torch.tensor([True, False])
    traj = env.rollout(100, policy=lambda td: td.set("action", left.clone()))
    assert traj["next", "terminated"][-1].item()
    assert not traj["next", "truncated"].any()
    final = traj["next", "observation"][-1]
    # CartPole terminates when the pole leans past 12 degrees or the cart leaves the track.
    assert final[2].abs() > 0.2094 or final[0].abs() > 2.4
    assert traj["next", "reward"].eq(1).all()


def test_same_seed_same_rollout_and_other_seed_other_rollout():
    def run(seed):
        env = GymEnv("CartPole-v1", num_envs=2)
        env.set_seed(seed)
        torch.manual_seed(0)
        return env.rollout(30, break_when_any_done=False)

    first, again, other = run(1), run(1), run(2)
    assert torch.equal(first["observation"], again["observation"])
    assert not torch.equal(first["observation"], other["observation"])


def test_set_seed_returns_the_next_seed():
    assert GymEnv("CartPole-v1").set_seed(5) == 6


def test_reset_accepts_a_gymnasium_seed():
    env = GymEnv("CartPole-v1")
    assert torch.equal(env.reset(seed=3)["observation"], env.reset(seed=3)["observation"])


def test_frame_skip_repeats_actions_and_sums_rewards():
    env = GymEnv("CartPole-v1", frame_skip=3)
    env.set_seed(0)
    traj = env.rollout(2)
    assert traj["next", "reward"].squeeze(-1).tolist() == [3.0, 3.0]
    assert env.env.unwrapped.steps_beyond_terminated is None


def test_frame_skip_in_a_vector_env_applies_inside_every_sub_env():
    env = GymEnv("CartPole-v1", num_envs=2, frame_skip=2)
    env.set_seed(0)
    traj = env.rollout(2)
    assert traj["next", "reward"].eq(2.0).all()


def test_output_device():
    env = GymEnv("CartPole-v1", device="cpu")
    td = env.rollout(3)
    assert td.device == torch.device("cpu")
    assert td["next", "observation"].device == torch.device("cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_output_device():
    env = GymEnv("CartPole-v1", num_envs=2, device="cuda")
    check_env_specs(env, seed=0)
    td = env.rollout(5, break_when_any_done=False)
    assert td["next", "observation"].is_cuda
    assert td["action"].is_cuda


def test_wrapper_exposes_the_gymnasium_env_and_closes_it_once():
    raw = gym.make("CartPole-v1")
    env = GymWrapper(raw)
    assert env.env is raw
    env.close()
    env.close()
    assert env.is_closed


def test_long_rollout_keeps_every_step():
    """Steps are written through row blocks of 64: values stay right across many blocks."""
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    traj = env.rollout(300, break_when_any_done=False)
    done = traj["next", "done"].squeeze(-1)
    same = (traj["next", "observation"][:-1] == traj["observation"][1:]).all(-1)
    assert same[~done[:-1]].all()
    assert not same[done[:-1]].any()
    assert traj["next", "reward"].eq(1).all()


# ---------------------------------------------------------------- errors


def test_wrapper_refuses_a_non_gymnasium_env():
    with pytest.raises(TypeError, match=r"GymWrapper: expected a gymnasium.Env .*got object"):
        GymWrapper(object())


def test_bad_arguments_are_refused_with_what_was_expected():
    with pytest.raises(ValueError, match=r"num_envs to be an int >= 0.*got -1"):
        GymEnv("CartPole-v1", num_envs=-1)
    with pytest.raises(ValueError, match="vectorization_mode 'sync' or 'async', got 'gpu'"):
        GymEnv("CartPole-v1", num_envs=2, vectorization_mode="gpu")
    with pytest.raises(ValueError, match="frame_skip to be None or an int >= 1, got 0"):
        GymEnv("CartPole-v1", frame_skip=0)


def test_frame_skip_on_a_wrapped_vector_env_is_refused():
    vector = gym.make_vec("CartPole-v1", num_envs=2)
    with pytest.raises(ValueError, match=r"frame_skip is not supported on a vector env.*GymEnv"):
        GymWrapper(vector, frame_skip=2)


def test_missing_gymnasium_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(
        ImportError, match=r'GymEnv needs gymnasium: pip install "rl-envs\[gymnasium\]"'
    ):
        GymEnv("CartPole-v1")


def test_missing_ale_py_names_the_atari_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)
    with pytest.raises(ImportError, match=r'needs ale-py.*pip install "rl-envs\[atari\]"'):
        GymEnv("ALE/NotAGame-v5")


def test_importing_rl_envs_libs_does_not_import_gymnasium():
    # `import rl_envs` imports rl_envs.libs (checked), so its fresh interpreter serves here
    # and for the package's other import checks.
    loaded = modules_loaded_by("import rl_envs")
    assert "rl_envs.libs" in loaded
    assert "gymnasium" not in loaded


# ---------------------------------------------------------------- pixels


def test_classic_control_pixels_replace_the_state_by_default():
    env = GymEnv("CartPole-v1", from_pixels=True)
    assert env.observation_keys == ["pixels"]
    spec = env.observation_spec["pixels"]
    assert spec.dtype == torch.uint8
    assert spec.shape == (400, 600, 3)
    check_env_specs(env, seed=0)
    traj = env.rollout(8, break_when_any_done=False)
    assert traj["next", "pixels"].shape == (8, 400, 600, 3)
    assert traj["next", "pixels"].float().std() > 0
    assert torch.equal(traj["pixels"][1:], traj["next", "pixels"][:-1])
    assert not torch.equal(traj["pixels"][0], traj["next", "pixels"][-1])  # the cart moved


def test_pixels_next_to_the_state_with_pixels_only_false():
    env = GymEnv("CartPole-v1", num_envs=2, from_pixels=True, pixels_only=False)
    assert set(env.observation_keys) == {"observation", "pixels"}
    assert env.observation_spec["pixels"].shape == (2, 400, 600, 3)
    check_env_specs(env, seed=0)


def test_pixels_need_an_rgb_array_env():
    with pytest.raises(ValueError, match="renders 'rgb_array', got render_mode=None"):
        GymWrapper(gym.make("CartPole-v1"), from_pixels=True)


def test_a_dict_observation_named_pixels_cannot_take_rendered_pixels_too(echo_env):
    env = echo_env(gym.spaces.Dict({"pixels": gym.spaces.Box(0, 1, (2,))}))
    env.render_mode = "rgb_array"
    with pytest.raises(ValueError, match="already has a 'pixels' entry"):
        GymWrapper(env, from_pixels=True, pixels_only=False)


class TestAtariPixels(EnvConformanceSuite):
    """An Atari game from ale-py, observed through its rendered frames."""

    def make_env(self):
        pytest.importorskip("ale_py")
        return GymEnv("ALE/Pong-v5", from_pixels=True, frameskip=2)


def test_atari_observations_and_rendered_frames_agree():
    pytest.importorskip("ale_py")
    env = GymEnv("ALE/Pong-v5", from_pixels=True, pixels_only=False)
    assert env.observation_spec["observation"].shape == (210, 160, 3)
    assert env.observation_spec["observation"].dtype == torch.uint8
    env.set_seed(0)
    traj = env.rollout(4)
    assert torch.equal(traj["next", "observation"], traj["next", "pixels"])
    assert env.action_spec.shape == (6,)


# ---------------------------------------------------------------- bad actions


@pytest.mark.parametrize(
    ("categorical", "action", "got"),
    [
        (True, torch.tensor(-1), r"got shape \(\): -1"),
        (True, torch.tensor(2), r"got shape \(\): 2"),
        (False, torch.tensor([1, 1]), r"got shape \(2,\): \[1, 1\]"),
        (False, torch.tensor([0, 0]), r"got shape \(2,\): \[0, 0\]"),
        (False, torch.tensor([0, 1, 0]), r"got shape \(3,\): \[0, 1, 0\]"),
    ],
)
def test_bad_discrete_action_raises(categorical, action, got):
    # Regression: -1 stepped with action n-1 (numpy indexing) and a bad one-hot with action 0.
    env = GymEnv("CartPole-v1", categorical_action_encoding=categorical)
    td = env.reset()
    expected = r"indices in \[0, 1\]" if categorical else r"one-hot vectors of shape \(2,\)"
    with pytest.raises(
        ValueError,
        match=rf"GymEnv\(CartPole-v1\)\.step: bad action at key 'action': expected {expected}.*{got}",
    ):
        env.step(td.set("action", action))
    env.close()


@pytest.mark.parametrize("categorical", [False, True])
def test_bad_discrete_action_of_a_vector_env_raises(categorical):
    env = GymEnv("CartPole-v1", num_envs=3, categorical_action_encoding=categorical)
    td = env.reset()
    bad = torch.tensor([0, -1, 1]) if categorical else torch.tensor([[1, 0], [1, 1], [0, 1]])
    with pytest.raises(ValueError, match=r"GymEnv\(CartPole-v1\)\.step: bad action at key"):
        env.step(td.set("action", bad))
    env.step(td.set("action", env.action_spec.rand()))  # valid actions still step
    env.close()


@pytest.mark.parametrize(
    ("num_envs", "expected", "got"), [(0, r"\(1,\)", r"\(2,\)"), (2, r"\(2, 1\)", r"\(2, 2\)")]
)
def test_box_action_of_the_wrong_shape_raises(num_envs, expected, got):
    env = GymEnv("Pendulum-v1", num_envs=num_envs)
    td = env.reset()
    batch = (num_envs,) if num_envs else ()
    with pytest.raises(
        ValueError,
        match=rf"GymEnv\(Pendulum-v1\)\.step: bad action at key 'action': expected a value of "
        rf"shape {expected}, got shape {got}",
    ):
        env.step(td.set("action", torch.zeros(*batch, 2)))
    env.close()


def test_multi_discrete_actions_are_checked():
    space = gym.spaces.MultiDiscrete([2, 3])
    base = gym.make("CartPole-v1")
    env = GymWrapper(gym.wrappers.TransformAction(base, lambda a: int(a[0]), space))
    td = env.reset()
    with pytest.raises(ValueError, match=r"one-hot blocks of sizes \[2, 3\]"):
        env.step(td.set("action", torch.tensor([1, 0, 1, 1, 0])))
    env.step(td.set("action", torch.tensor([1, 0, 0, 0, 1])))
    cat = GymWrapper(
        gym.wrappers.TransformAction(gym.make("CartPole-v1"), lambda a: int(a[0]), space),
        categorical_action_encoding=True,
    )
    td = cat.reset()
    with pytest.raises(ValueError, match=r"indices below nvec=\[2, 3\].*\[1, 3\]"):
        cat.step(td.set("action", torch.tensor([1, 3])))


def test_missing_action_raises_key_error_naming_key_and_env():
    # Regression: a TypeError from inside the action codec.
    env = GymEnv("CartPole-v1")
    with pytest.raises(
        KeyError, match=r"GymEnv\(CartPole-v1\)\.step: the input has no 'action' entry"
    ):
        env.step(env.reset())
    env.close()
