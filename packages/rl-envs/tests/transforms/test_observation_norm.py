import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_core.envs._plans import built_plan
from rl_envs.transforms import ObservationNorm, RewardSum
from rl_envs.transforms._affine import affine


def _lane(env):
    """The numpy-row lane of ``env``'s step plan, or ``None``."""
    plan = built_plan(env)
    return None if plan is None else plan.lane


def test_init_stats_normalises_cartpole_observations(cartpole):
    env = TransformedEnv(cartpole, ObservationNorm(standard_normal=True))
    env.transform.init_stats(200)
    assert env.transform.loc.shape == (4,)
    check_env_specs(env)
    traj = env.rollout(200, break_when_any_done=False)
    obs = traj["observation"]
    assert obs.mean(0).abs().max() < 0.6
    assert (obs.std(0) - 1).abs().max() < 0.6


def test_affine_form_matches_standard_form(pendulum):
    env = TransformedEnv(pendulum, Compose(ObservationNorm(), RewardSum(), StepCounter(10)))
    env.transform[0].init_stats(50)
    check_env_specs(env)
    t = env.transform[0]
    x = torch.randn(5, 3)
    assert torch.allclose(
        x * t.scale + t.loc, t(TensorDict(observation=x, batch_size=[5]))["observation"]
    )


def test_state_dict_round_trip_into_a_fresh_transform(cartpole):
    env = TransformedEnv(cartpole, ObservationNorm(standard_normal=True))
    env.transform.init_stats(50)
    fresh = ObservationNorm(standard_normal=True)
    fresh.load_state_dict(env.transform.state_dict())
    batch = TensorDict(observation=torch.randn(6, 4), batch_size=[6])
    assert torch.equal(
        fresh(batch.clone())["observation"], env.transform(batch.clone())["observation"]
    )


def test_bounded_specs_are_mapped_and_inverse_maps_actions(pendulum):
    t = ObservationNorm(loc=0.0, scale=2.0, in_keys=["observation"], in_keys_inv=["action"])
    env = TransformedEnv(pendulum, t)
    assert env.action_spec.high.item() == pytest.approx(4.0)
    assert env.observation_spec["observation"].high.tolist() == [2.0, 2.0, 16.0]
    check_env_specs(env)
    td = env.reset().set("action", torch.tensor([4.0]))
    assert t.inv(td)["action"].item() == pytest.approx(2.0)


def test_errors_name_the_transform_and_the_key(cartpole):
    with pytest.raises(ValueError, match="ObservationNorm: give both loc and scale"):
        ObservationNorm(loc=1.0)
    env = TransformedEnv(cartpole, ObservationNorm(in_keys=["pixels"]))
    with pytest.raises(KeyError, match="ObservationNorm: the key 'pixels' is not an observation"):
        env.reset()
    env = TransformedEnv(cartpole, ObservationNorm())
    with pytest.raises(RuntimeError, match="ObservationNorm: loc and scale are not set"):
        env.reset()
    with pytest.raises(ValueError, match="cat_dim=1"):
        env.transform.init_stats(5, cat_dim=1)


def test_stats_estimated_once_serve_parallel_env_workers(cartpole):
    from rl_envs import GymEnv, ParallelEnv

    norm = ObservationNorm(standard_normal=True)
    TransformedEnv(cartpole, norm).transform.init_stats(50)

    def make():
        return TransformedEnv(GymEnv("CartPole-v1"), norm.clone())

    env = ParallelEnv(2, make)
    try:
        env.set_seed(0)
        check_env_specs(env)
        raw = ParallelEnv(2, lambda: GymEnv("CartPole-v1"))
        raw.set_seed(0)
        expected = (raw.reset()["observation"] - norm.loc) / norm.scale
        raw.close()
        env.set_seed(0)
        assert torch.allclose(env.reset()["observation"], expected, atol=1e-5)
    finally:
        env.close()


def test_env_path_equals_the_generic_transform_on_the_same_values(cartpole):
    # On the env path (Transform._call with set_leaf, steps and resets,
    # through the fused step-and-reset) each output is bit-equal to _apply_transform of the
    # base env's observation, for both forms.
    torch.manual_seed(0)
    loc, scale = torch.randn(4), torch.rand(4) + 0.5
    for standard_normal in (True, False):
        norm = ObservationNorm(
            loc=loc, scale=scale, out_keys=["normed"], standard_normal=standard_normal
        )
        env = TransformedEnv(cartpole, Compose(norm, RewardSum()))
        env.set_seed(3)
        traj = env.rollout(40, break_when_any_done=False)
        assert traj["next", "done"].any()  # resets happened within the rollout
        for prefix in ((), ("next",)):
            raw, normed = traj[(*prefix, "observation")], traj[(*prefix, "normed")]
            for t in range(raw.shape[0]):
                assert torch.equal(normed[t], norm._apply_transform(raw[t]))
        env.transform = Compose()  # frees the transforms for the next round


class _Shifted(ObservationNorm):
    """A subclass mapping values its own way: its _apply_transform must be used."""

    def _apply_transform(self, value):
        return super()._apply_transform(value) + 100.0


def test_a_subclass_apply_transform_is_honoured_on_the_env_path(cartpole):
    env = TransformedEnv(cartpole, _Shifted(loc=torch.zeros(4), scale=torch.ones(4)))
    obs = env.reset()["observation"]
    assert obs.min() > 90.0
    td = env.rand_step(env.reset())
    assert td["next", "observation"].min() > 90.0


class _TorchNorm(ObservationNorm):
    def _apply_transform(self, value):  # the torch path: no lane plan
        return super()._apply_transform(value)


class _TorchSum(RewardSum):
    def _step(self, tensordict, next_tensordict):
        return super()._step(tensordict, next_tensordict)


class _TorchCount(StepCounter):
    def _step(self, tensordict, next_tensordict):
        return super()._step(tensordict, next_tensordict)


def _pipeline(make_env, norm, sums, count, standard_normal):
    torch.manual_seed(1)
    base = make_env()
    shape = base.observation_spec["observation"].shape[-1:]
    loc, scale = torch.randn(shape), torch.rand(shape) + 0.5
    env = TransformedEnv(
        base, Compose(norm(loc, scale, standard_normal=standard_normal), sums(), count())
    )
    env.set_seed(3)
    return env


def _actions(env, steps):
    torch.manual_seed(2)
    return [env.action_spec.rand() for _ in range(steps)]


def _step_loop(env, actions):
    td, out = env.reset(), []
    for action in actions:
        td.set("action", action)
        transition, td = env.step_and_maybe_reset(td)
        out.append(transition.clone())
    return torch.stack(out)


@pytest.mark.parametrize("standard_normal", [True, False])
@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1", "CartPole-v1 x3"])
def test_numpy_row_lane_gives_the_torch_paths_bits(name, standard_normal):
    # ObservationNorm, RewardSum and StepCounter on a GymEnv run on numpy rows (the
    # TransformedEnv's lane, rl_core._accel.lane); the same transforms with a step
    # method overridden take the torch path. Both must give the same bits, over resets
    # (and partial resets of a vector env).
    from rl_envs import GymEnv

    env_name, _, copies = name.partition(" x")

    def make_env():
        return GymEnv(env_name, num_envs=int(copies)) if copies else GymEnv(env_name)

    lane_env = _pipeline(make_env, ObservationNorm, RewardSum, StepCounter, standard_normal)
    torch_env = _pipeline(make_env, _TorchNorm, _TorchSum, _TorchCount, standard_normal)
    assert _lane(lane_env) is not None
    assert _lane(torch_env) is None
    actions = _actions(lane_env, 250)
    fast, slow = _step_loop(lane_env, actions), _step_loop(torch_env, actions)
    assert set(fast.keys(True, True)) == set(slow.keys(True, True))
    for key in fast.keys(True, True):
        assert torch.equal(fast[key], slow[key]), key
    assert bool(fast["next", "done"].any())  # resets happened


def test_numpy_row_lane_follows_loc_and_scale_changes():
    # loc and scale changed in place (a new version) and replaced (a new buffer) between
    # steps: the lane must use them at once, as the torch path does.
    from rl_envs import GymEnv

    envs = [
        _pipeline(lambda: GymEnv("CartPole-v1"), norm, RewardSum, StepCounter, True)
        for norm in (ObservationNorm, _TorchNorm)
    ]
    actions = _actions(envs[0], 30)
    results = []
    for env in envs:
        norm, td, out = env.transform[0], env.reset(), []
        for i, action in enumerate(actions):
            if i == 10:
                norm.scale.mul_(3.0)
            if i == 20:
                norm.loc = norm.loc + 0.25
            if i == 25:
                norm.loc = torch.tensor(0.5)  # another shape: broadcast over the row
            td.set("action", action)
            transition, td = env.step_and_maybe_reset(td)
            out.append(transition.clone())
        results.append(torch.stack(out))
    fast, slow = results
    for key in fast.keys(True, True):
        assert torch.equal(fast[key], slow[key]), key


class _ShiftedStatsNorm(ObservationNorm):
    """Overrides ``_stats`` (loc moved by one at every call): no lane plan, since the plan
    reads ``_stats`` only when a buffer changes."""

    calls = 0

    def _stats(self, device):
        loc, scale, _ = super()._stats(device)
        type(self).calls += 1
        return loc + type(self).calls, scale, None


def test_an_overridden_stats_method_takes_the_torch_path():
    from rl_envs import GymEnv

    env = _pipeline(lambda: GymEnv("CartPole-v1"), _ShiftedStatsNorm, RewardSum, StepCounter, True)
    assert _lane(env) is None
    td = env.reset()
    td.set("action", env.action_spec.rand())
    before = _ShiftedStatsNorm.calls
    env.step_and_maybe_reset(td)
    assert _ShiftedStatsNorm.calls == before + 1  # called on the step, as the torch path does


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("standard_normal", [True, False])
def test_affine_into_a_numpy_row_gives_the_bits_of_the_torch_expression(dtype, standard_normal):
    rng = np.random.default_rng(0)
    value = rng.normal(size=(5, 4)).astype(dtype) * 1e3
    loc = rng.normal(size=(4,)).astype(dtype)
    scale = (rng.random(size=(4,)) + 0.1).astype(dtype)
    out = np.empty_like(value)
    got = affine(value, loc, scale, standard_normal=standard_normal, out=out)
    expected = affine(
        torch.from_numpy(value),
        torch.from_numpy(loc),
        torch.from_numpy(scale),
        standard_normal=standard_normal,
    )
    assert got is out
    assert np.array_equal(out.view(np.uint8), expected.numpy().view(np.uint8))


def test_init_stats_reduces_dims_of_the_rollout_layout_as_torchrl():
    # a batched env's rollout is [batch, time, *entry]: reduce_dim=(0, 1) gives per-feature
    # stats, and cat_dim must be one of the reduced dims (TorchRL's rule)
    from rl_core.testing import CountingEnv

    def fresh():
        env = TransformedEnv(
            CountingEnv(max_count=50, start_high=10, batch_size=[2]),
            ObservationNorm(standard_normal=True),
        )
        env.set_seed(3)
        torch.manual_seed(3)
        return env

    env = fresh()
    env.transform.init_stats(7, reduce_dim=(0, 1), cat_dim=1)
    assert env.transform.loc.shape == (1,)
    traj = fresh().base_env.rollout(7, break_when_any_done=False)
    obs = traj["observation"]
    assert obs.shape == (2, 7, 1)
    torch.testing.assert_close(env.transform.loc, obs.mean((0, 1)))
    torch.testing.assert_close(env.transform.scale, obs.std((0, 1)))
    with pytest.raises(ValueError, match=r"cat_dim to be reduce_dim or one of its dims"):
        fresh().transform.init_stats(7, reduce_dim=(0, 1), cat_dim=2)
    with pytest.raises(ValueError, match=r"keep_dims among reduce_dim"):
        fresh().transform.init_stats(7, reduce_dim=0, keep_dims=(1,))
