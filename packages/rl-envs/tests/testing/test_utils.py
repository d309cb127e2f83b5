"""rl_envs.testing's helpers: device and seed lists, retry, temporary globals, log capture."""

import logging
import types

import pytest
import torch
from tensordict import TensorDict

from rl_envs.testing import (
    CARTPOLE_VERSIONED,
    PENDULUM_VERSIONED,
    capture_log_records,
    generate_seeds,
    get_available_devices,
    get_default_devices,
    make_tc,
    retry,
    rollout_consistency_assertion,
    set_global_var,
)
from rl_envs.testing.fixtures import dtype_fixture  # noqa: F401  (a fixture used below)


def test_device_lists():
    assert get_available_devices()[0] == torch.device("cpu")
    assert len(get_available_devices()) == 1 + torch.cuda.device_count()
    if not torch.cuda.is_available():
        assert get_default_devices() == [torch.device("cpu")]


def test_generate_seeds_is_deterministic_and_starts_at_the_seed():
    seeds = generate_seeds(7, 4)
    assert seeds[0] == 7
    assert len(set(seeds)) == 4
    assert seeds == generate_seeds(7, 4)
    with pytest.raises(ValueError, match="repeat >= 1, got 0"):
        generate_seeds(7, 0)


def test_retry_calls_again_then_raises():
    calls = []

    @retry(KeyError, tries=2, delay=0)
    def always_fails():
        calls.append(1)
        raise KeyError("no")

    with pytest.raises(KeyError):
        always_fails()
    assert len(calls) == 2


def test_set_global_var_restores_on_exit():
    mod = types.SimpleNamespace(X=1)
    seen = []

    def body():
        with set_global_var(mod, "X", 2):
            seen.append(mod.X)
            raise RuntimeError

    with pytest.raises(RuntimeError):
        body()
    assert seen == [2]
    assert mod.X == 1
    with pytest.raises(AttributeError, match="has no variable 'Y'"):
        set_global_var(mod, "Y", 2).__enter__()


def test_capture_log_records_keeps_matching_names():
    records = []
    handler = capture_log_records(records, "h59.test", "h59.test.keep")
    try:
        logging.getLogger("h59.test.keep").warning("kept")
        logging.getLogger("h59.test.other").warning("dropped")
    finally:
        logging.getLogger("h59.test").removeHandler(handler)
    assert [r.getMessage() for r in records] == ["kept"]


def test_make_tc_builds_a_tensorclass_of_the_keys():
    td = TensorDict(a=torch.zeros(2, 3), b=torch.ones(2), batch_size=[2])
    tc = make_tc(td)(**td, batch_size=[2])
    assert tc.a.shape == (2, 3)
    assert tc.b.tolist() == [1.0, 1.0]


def test_versioned_gym_ids_for_gymnasium():
    gymnasium = pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')
    major_minor = tuple(int(p) for p in gymnasium.__version__.split(".")[:2])
    assert PENDULUM_VERSIONED() == "Pendulum-v1"
    assert CARTPOLE_VERSIONED() == "CartPole-v1"
    gymnasium.make(PENDULUM_VERSIONED()).close()
    if major_minor >= (1, 1):
        from rl_envs.testing import CLIFFWALKING_VERSIONED, HALFCHEETAH_VERSIONED

        assert (HALFCHEETAH_VERSIONED(), CLIFFWALKING_VERSIONED()) == (
            "HalfCheetah-v5",
            "CliffWalking-v1",
        )


@pytest.mark.usefixtures("dtype_fixture")
def test_dtype_fixture_sets_double():
    assert torch.get_default_dtype() == torch.float64


def test_rollout_consistency_assertion_catches_a_broken_carry_over():
    obs = torch.arange(4.0).reshape(1, 4, 1)
    rollout = TensorDict(
        {
            "observation": obs,
            "next": {"observation": obs + 1, "done": torch.zeros(1, 4, 1, dtype=torch.bool)},
        },
        batch_size=[1, 4],
    )
    rollout_consistency_assertion(rollout)
    rollout["observation"][0, 2] = 7.0
    with pytest.raises(AssertionError, match="does not start where the step ended"):
        rollout_consistency_assertion(rollout)
