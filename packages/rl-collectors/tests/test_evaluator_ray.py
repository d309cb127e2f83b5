import os
import signal
import sys
import threading
import time
from functools import partial

import pytest
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from testkit.ray_cluster import local_ray_cluster
from torch import nn

from rl_collectors import Evaluator
from rl_core.testing import CountingEnv

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rlc-eval-ray-", skip_reason='pip install "rl-collectors[ray]"') as ray:
        # pytest's importlib mode imports this module under a name Ray's workers cannot
        # import: its functions and classes travel by value
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        yield ray


def bias_policy(bias=0.0):
    """action = bias (weight 0): CountingEnv adds the action to the count."""
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.constant_(layer.bias, bias)
    return TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])


class FailingEnv(CountingEnv):
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise ValueError("FailingEnv: stepping fails")


def test_ray_backend_evaluates_in_an_actor_and_reports_its_death(ray_cluster):
    evaluator = Evaluator(
        partial(CountingEnv, max_count=3),
        policy_factory=bias_policy,
        num_trajectories=2,
        max_steps=4,
        backend="ray",
        num_gpus=0,
    )
    try:
        # action 0 never reaches max_count=3: both episodes are truncated at 4 steps
        assert float(evaluator.evaluate()["eval/reward"]) == 4.0
        trained = TensorDict.from_module(bias_policy(1.0)).data
        result = evaluator.evaluate(weights=trained, step=3)
        assert float(result["eval/reward"]) == 3.0  # 1 per step, done at count 3
        assert int(result["eval/step"]) == 3
        assert evaluator.trigger_eval(step=4)
        assert int(evaluator.wait(timeout=60)["eval/step"]) == 4
        actor = evaluator._runner.actor
        pid = ray_cluster.get(actor.__ray_call__.remote(lambda self: os.getpid()))
        assert pid != os.getpid()
        os.kill(pid, signal.SIGKILL)  # the actor this test started
        with pytest.raises(RuntimeError, match="Ray actor died"):
            evaluator.evaluate()
    finally:
        evaluator.shutdown()


def test_ray_backend_errors_and_gpu_request(ray_cluster):
    evaluator = Evaluator(FailingEnv, None, num_trajectories=1, backend="ray", num_gpus=0)
    try:
        with pytest.raises(RuntimeError, match="FailingEnv: stepping fails"):
            evaluator.evaluate()
    finally:
        evaluator.shutdown()
    # more GPUs than the cluster has (TorchRL's default of 1 on a CPU-only cluster) is
    # refused instead of leaving the actor waiting for them forever
    more = int(ray_cluster.cluster_resources().get("GPU", 0)) + 1
    with pytest.raises(ValueError, match=rf"num_gpus={more} .*Pass num_gpus=0"):
        Evaluator(CountingEnv, None, backend="ray", num_gpus=more)
    with pytest.raises(TypeError, match="expected an env factory"):
        Evaluator(CountingEnv(), backend="ray", num_gpus=0)


class SlowEnv(CountingEnv):
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        time.sleep(0.02)
        return super()._step(tensordict)


def test_ray_backend_shutdown_stops_an_evaluation_whose_episodes_never_end(ray_cluster):
    # Random actions add 0.5 a step on average: a count of 10**9 is never reached.
    evaluator = Evaluator(partial(SlowEnv, max_count=10**9), None, backend="ray", num_gpus=0)
    actor = evaluator._runner.actor
    try:
        assert evaluator.trigger_eval()
        time.sleep(1.0)  # the evaluation is under way in the actor
        start = time.monotonic()
        closer = threading.Thread(target=evaluator.shutdown, args=(0.5,), daemon=True)
        closer.start()
        closer.join(20.0)
        assert not closer.is_alive(), "shutdown() blocked"
        assert time.monotonic() - start < 0.5 + 5.0
        with pytest.raises(RuntimeError, match="stopped by"):
            evaluator.wait(timeout=5)
        with pytest.raises(ray_cluster.exceptions.RayActorError):
            ray_cluster.get(actor.__ray_call__.remote(lambda self: 1), timeout=10)
    finally:
        ray_cluster.kill(actor)
