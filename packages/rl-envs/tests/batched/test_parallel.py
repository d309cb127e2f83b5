import gc
import multiprocessing
import os
import signal
import threading
import time

import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import check_env_specs
from rl_core.specs import Composite, NonTensor, Unbounded
from rl_core.testing import CountingEnv, EnvConformanceSuite
from rl_core.transforms import StepCounter, TransformedEnv
from rl_envs.batched import EnvCreator, ParallelEnv, SerialEnv
from rl_envs.batched._pool import default_start_method
from rl_envs.native import CartPoleEnv, PendulumEnv
from rl_envs.testing import IncrementingEnv


@pytest.fixture(autouse=True)
def _no_worker_left_behind():
    yield
    workers = [p for p in multiprocessing.active_children() if p.name.startswith("ParallelEnv")]
    assert not workers, f"worker processes left running: {workers}"


class TestParallelCountingConformance(EnvConformanceSuite):
    def make_env(self):
        return ParallelEnv(3, CountingEnv, create_env_kwargs={"max_count": 4, "start_high": 3})


class TestParallelOfSerialConformance(EnvConformanceSuite):
    def make_env(self):
        return ParallelEnv(
            2, lambda: SerialEnv(2, CartPoleEnv, create_env_kwargs={"max_episode_steps": 4})
        )


class TestParallelStatelessConformance(EnvConformanceSuite):
    def make_env(self):
        return ParallelEnv(2, PendulumEnv)


class TestTransformedParallelConformance(EnvConformanceSuite):
    def make_env(self):
        env = ParallelEnv(2, CountingEnv, create_env_kwargs={"max_count": 100, "start_high": 3})
        return TransformedEnv(env, StepCounter(3))


class FailingEnv(CountingEnv):
    """Raises from _step once the count reaches ``fail_at``."""

    def __init__(self, fail_at=None):
        super().__init__(max_count=100)
        self.fail_at = fail_at

    def _step(self, tensordict):
        if self.fail_at is not None and tensordict["observation"].item() >= self.fail_at:
            raise ValueError(f"count reached {self.fail_at}")
        return super()._step(tensordict)


class ThreadsEnv(CountingEnv):
    """Observes torch's thread count in the process running it."""

    def _reset(self, tensordict, **kwargs):
        threads = torch.full((1,), float(torch.get_num_threads()))
        return TensorDict(observation=threads)


class SleepyEnv(CountingEnv):
    def _step(self, tensordict):
        time.sleep(3.0)
        return super()._step(tensordict)


built_here = []


def counted_env():
    built_here.append(os.getpid())
    return CountingEnv()


def exit_in_worker():
    if multiprocessing.parent_process() is not None:
        os._exit(3)
    return CountingEnv()


def _rollout_with_actions(env, steps, seed=0):
    generator = torch.Generator().manual_seed(seed)
    shape = env.action_spec.shape

    def policy(td):
        return td.set("action", torch.randint(0, 2, shape, generator=generator))

    env.set_seed(11)
    return env.rollout(steps, policy, break_when_any_done=False)


@pytest.mark.parametrize("shared_memory", [True, False])
def test_same_trajectories_as_serial_env(shared_memory):
    kwargs = {"max_count": 4, "start_high": 4}
    parallel = ParallelEnv(3, CountingEnv, create_env_kwargs=kwargs, shared_memory=shared_memory)
    serial = SerialEnv(3, CountingEnv, create_env_kwargs=kwargs)
    try:
        a = _rollout_with_actions(parallel, 30)
        b = _rollout_with_actions(serial, 30)
        assert a.batch_size == (3, 30)
        assert (a == b).all()
        assert a["next", "done"].sum() > 10
    finally:
        parallel.close()


def test_workers_holding_batched_envs():
    parallel = ParallelEnv(
        2, lambda: SerialEnv(3, CartPoleEnv, create_env_kwargs={"max_episode_steps": 5})
    )
    serial = SerialEnv(
        2, lambda: SerialEnv(3, CartPoleEnv, create_env_kwargs={"max_episode_steps": 5})
    )
    try:
        assert parallel.batch_size == (2, 3)
        a = _rollout_with_actions(parallel, 12)
        b = _rollout_with_actions(serial, 12)
        assert a.batch_size == (2, 3, 12)
        assert (a == b).all()
    finally:
        parallel.close()


def test_state_entries_come_from_the_parent():
    env = ParallelEnv(2, PendulumEnv)
    try:
        td = env.reset()
        td["th"] = torch.tensor([[0.0], [0.0]])
        td["thdot"] = torch.zeros(2, 1)
        td["action"] = torch.zeros(2, 1)
        nxt = env.step(td)["next"]
        assert nxt["th"].flatten().tolist() == [0.0, 0.0]
        assert nxt["reward"].flatten().tolist() == [0.0, 0.0]
    finally:
        env.close()


def test_set_seed_gives_worker_i_seed_plus_i():
    env = ParallelEnv(3, CountingEnv, create_env_kwargs={"start_high": 1000})
    try:
        assert env.set_seed(5) == 8
        observed = env.reset()["observation"].squeeze(-1).tolist()
    finally:
        env.close()
    expected = []
    for i in range(3):
        single = CountingEnv(start_high=1000)
        single.set_seed(5 + i)
        expected.append(single.reset()["observation"].item())
    assert observed == expected


@pytest.mark.parametrize("shared_memory", [True, False])
def test_partial_reset_contacts_only_the_workers_concerned(shared_memory):
    kwargs = {"max_count": 100, "start_high": 1000}
    env = ParallelEnv(3, CountingEnv, create_env_kwargs=kwargs, shared_memory=shared_memory)
    try:
        td = env.reset()
        for _ in range(3):
            td = env.step(td.set("action", torch.ones(3, 1, dtype=torch.int64)))["next"]
        td = td.exclude("reward")
        td["_reset"] = torch.tensor([[False], [True], [False]])
        out = env.reset(td)
        assert torch.equal(out["observation"][[0, 2]], td["observation"][[0, 2]])
        assert out["observation"][1].item() < 1000
        # The workers of sub-envs 0 and 2 kept their count: stepping continues from it.
        nxt = env.step(out.set("action", torch.ones(3, 1, dtype=torch.int64)))["next"]
        assert torch.equal(nxt["observation"][[0, 2]], td["observation"][[0, 2]] + 1)
    finally:
        env.close()


def test_the_parent_builds_one_env_only():
    built_here.clear()
    env = ParallelEnv(3, counted_env)
    try:
        assert built_here == [os.getpid()]
        assert env.rollout(3).batch_size[0] == 3
    finally:
        env.close()


def test_workers_limit_torch_threads():
    for threads in (1, 2):
        env = ParallelEnv(2, ThreadsEnv, num_sub_threads=threads)
        try:
            assert env.reset()["observation"].flatten().tolist() == [threads, threads]
        finally:
            env.close()


def test_num_threads_sets_the_parent_threads():
    before = torch.get_num_threads()
    try:
        env = ParallelEnv(1, CountingEnv, num_threads=1)
        env.close()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_worker_error_is_raised_with_its_type_and_traceback():
    env = ParallelEnv(2, FailingEnv, create_env_kwargs=[{}, {"fail_at": 1}])
    try:
        td = env.reset()
        td = env.step(td.set("action", torch.ones(2, 1, dtype=torch.int64)))["next"]
        with pytest.raises(ValueError, match=r"worker 1 raised ValueError while stepping: count"):
            env.step(td.set("action", torch.ones(2, 1, dtype=torch.int64)))
        # The workers live on: a reset and a step with action 0 work.
        td = env.reset()
        env.step(td.set("action", torch.zeros(2, 1, dtype=torch.int64)))
    finally:
        env.close()


def test_killed_worker_raises_instead_of_hanging():
    env = ParallelEnv(2, CountingEnv)
    td = env.reset()
    victim = env._pool.processes[0]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(timeout=10)
    with pytest.raises(RuntimeError, match=r"worker 0 \(pid \d+\) died with exit code -9 while"):
        env.rand_step(td)
    assert env.is_closed
    assert not any(p.is_alive() for p in env._pool.processes)
    with pytest.raises(RuntimeError, match="the env is closed"):
        env.rand_step(td)


class SlowStepEnv(CountingEnv):
    def _step(self, tensordict):
        time.sleep(0.02)
        return super()._step(tensordict)


def test_worker_killed_during_a_rollout_is_reported_within_3_s():
    # A random rollout runs inside the workers: the survivor is busy for its whole rollout
    # (~8 s) and cannot read a close message; the death must be raised without waiting for it.
    env = ParallelEnv(2, SlowStepEnv)
    processes = list(env._pool.processes)
    killed_at = []

    def kill_worker_1():
        time.sleep(0.5)
        killed_at.append(time.monotonic())
        os.kill(processes[1].pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_worker_1)
    killer.start()
    try:
        with pytest.raises(RuntimeError, match=r"worker 1 \(pid \d+\) died with exit code -9"):
            env.rollout(400, break_when_any_done=False)
        elapsed = time.monotonic() - killed_at[0]
    finally:
        killer.join()
        env.close()
    assert elapsed < 3.0, f"the death was reported {elapsed:.1f} s after the SIGKILL"
    assert not any(p.is_alive() for p in processes)
    # The survivor was terminated and unwound (closing its env): SystemExit(128 + SIGTERM).
    assert processes[0].exitcode == 128 + signal.SIGTERM


def test_worker_dying_while_building_its_env():
    with pytest.raises(
        RuntimeError, match=r"worker \d \(pid \d+\) died with exit code 3 while building"
    ):
        ParallelEnv(2, exit_in_worker)


def test_workers_with_different_specs_are_rejected():
    def bigger():
        return CountingEnv(batch_size=[2])

    with pytest.raises(ValueError, match=r"the env of worker 1 \(CountingEnv\) has batch_size"):
        ParallelEnv(2, [CountingEnv, bigger])


def test_timeout_on_a_stuck_worker():
    env = ParallelEnv(1, SleepyEnv, timeout=0.5)
    td = env.reset()
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"worker 0 \(pid \d+\) did not answer within 0.5 s"):
        env.rand_step(td)
    assert env.is_closed
    # A stuck worker is terminated, not waited for.
    assert time.monotonic() - start < 2.5


def test_close_joins_every_worker():
    env = ParallelEnv(2, CountingEnv)
    processes = list(env._pool.processes)
    env.close()
    env.close()
    assert env.is_closed
    assert [p.exitcode for p in processes] == [0, 0]


def test_garbage_collection_stops_the_workers():
    env = ParallelEnv(2, CountingEnv)
    processes = list(env._pool.processes)
    del env
    gc.collect()
    assert not any(p.is_alive() for p in processes)


def test_argument_errors():
    with pytest.raises(ValueError, match="expected num_sub_threads >= 1, got 0"):
        ParallelEnv(2, CountingEnv, num_sub_threads=0)
    with pytest.raises(ValueError, match="expected num_threads >= 1, got 0"):
        ParallelEnv(2, CountingEnv, num_threads=0)
    with pytest.raises(ValueError, match="expected timeout > 0 or None, got 0"):
        ParallelEnv(2, CountingEnv, timeout=0)
    with pytest.raises(ValueError, match="mp_start_method 'telepathy' is not available"):
        ParallelEnv(2, CountingEnv, mp_start_method="telepathy")
    with pytest.raises(ValueError, match="expected num_workers >= 1, got -1"):
        ParallelEnv(-1, CountingEnv)


def test_default_start_method():
    assert default_start_method() in multiprocessing.get_all_start_methods()
    if not torch.cuda.is_initialized() and "fork" in multiprocessing.get_all_start_methods():
        assert default_start_method() == "fork"


def test_nested_entries_travel_through_shared_memory():
    class NestedEnv(CountingEnv):
        def __init__(self):
            super().__init__(max_count=100)
            self.observation_spec = Composite(
                observation=Unbounded(shape=(1,)), extra=Composite(twice=Unbounded(shape=(1,)))
            )

        def _reset(self, tensordict, **kwargs):
            td = super()._reset(tensordict)
            return td.set(("extra", "twice"), td["observation"] * 2)

        def _step(self, tensordict):
            out = super()._step(tensordict)
            return out.set(("extra", "twice"), out["observation"] * 2)

    env = ParallelEnv(2, NestedEnv)
    try:
        check_env_specs(env)
        traj = env.rollout(4, break_when_any_done=False)
        assert torch.equal(traj["next", "extra", "twice"], 2 * traj["next", "observation"])
    finally:
        env.close()


@pytest.mark.slow
def test_spawn_start_method_with_a_lambda():
    env = ParallelEnv(
        2, EnvCreator(lambda: CountingEnv(max_count=3, start_high=2)), mp_start_method="spawn"
    )
    try:
        assert env.mp_start_method == "spawn"
        check_env_specs(env)
        assert env.rollout(5, break_when_any_done=False).batch_size == (2, 5)
    finally:
        env.close()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_outputs_on_cuda():
    env = ParallelEnv(2, CountingEnv, create_env_kwargs={"start_high": 3}, device="cuda")
    try:
        check_env_specs(env)
        traj = env.rollout(10, break_when_any_done=False)
        assert traj["next", "observation"].device.type == "cuda"
    finally:
        env.close()


class TextEnv(CountingEnv):
    def __init__(self):
        super().__init__(max_count=100)
        self.observation_spec = Composite(observation=Unbounded(shape=(1,)), text=NonTensor())

    def _reset(self, tensordict, **kwargs):
        return super()._reset(tensordict).set_non_tensor("text", "start")

    def _step(self, tensordict):
        return super()._step(tensordict).set_non_tensor("text", "step")


def test_non_tensor_entries_need_pipes():
    with pytest.raises(ValueError, match=r"the entry \('text',\) holds NonTensorData values"):
        ParallelEnv(2, TextEnv)
    env = ParallelEnv(2, TextEnv, shared_memory=False)
    try:
        td = env.rand_step(env.reset())
        assert td["next", "text"] == ["step", "step"]
    finally:
        env.close()


def _gym_cartpole(num_envs=0):
    pytest.importorskip("gymnasium")
    from rl_envs.libs import GymEnv

    return GymEnv("CartPole-v1", num_envs=num_envs)


class TestParallelGymConformance(EnvConformanceSuite):
    def make_env(self):
        return ParallelEnv(2, _gym_cartpole)


def test_gym_vector_envs_in_workers_match_serial_env():
    parallel = ParallelEnv(2, _gym_cartpole, create_env_kwargs={"num_envs": 3})
    serial = SerialEnv(2, _gym_cartpole, create_env_kwargs={"num_envs": 3})
    try:
        assert parallel.batch_size == (2, 3)
        torch.manual_seed(0)
        actions = [parallel.rand_action() for _ in range(40)]
        trajectories = []
        for env in (parallel, serial):
            env.set_seed(0)
            replay = iter(actions)

            def policy(td, replay=replay):
                return td.update(next(replay))

            trajectories.append(env.rollout(40, policy, break_when_any_done=False))
        a, b = trajectories
        assert a["next", "done"].any()
        assert (a == b).all()
    finally:
        parallel.close()


def test_random_rollout_runs_in_the_workers_with_their_own_random_streams():
    env = ParallelEnv(2, CountingEnv, create_env_kwargs={"max_count": 5})
    try:
        env.set_seed(0)
        first = env.rollout(30, break_when_any_done=False)
        assert first.batch_size == (2, 30)
        assert env._stale_roots
        # Each worker draws its own actions (forked workers do not share the parent's stream).
        assert not torch.equal(first["action"][0], first["action"][1])
        env.set_seed(0)
        assert (env.rollout(30, break_when_any_done=False) == first).all()
    finally:
        env.close()


def test_worker_rollouts_do_not_reset_after_their_last_step():
    # As TorchRL and the generic loop: a sub-env finishing on the last step keeps its state.
    env = ParallelEnv(2, IncrementingEnv, create_env_kwargs={"max_steps": 4})
    try:
        traj = env.rollout(5, break_when_any_done=False)
        assert env._stale_roots  # the rollout ran inside the workers
        assert traj["next", "done"][:, -1].flatten().tolist() == [True, True]
        root = env.step_mdp_plan()(traj[:, -1])
        more = env.rollout(1, auto_reset=False, tensordict=root, break_when_any_done=False)
        assert more["next", "observation"].flatten().tolist() == [6, 6]
    finally:
        env.close()


def test_steps_and_partial_resets_after_a_worker_rollout_start_from_the_callers_root():
    env = ParallelEnv(2, CountingEnv, create_env_kwargs={"max_count": 100})
    try:
        env.set_seed(0)
        traj = env.rollout(4, break_when_any_done=False)
        root = traj[:, -1].get("next").select("observation", "done", "terminated", "truncated")
        root.set("observation", torch.tensor([[50.0], [60.0]]))
        stepped = env.step(root.clone().set("action", torch.ones(2, 1, dtype=torch.int64)))
        assert not env._stale_roots
        # CountingEnv is stateless: the count comes from the root the caller passed.
        assert stepped.get(("next", "observation")).flatten().tolist() == [51.0, 61.0]
        traj = env.rollout(3, break_when_any_done=False)
        td = traj[:, -1].exclude("next").clone()
        td.set("_reset", torch.tensor([[True], [False]]))
        out = env.reset(td)
        assert out["observation"][1].item() == td["observation"][1].item()
        assert not env._stale_roots
    finally:
        env.close()


def _serial_of_shaped_gym_envs():
    from rl_envs.libs import GymEnv

    class ShapedCartPole(GymEnv):
        def _step(self, tensordict):
            out = super()._step(tensordict)
            out["reward"] = out["reward"] * 10.0 + 1.0
            return out

    return SerialEnv(2, lambda: ShapedCartPole("CartPole-v1"))


def test_parallel_over_serial_runs_the_sub_envs_step_override():
    # Regression: the workers' direct gymnasium path stepped the regrouped gymnasium envs and
    # skipped the subclass's _step (raw reward 1.0 instead of the shaped 11.0).
    pytest.importorskip("gymnasium")
    env = ParallelEnv(2, _serial_of_shaped_gym_envs)
    try:
        td = env.reset()
        for _ in range(5):
            td, root = env.step_and_maybe_reset(env.rand_action(td))
            assert (td["next", "reward"] == 11.0).all()
            td = root
        assert (env.rollout(5, break_when_any_done=False)["next", "reward"] == 11.0).all()
    finally:
        env.close()
