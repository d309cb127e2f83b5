import functools

import pytest
import torch

from rl_core.envs import EnvBase, check_env_specs
from rl_core.testing import CountingEnv, EnvConformanceSuite
from rl_core.transforms import StepCounter, TransformedEnv
from rl_envs.batched import EnvMetadata, SerialEnv
from rl_envs.native import CartPoleEnv, PendulumEnv


class TestSerialCountingConformance(EnvConformanceSuite):
    def make_env(self):
        return SerialEnv(3, CountingEnv, create_env_kwargs={"max_count": 4, "start_high": 3})


class TestSerialOfBatchedConformance(EnvConformanceSuite):
    def make_env(self):
        return SerialEnv(
            2, CartPoleEnv, create_env_kwargs={"batch_size": [3], "max_episode_steps": 4}
        )


class TestSerialStatelessConformance(EnvConformanceSuite):
    def make_env(self):
        return SerialEnv(2, PendulumEnv)


class TestSerialTransformedConformance(EnvConformanceSuite):
    def make_env(self):
        return SerialEnv(2, lambda: TransformedEnv(CountingEnv(max_count=100), StepCounter(3)))


class TestNestedSerialConformance(EnvConformanceSuite):
    def make_env(self):
        return SerialEnv(
            2,
            lambda: SerialEnv(3, CountingEnv, create_env_kwargs={"max_count": 3, "start_high": 2}),
        )


def _actions(env, steps, seed=0):
    generator = torch.Generator().manual_seed(seed)
    shape = env.action_spec.shape
    return [torch.randint(0, 2, shape, generator=generator) for _ in range(steps)]


def test_batch_size_and_specs_are_expanded():
    env = SerialEnv(4, CartPoleEnv, create_env_kwargs={"batch_size": [2]})
    sub = CartPoleEnv(batch_size=[2])
    assert env.batch_size == (4, 2)
    assert env.observation_spec["observation"].shape == (4, 2, 4)
    assert env.action_spec == sub.action_spec.expand(4, *sub.action_spec.shape)
    assert env.full_done_spec == sub.full_done_spec.expand(4, 2)
    assert env.num_workers == 4
    assert env.meta_data == EnvMetadata.from_env(sub)
    check_env_specs(env)


def test_set_seed_gives_sub_env_i_seed_plus_i():
    env = SerialEnv(3, CountingEnv, create_env_kwargs={"start_high": 1000})
    assert env.set_seed(5) == 8
    observed = env.reset()["observation"].squeeze(-1).tolist()
    expected = []
    for i in range(3):
        single = CountingEnv(start_high=1000)
        single.set_seed(5 + i)
        expected.append(single.reset()["observation"].item())
    assert observed == expected
    assert env.set_seed(5, static_seed=True) == 5
    assert len(set(env.reset()["observation"].squeeze(-1).tolist())) == 1
    assert env.set_seed(None) is None


def test_set_seed_rejects_non_int():
    with pytest.raises(TypeError, match=r"SerialEnv.set_seed: expected an int, got 1.5"):
        SerialEnv(2, CountingEnv).set_seed(1.5)


def test_step_hands_each_sub_env_its_rows():
    env = SerialEnv(3, CountingEnv, create_env_kwargs={"max_count": 100})
    td = env.reset()
    td["action"] = torch.tensor([[1], [0], [1]])
    nxt = env.step(td)["next"]
    assert nxt["observation"].squeeze(-1).tolist() == [1.0, 0.0, 1.0]
    assert nxt["reward"].shape == (3, 1)
    assert nxt["done"].shape == (3, 1)


def test_partial_reset_resets_only_masked_sub_envs():
    env = SerialEnv(3, CartPoleEnv)
    td = env.reset()
    for _ in range(5):
        td = env.rand_step(td)["next"].exclude("reward")
    states = [sub.state for sub in env._envs]
    td["_reset"] = torch.tensor([[False], [True], [False]])
    out = env.reset(td)
    assert torch.equal(env._envs[0].state, states[0])
    assert torch.equal(env._envs[2].state, states[2])
    assert not torch.equal(env._envs[1].state, states[1])
    assert torch.equal(out["observation"][[0, 2]], td["observation"][[0, 2]])
    assert torch.equal(out["observation"][1], env._envs[1].state)
    assert "_reset" not in out.keys()


def _step_and_reset_paths_agree(make_env, steps=40):
    fused, generic = make_env(), make_env()
    fused.set_seed(3)
    generic.set_seed(3)
    a, b = fused.reset(), generic.reset()
    resets = 0
    for action in _actions(fused, steps):
        ta, a = fused.step_and_maybe_reset(a.set("action", action.clone()))
        tb, b = EnvBase.step_and_maybe_reset(generic, b.set("action", action.clone()))
        assert (ta == tb).all()
        assert set(a.keys(True, True)) == set(b.keys(True, True))
        assert (a == b).all()
        resets += int(ta["next", "done"].any())
    return resets


def test_step_and_maybe_reset_matches_the_generic_path():
    resets = _step_and_reset_paths_agree(
        lambda: SerialEnv(3, CountingEnv, create_env_kwargs={"max_count": 3, "start_high": 3})
    )
    assert resets > 5


def test_step_and_maybe_reset_matches_the_generic_path_for_batched_sub_envs():
    resets = _step_and_reset_paths_agree(
        lambda: SerialEnv(
            2,
            CartPoleEnv,
            create_env_kwargs={
                "batch_size": [3],
                "max_episode_steps": 4,
                "categorical_action_encoding": True,
            },
        )
    )
    assert resets > 5


def test_one_create_env_fn_per_sub_env():
    env = SerialEnv(2, [functools.partial(CountingEnv, 2), functools.partial(CountingEnv, 4)])
    traj = env.rollout(10, policy=lambda td: td.set("action", torch.ones(2, 1, dtype=torch.int64)))
    # Sub-env 0 terminates at count 2: the rollout stops there.
    assert traj.batch_size == (2, 2)
    assert traj["next", "done"][:, -1].squeeze(-1).tolist() == [True, False]


def test_create_env_kwargs_per_sub_env():
    env = SerialEnv(2, CountingEnv, create_env_kwargs=[{"max_count": 2}, {"max_count": 7}])
    assert [sub.max_count for sub in env._envs] == [2, 7]


def test_sub_envs_with_different_specs_are_rejected():
    with pytest.raises(ValueError, match=r"SerialEnv: sub-env 1 \(CartPoleEnv\) has a different"):
        SerialEnv(2, [CountingEnv, CartPoleEnv])
    with pytest.raises(ValueError, match=r"sub-env 1 \(CountingEnv\) has batch_size \(2,\)"):
        SerialEnv(2, CountingEnv, create_env_kwargs=[{}, {"batch_size": [2]}])


def test_argument_errors():
    with pytest.raises(ValueError, match="expected num_workers >= 1, got 0"):
        SerialEnv(0, CountingEnv)
    with pytest.raises(ValueError, match="got 3 create_env_fn for num_workers=2"):
        SerialEnv(2, [CountingEnv] * 3)
    with pytest.raises(TypeError, match=r"create_env_fn\[0\] is a int, expected a callable"):
        SerialEnv(2, 3)
    with pytest.raises(TypeError, match=r"create_env_kwargs\[1\] is a int, expected a dict"):
        SerialEnv(2, CountingEnv, create_env_kwargs=[{}, 3])
    with pytest.raises(TypeError, match="create_env_fn returned a str, expected an EnvBase"):
        SerialEnv(2, lambda: "env")


def test_close_closes_every_sub_env():
    env = SerialEnv(2, CountingEnv)
    subs = list(env._envs)
    env.close()
    env.close()
    assert env.is_closed
    assert all(sub.is_closed for sub in subs)


def test_device_argument_moves_outputs():
    env = SerialEnv(2, CountingEnv, device="cpu")
    assert env.device == torch.device("cpu")
    assert env.sub_device is None
    traj = env.rollout(3)
    assert traj["next", "observation"].device == torch.device("cpu")
    check_env_specs(env)


def test_repr_names_the_number_of_workers():
    assert repr(SerialEnv(2, CountingEnv)).startswith("SerialEnv(num_workers=2, batch_size=(2,)")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_sub_envs():
    env = SerialEnv(2, CartPoleEnv, create_env_kwargs={"batch_size": [8], "device": "cuda"})
    check_env_specs(env)
    traj = env.rollout(50, break_when_any_done=False)
    assert traj["next", "observation"].device.type == "cuda"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_sub_envs_on_a_cuda_batched_env():
    env = SerialEnv(2, CountingEnv, create_env_kwargs={"start_high": 3}, device="cuda")
    check_env_specs(env)
    traj = env.rollout(20, break_when_any_done=False)
    assert traj["next", "observation"].device.type == "cuda"


def _gym_env(**kwargs):
    pytest.importorskip("gymnasium")
    from rl_envs.libs import GymEnv

    return GymEnv("CartPole-v1", **kwargs)


class TestVectorizedGymConformance(EnvConformanceSuite):
    def make_env(self):
        return SerialEnv(3, _gym_env)


@pytest.mark.parametrize("categorical", [False, True])
def test_gym_sub_envs_step_through_one_vector_env(categorical):
    kwargs = {"categorical_action_encoding": categorical}
    fast = SerialEnv(4, _gym_env, create_env_kwargs=kwargs)
    slow = SerialEnv(4, _gym_env, create_env_kwargs=kwargs, vectorize=False)
    assert fast.vectorized
    assert not slow.vectorized
    assert fast.full_action_spec == slow.full_action_spec
    trajectories = []
    for env in (fast, slow):
        env.set_seed(0)
        torch.manual_seed(0)
        trajectories.append(env.rollout(60, break_when_any_done=False))
    a, b = trajectories
    assert a["next", "done"].sum() >= 4
    assert set(a.keys(True, True)) == set(b.keys(True, True))
    assert (a == b).all()


def test_gym_sub_envs_with_other_specs_are_not_vectorized():
    def with_info():
        from rl_core.specs import Unbounded
        from rl_envs.libs import default_info_dict_reader

        env = _gym_env()
        reader = default_info_dict_reader(["steps"], spec=[Unbounded(shape=(), dtype=torch.int64)])
        return env.set_info_dict_reader(reader)

    _gym_env()
    env = SerialEnv(2, with_info)
    assert not env.vectorized
    check_env_specs(env)


def _shaped_gym_env(**kwargs):
    from rl_envs.libs import GymEnv

    class ShapedCartPole(GymEnv):
        """A subclass that shapes the reward: its _step must run inside SerialEnv too."""

        def _step(self, tensordict):
            out = super()._step(tensordict)
            out["reward"] = out["reward"] * 10.0 + 1.0
            return out

    return ShapedCartPole("CartPole-v1", **kwargs)


def test_gym_sub_env_overriding_step_is_not_vectorized():
    # Regression: the sub-envs' gymnasium envs were regrouped into one vector env, so the
    # override never ran and SerialEnv gave the raw reward (1.0) instead of the shaped one.
    pytest.importorskip("gymnasium")
    env = SerialEnv(3, _shaped_gym_env)
    assert not env.vectorized
    env.set_seed(0)
    traj = env.rollout(20, break_when_any_done=False)
    assert (traj["next", "reward"] == 11.0).all()
    td = env.step(env.rand_action(env.reset()))
    assert (td["next", "reward"] == 11.0).all()
    env.close()
