"""BraxEnv and JumanjiEnv on JAX's CPU backend (tiny envs; each new env jit-compiles).

Importing brax and compiling take 10-40 s here, so every test that builds an env is `slow`.
"""

import functools

import pytest
import torch

from rl_core.envs import check_env_specs
from rl_envs import BraxEnv, BraxWrapper, JumanjiEnv, JumanjiWrapper

from ._batched_checks import ParallelEnv, SerialEnv, check_batched_rollouts

jax = pytest.importorskip("jax", reason='pip install "rl-envs[brax]" (or "rl-envs[jumanji]")')


@pytest.fixture(scope="module")
def brax_env():
    pytest.importorskip("brax", reason='pip install "rl-envs[brax]"')
    env = BraxEnv("fast", batch_size=[3], seed=0)
    check_env_specs(env)  # compiles reset and step once for the module
    return env


@pytest.fixture(scope="module")
def jumanji_env():
    pytest.importorskip("jumanji", reason='pip install "rl-envs[jumanji]"')
    env = JumanjiEnv("Game2048-v1", batch_size=[2], seed=0)
    check_env_specs(env)
    return env


@pytest.mark.slow
def test_brax_rollout_follows_the_fast_envs_equations(brax_env):
    traj = brax_env.rollout(4, break_when_any_done=False)
    assert traj.batch_size == (3, 4)
    assert brax_env.action_spec.shape == (3, 1)
    # Brax's "fast" env (dt 0.02): vel += dt if action > 0; pos += vel * dt; the observation
    # is [pos, vel], the reward pos; it starts at rest at 0.
    dt = 0.02
    for b in range(3):
        pos = vel = 0.0
        for t in range(4):
            vel += dt if traj["action"][b, t, 0].item() > 0 else 0.0
            pos += vel * dt
            got = traj["next", "observation"][b, t].tolist()
            assert got == pytest.approx([pos, vel], abs=1e-6)
            assert traj["next", "reward"][b, t, 0].item() == pytest.approx(pos, abs=1e-6)
    assert not traj["next", "done"].any()


@pytest.mark.slow
def test_brax_seeding_and_partial_reset(brax_env):
    brax_env.set_seed(5)
    first = brax_env.reset()["observation"].clone()
    brax_env.set_seed(5)
    torch.testing.assert_close(brax_env.reset()["observation"], first)
    td = brax_env.rand_step(brax_env.reset())["next"]
    td["_reset"] = torch.tensor([[False], [True], [False]])
    out = brax_env.reset(td)
    torch.testing.assert_close(out["observation"][[0, 2]], td["observation"][[0, 2]])


def test_outputs_share_memory_with_jax():
    from rl_envs.libs._jax import to_jax, to_torch

    array = jax.numpy.arange(6.0)
    tensor = to_torch(array)
    assert tensor.data_ptr() == array.unsafe_buffer_pointer()
    back = to_jax(tensor)
    assert back.unsafe_buffer_pointer() == tensor.data_ptr()
    flags = to_torch(jax.numpy.array([True, False]))  # bool: copied
    assert flags.tolist() == [True, False]


@pytest.mark.slow
def test_brax_bad_arguments(brax_env):
    with pytest.raises(TypeError, match=r"expected a brax\.envs\.Env"):
        BraxWrapper(object())
    with pytest.raises(ValueError, match="unknown Brax env 'nope'"):
        BraxEnv("nope")


@pytest.mark.slow
def test_jumanji_specs_rollout_and_seeding(jumanji_env):
    spec = jumanji_env.observation_spec
    assert spec["observation", "board"].shape == (2, 4, 4)
    assert spec["observation", "action_mask"].dtype == torch.bool
    jumanji_env.set_seed(1)
    traj = jumanji_env.rollout(6, break_when_any_done=False)
    assert traj.batch_size == (2, 6)
    # 2048: the board holds exponents; Jumanji's reset board has one tile, a 2 or a 4.
    first = traj["observation", "board"][:, 0]
    assert (first > 0).sum(dim=(-1, -2)).tolist() == [1, 1]
    assert set(first[first > 0].tolist()) <= {1, 2}
    jumanji_env.set_seed(1)
    torch.testing.assert_close(
        jumanji_env.reset()["observation", "board"], traj["observation", "board"][:, 0]
    )
    with pytest.raises(TypeError, match=r"expected a jumanji\.Environment"):
        JumanjiWrapper(object())
    with pytest.raises(ValueError, match="unknown Jumanji env 'Nope-v0'"):
        JumanjiEnv("Nope-v0")


# A forked ParallelEnv (the default) deadlocks with JAX envs: JAX is multithreaded once it
# has run in the parent (the parent builds one env to read the specs). Spawned workers start
# clean; batching inside the env (batch_size=[n]) is still the fast way (see the README).
@pytest.mark.slow
def test_brax_in_a_spawned_parallel_env():
    pytest.importorskip("brax", reason='pip install "rl-envs[brax]"')
    spawned = functools.partial(ParallelEnv, mp_start_method="spawn", timeout=300)
    check_batched_rollouts(functools.partial(BraxEnv, "fast", batch_size=[2]), spawned)


@pytest.mark.slow
def test_brax_in_a_serial_env():
    pytest.importorskip("brax", reason='pip install "rl-envs[brax]"')
    check_batched_rollouts(lambda: BraxEnv("fast", batch_size=[2]), SerialEnv)


@pytest.mark.slow
def test_jumanji_in_a_spawned_parallel_env():
    pytest.importorskip("jumanji", reason='pip install "rl-envs[jumanji]"')
    spawned = functools.partial(ParallelEnv, mp_start_method="spawn", timeout=300)
    check_batched_rollouts(functools.partial(JumanjiEnv, "Game2048-v1"), spawned)


@pytest.mark.slow
def test_jumanji_in_a_serial_env():
    pytest.importorskip("jumanji", reason='pip install "rl-envs[jumanji]"')
    check_batched_rollouts(lambda: JumanjiEnv("Game2048-v1"), SerialEnv)
