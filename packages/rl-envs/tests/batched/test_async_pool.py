from functools import partial

import pytest
import torch

from rl_core import step_mdp
from rl_core.envs import check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.batched import AsyncEnvPool, ProcessorAsyncEnvPool, SerialEnv, ThreadingAsyncEnvPool

pytest.importorskip("gymnasium", reason='needs gymnasium: pip install "rl-envs[gymnasium]"')
from rl_envs.libs import GymEnv

POOLS = [ThreadingAsyncEnvPool, ProcessorAsyncEnvPool]
cartpole = partial(GymEnv, "CartPole-v1")


def no_index(td):
    return td.exclude("env_index", ("next", "env_index"))


@pytest.fixture(params=POOLS, ids=["threads", "processes"])
def pool(request):
    env = request.param(cartpole, 3)
    yield env
    env.close()


def test_rollouts_equal_the_same_envs_stepped_serially(pool):
    serial = SerialEnv(3, cartpole, vectorize=False)
    check_env_specs(pool)
    trajectories = []
    assert pool.set_seed(7) == serial.set_seed(7)
    for env in (pool, serial):
        env.set_seed(7)
        torch.manual_seed(0)  # the same random actions
        # 80 steps: several episodes end and are reset in place (partial resets).
        trajectories.append(env.rollout(80, break_when_any_done=False))
    serial.close()
    got, want = trajectories
    assert got["next", "done"].any()
    assert got["env_index"].tolist() == [[i] * 80 for i in range(3)]
    assert (no_index(got) == want).all()


def test_async_steps_return_the_envs_that_were_sent_in_env_order(pool):
    serial = SerialEnv(3, cartpole, vectorize=False)
    pool.set_seed(3)
    serial.set_seed(3)
    start = pool.reset()
    expected_start = serial.reset()
    assert (no_index(start) == expected_start).all()
    actions = torch.tensor([[1, 0], [0, 1], [1, 0]])  # one-hot, per env
    start["action"] = actions
    pool.async_step_send(start[[2, 0]])  # any order, a subset
    with pytest.raises(RuntimeError, match=r"envs \[0\] are still busy"):
        pool.async_step_send(start[[0]])
    out = pool.async_step_recv(min_get=2)
    assert out["env_index"].tolist() == [0, 2]
    assert out["next", "env_index"].tolist() == [0, 2]
    # The oracle: the same gymnasium envs stepped one by one.
    for row, i in zip(out.unbind(0), [0, 2]):
        sub = serial._envs[i]
        want = sub.step(expected_start[i].clone().set("action", actions[i]))
        assert torch.equal(row["next", "observation"], want["next", "observation"])
        assert torch.equal(row["next", "reward"], want["next", "reward"])
    # One env received on its own (env_index=), the other stays in flight meanwhile.
    following = step_mdp(out)  # env_index is carried to the next root
    following["action"] = actions[[0, 2]]
    pool.async_step_send(following)
    one = pool.async_step_recv(env_index=2)
    assert one["env_index"].tolist() == [2]
    rest = pool.async_step_recv(min_get=1)
    assert rest["env_index"].tolist() == [0]
    serial.close()


def test_reset_of_some_envs_and_a_single_env_send():
    pool = ThreadingAsyncEnvPool(partial(CountingEnv, max_count=5), 3)
    try:
        td = pool.reset()
        td["action"] = torch.ones(3, 1, dtype=torch.long)
        pool.async_step_send(td[1], env_index=1)  # one env's unstacked data
        stepped = pool.async_step_recv()
        assert stepped["next", "observation"].tolist() == [[1.0]]
        pool.async_reset_send(env_index=[1])
        fresh = pool.async_reset_recv(min_get=1)
        assert fresh["env_index"].tolist() == [1]
        assert fresh["observation"].tolist() == [[0.0]]
    finally:
        pool.close()


def test_bad_calls_are_named():
    with pytest.raises(TypeError, match="abstract class AsyncEnvPool"):
        AsyncEnvPool(CountingEnv, 2)
    with pytest.raises(ValueError, match="expected stack in"):
        ThreadingAsyncEnvPool(CountingEnv, 2, stack="ragged")
    pool = ThreadingAsyncEnvPool(CountingEnv, 2)
    try:
        td = pool.reset()
        td["action"] = torch.ones(2, 1, dtype=torch.long)
        with pytest.raises(ValueError, match=r"expected env indices in \[0, 2\), got \[0, 5\]"):
            pool.async_step_send(td, env_index=[0, 5])
        with pytest.raises(KeyError, match='expected an "env_index" entry'):
            pool.async_step_send(td.exclude("env_index"))
        with pytest.raises(RuntimeError, match="cannot wait for 1 envs, 0 have a step"):
            pool.async_step_recv(min_get=1)
        pool.async_step_send(td)
        with pytest.raises(RuntimeError, match=r"step: envs \[0, 1\] have asynchronous calls"):
            pool.step(td)
        pool.async_step_recv(min_get=2)
    finally:
        pool.close()


class BrokenFactory:
    def __call__(self):
        raise ValueError("this env cannot be built")


def test_an_env_that_cannot_be_built_in_its_process_is_named():
    with pytest.raises(RuntimeError, match=r"(?s)env 1 could not be built.*cannot be built"):
        ProcessorAsyncEnvPool([partial(CountingEnv), BrokenFactory()])
