"""RayEvalWorker on a real local Ray instance."""

import sys
from functools import partial

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from testkit.ray_cluster import local_ray_cluster
from torch import nn

from rl_collectors.distributed import RayEvalWorker
from rl_core.testing import CountingEnv

pytestmark = pytest.mark.ray

make = partial(CountingEnv, max_count=4, batch_size=[2])


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rlc-ray-", skip_reason='pip install "rl-collectors[ray]"') as ray:
        # pytest's importlib mode imports this module under a name Ray's workers cannot
        # import: its functions and classes travel by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


def linear_policy(env):
    """action = bias (weight 0): CountingEnv adds it to the count, so the weights decide
    when an episode ends (count 4)."""
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])


def bias(value):
    return TensorDict({"module": {"weight": torch.zeros(1, 1), "bias": torch.full((1,), value)}})


def test_rollouts_run_the_submitted_weights(ray_cluster):
    worker = RayEvalWorker(None, make, linear_policy, num_gpus=0, name="rlc-eval")
    try:
        assert worker.poll() is None  # nothing submitted
        worker.submit(bias(1.0), max_steps=10)
        result = worker.poll(timeout=120)
        # count 0 -> 4 in 4 steps of +1, reward 1 per step: done at step 4
        assert result["steps"] == 4
        assert result["episode_reward"] == 4.0
        assert result["reward"] == 1.0
        assert result["frames"] is None  # CountingEnv does not render
        # Another handle on the named actor; weights that never end an episode.
        other = RayEvalWorker.from_name("rlc-eval")
        other.submit(bias(0.0), max_steps=10)
        assert other.poll(timeout=120)["steps"] == 10
        with pytest.raises(ValueError, match="expected max_steps as an int >= 1, got 0"):
            worker.submit(None, max_steps=0)
    finally:
        worker.shutdown()
    with pytest.raises(ValueError, match="no Ray actor named 'rlc-eval'"):
        RayEvalWorker.from_name("rlc-eval")
    with pytest.raises(RuntimeError, match="the worker was shut down"):
        worker.submit(None, max_steps=3)


def test_a_killed_actor_is_named(ray_cluster):
    worker = RayEvalWorker(None, make, linear_policy, num_gpus=0, name="rlc-eval-killed")
    worker.submit(bias(1.0), max_steps=10)
    assert worker.poll(timeout=120)["steps"] == 4
    ray_cluster.kill(worker._actor)
    worker.submit(bias(1.0), max_steps=10)
    with pytest.raises(RuntimeError, match="evaluation actor named 'rlc-eval-killed' died"):
        worker.poll(timeout=30)
    worker.shutdown()


def test_bad_makers_are_named():
    with pytest.raises(TypeError, match="expected policy_maker as a callable"):
        RayEvalWorker(None, make, "policy", num_gpus=0)
    with pytest.raises(TypeError, match="expected init_fn to be callable, got 3"):
        RayEvalWorker(3, make, linear_policy, num_gpus=0)
