import os
import signal
import threading
import time
from functools import partial

import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors import Evaluator
from rl_core import ExplorationType
from rl_core.testing import CountingEnv


def bias_policy(bias=0.0):
    """action = bias (weight 0): CountingEnv adds the action to the count."""
    layer = nn.Linear(1, 1)
    nn.init.zeros_(layer.weight)
    nn.init.constant_(layer.bias, bias)
    return TensorDictModule(layer, in_keys=["observation"], out_keys=["action"])


def split_policy(td):
    """Sub-env 0 counts up (action 1), sub-env 1 stands still (action 0)."""
    return td.set("action", torch.tensor([[1], [0]]))


class SlowEnv(CountingEnv):
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        time.sleep(0.02)
        return super()._step(tensordict)


class FailingEnv(CountingEnv):
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        raise ValueError("FailingEnv: stepping fails")


class Scalars:
    """Any object with log_scalar works as the logger."""

    def __init__(self):
        self.logged = []

    def log_scalar(self, name, value, step=None):
        self.logged.append((name, value, step))


def test_metrics_match_hand_computed_episodes():
    # Sub-env 0 ends an episode every 2 steps (count reaches 2, return 2); sub-env 1 never
    # terminates and is truncated at max_steps=5 (return 5). Episodes end at steps 2 (env 0),
    # 4 (env 0), 5 (env 1), 6 (env 0): the first four returns are [2, 2, 5, 2].
    returns = [2.0, 2.0, 5.0, 2.0]
    lengths = [2, 2, 5, 2]
    logger, seen = Scalars(), []
    evaluator = Evaluator(
        partial(CountingEnv, max_count=2, batch_size=[2]),
        split_policy,
        num_trajectories=4,
        max_steps=5,
        log_prefix="test",
        metrics_fn=lambda episodes: {"longest": episodes["episode_length"].max()},
        on_result=seen.append,
        logger=logger,
    )
    result = evaluator.evaluate(step=7)
    evaluator.shutdown()
    assert float(result["test/reward"]) == pytest.approx(sum(returns) / 4)
    assert float(result["test/reward_min"]) == 2.0
    assert float(result["test/reward_max"]) == 5.0
    assert float(result["test/episode_length"]) == pytest.approx(sum(lengths) / 4)
    assert int(result["test/num_episodes"]) == 4
    assert int(result["test/longest"]) == 5
    assert int(result["test/step"]) == 7
    assert seen == [result]
    names = {name for name, _, _ in logger.logged}
    assert "test/reward" in names
    assert "test/step" not in names
    assert all(step == 7 for _, _, step in logger.logged)


def test_weights_are_copied_into_the_evaluation_policy():
    own = bias_policy(0.0)
    evaluator = Evaluator(partial(CountingEnv, max_count=3), own, num_trajectories=2, max_steps=10)
    # Action 0 never reaches max_count: episodes are truncated at 10 steps.
    assert float(evaluator.evaluate()["eval/reward"]) == 10.0
    trained = bias_policy(1.0)
    assert float(evaluator.evaluate(weights=trained)["eval/reward"]) == 3.0
    assert float(own.module.bias.detach()) == 1.0  # the evaluator's policy holds the weights now
    with pytest.raises(RuntimeError, match="shut down"):
        evaluator.shutdown() or evaluator.evaluate()


def test_background_evaluation_poll_wait_and_busy_policies():
    evaluator = Evaluator(partial(SlowEnv, max_count=5), None, num_trajectories=2, max_steps=5)
    assert evaluator.poll() is None
    assert evaluator.trigger_eval(step=1)
    assert evaluator.pending
    assert not evaluator.trigger_eval(step=2)  # skipped: one is running
    assert evaluator.poll() is None
    result = evaluator.wait(timeout=30)
    assert int(result["eval/step"]) == 1
    assert not evaluator.pending
    assert evaluator.poll() is None  # collected once
    evaluator.shutdown()
    strict = Evaluator(partial(SlowEnv, max_count=5), None, num_trajectories=2, busy_policy="error")
    strict.trigger_eval()
    with pytest.raises(RuntimeError, match="still running"):
        strict.trigger_eval()
    with pytest.raises(RuntimeError, match="still running"):
        strict.evaluate()
    strict.wait(timeout=30)
    strict.shutdown()


def test_errors_reach_the_caller():
    evaluator = Evaluator(FailingEnv, None, num_trajectories=1)
    with pytest.raises(RuntimeError, match="FailingEnv: stepping fails"):
        evaluator.evaluate()
    evaluator.shutdown()


def test_process_backend_evaluates_in_a_child_process():
    own = bias_policy(0.0)
    evaluator = Evaluator(
        partial(CountingEnv, max_count=3),
        own,
        num_trajectories=2,
        max_steps=4,
        backend="process",
    )
    try:
        assert float(evaluator.evaluate()["eval/reward"]) == 4.0
        trained = TensorDict.from_module(bias_policy(1.0)).data
        assert float(evaluator.evaluate(weights=trained, step=3)["eval/reward"]) == 3.0
        # The process, not this one, ran it: kill it and the next evaluation says so.
        os.kill(evaluator._runner.process.pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="died with exit code"):
            evaluator.evaluate()
    finally:
        evaluator.shutdown()


def test_process_backend_reports_the_child_traceback():
    evaluator = Evaluator(FailingEnv, None, num_trajectories=1, backend="process")
    with pytest.raises(RuntimeError, match="FailingEnv: stepping fails"):
        evaluator.evaluate()
    evaluator.shutdown()


def _unbuildable_env():
    raise ValueError("this env cannot be built")


def test_process_backend_reports_an_env_that_cannot_be_built():
    # The child's setup fails before its loop: the error answers the first call.
    evaluator = Evaluator(_unbuildable_env, None, num_trajectories=1, backend="process")
    with pytest.raises(RuntimeError, match="this env cannot be built"):
        evaluator.evaluate()
    evaluator.shutdown()


def _shutdown_within(evaluator, grace, limit):
    """Runs ``evaluator.shutdown(grace)`` in a thread; its duration, or None if it blocks
    past ``limit`` seconds."""
    start = time.monotonic()
    closer = threading.Thread(target=evaluator.shutdown, args=(grace,), daemon=True)
    closer.start()
    closer.join(limit)
    return None if closer.is_alive() else time.monotonic() - start


@pytest.mark.parametrize("backend", ["process", "thread"])
def test_shutdown_stops_an_evaluation_whose_episodes_never_end(backend):
    # Random actions add 0.5 a step on average: a count of 10**9 is never reached.
    evaluator = Evaluator(partial(SlowEnv, max_count=10**9), None, backend=backend)
    child = evaluator._runner.process if backend == "process" else None
    try:
        assert evaluator.trigger_eval()
        time.sleep(0.3)  # the evaluation is under way
        took = _shutdown_within(evaluator, 0.5, limit=10.0)
        assert took is not None, "shutdown() blocked"
        assert took < 0.5 + 3.0
        with pytest.raises(RuntimeError, match="stopped by"):
            evaluator.wait(timeout=5)
        assert not evaluator._thread.is_alive()
        if child is not None:
            assert not child.is_alive()
            assert child.exitcode == -signal.SIGKILL
    finally:
        if child is not None and child.is_alive():
            child.kill()
            child.join()


def test_shutdown_lets_a_running_evaluation_finish_within_grace():
    evaluator = Evaluator(partial(SlowEnv, max_count=3), None, num_trajectories=1, max_steps=5)
    assert evaluator.trigger_eval(step=4)
    evaluator.shutdown(grace=30.0)
    assert int(evaluator.wait(timeout=0)["eval/step"]) == 4


@pytest.mark.parametrize("grace", [-1.0, float("nan"), float("inf"), "5", True])
def test_shutdown_grace_is_validated(grace):
    evaluator = Evaluator(CountingEnv, num_trajectories=1)
    with pytest.raises(ValueError, match=r"shutdown: expected grace as a finite number .* got"):
        evaluator.shutdown(grace)
    evaluator.shutdown()


def _not_an_env():
    return "not an env"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"backend": "monarch"}, ValueError, "expected backend in .* got 'monarch'"),
        ({"busy_policy": "queue"}, ValueError, "expected busy_policy in .* got 'queue'"),
        ({"num_trajectories": 0}, ValueError, "expected num_trajectories as an int >= 1, got 0"),
        (
            {"num_trajectories": 2.0},
            ValueError,
            "expected num_trajectories as an int >= 1, got 2.0",
        ),
        ({"max_steps": 0}, ValueError, "expected max_steps as an int >= 1, got 0"),
        ({"max_steps": -3}, ValueError, "expected max_steps as an int >= 1, got -3"),
        ({"max_steps": 2.5}, ValueError, "expected max_steps as an int >= 1, got 2.5"),
        ({"env": 3}, TypeError, "expected env as an EnvBase or a callable .* got int"),
        ({"policy": "greedy"}, TypeError, "expected policy as a callable or None, got str"),
        ({"policy_factory": 1}, TypeError, "expected policy_factory as a callable .* got int"),
        ({"metrics_fn": {}}, TypeError, "expected metrics_fn as a callable .* got dict"),
        ({"on_result": []}, TypeError, "expected on_result as a callable .* got list"),
        ({"init_fn": 0}, TypeError, "expected init_fn as a callable or None, got int"),
        ({"log_prefix": ""}, ValueError, "expected log_prefix as a non-empty str.* got ''"),
        ({"log_prefix": 7}, TypeError, "expected log_prefix as a str, got int"),
        ({"reward_keys": None}, TypeError, "expected reward_keys as a key .* got NoneType"),
        (
            {"reward_keys": ["r", "s"]},
            ValueError,
            r"expected reward_keys as one key, got \['r', 's'\]",
        ),
        ({"reward_keys": 5}, TypeError, "expected reward_keys as a key .* got int"),
        ({"reward_keys": [5]}, TypeError, "reward_keys must be a key .* got 5"),
        ({"done_keys": []}, ValueError, r"expected done_keys as one key, got \[\]"),
        (
            {"exploration_type": "greedy"},
            ValueError,
            "expected exploration_type as an .* got 'greedy'",
        ),
        ({"num_gpus": -1}, ValueError, "expected num_gpus as a number >= 0, got -1"),
        ({"num_gpus": "1"}, ValueError, "expected num_gpus as a number >= 0, got '1'"),
        ({"ray_kwargs": ["num_cpus"]}, TypeError, "expected ray_kwargs as a dict .* got list"),
        ({"logger": object()}, TypeError, "expected logger to have a log_scalar.* got object"),
    ],
)
def test_each_bad_argument_is_refused_at_construction_naming_it(kwargs, error, match):
    kwargs = {"env": CountingEnv, **kwargs}
    with pytest.raises(error, match=f"^Evaluator: {match}"):
        Evaluator(**kwargs)


def test_bad_arguments():
    with pytest.raises(TypeError, match="not both"):
        Evaluator(CountingEnv, bias_policy(), policy_factory=bias_policy)
    with pytest.raises(TypeError, match="expected an env factory"):
        Evaluator(CountingEnv(), backend="process")
    # A factory that returns something else is reported when it is called.
    evaluator = Evaluator(_not_an_env, num_trajectories=1)
    with pytest.raises(RuntimeError, match="expected create_env_fn to be an EnvBase"):
        evaluator.evaluate()
    evaluator.shutdown()


def test_exploration_type_by_name():
    evaluator = Evaluator(CountingEnv, exploration_type="random")
    assert evaluator.exploration_type is ExplorationType.RANDOM
    evaluator.shutdown()
