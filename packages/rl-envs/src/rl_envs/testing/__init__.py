"""Mock envs, policies, checks and helpers for users' tests: the counterparts of TorchRL's
``torchrl.testing`` and ``torchrl.testing.mocking_classes`` (built on rl-core's contract).

pytest fixtures (``dtype_fixture``) are in :mod:`rl_envs.testing.fixtures`, which needs pytest.
"""

from rl_envs.testing.assertions import (
    check_rollout_consistency_multikey_env,
    rand_reset,
    rollout_consistency_assertion,
)
from rl_envs.testing.counting import (
    CountingEnv,
    CountingEnvCountModule,
    CountingEnvCountPolicy,
    IncrementingEnv,
)
from rl_envs.testing.gym_names import (
    BREAKOUT_VERSIONED,
    CARTPOLE_VERSIONED,
    CLIFFWALKING_VERSIONED,
    HALFCHEETAH_VERSIONED,
    PENDULUM_VERSIONED,
    PONG_VERSIONED,
)
from rl_envs.testing.mock_envs import (
    ContinuousActionConvMockEnv,
    ContinuousActionConvMockEnvNumpy,
    ContinuousActionVecMockEnv,
    DiscreteActionConvMockEnv,
    DiscreteActionConvMockEnvNumpy,
    DiscreteActionConvPolicy,
    DiscreteActionVecMockEnv,
    DiscreteActionVecPolicy,
)
from rl_envs.testing.nested import MultiKeyCountingEnv, MultiKeyCountingEnvPolicy, NestedCountingEnv
from rl_envs.testing.simple import (
    CountingBatchedEnv,
    EnvThatDoesNothing,
    EnvWithScalarAction,
    MockBatchedLockedEnv,
    MockSerialEnv,
)
from rl_envs.testing.utils import (
    IS_WIN,
    PYTHON_3_9,
    capture_log_records,
    generate_seeds,
    get_available_devices,
    get_default_devices,
    make_tc,
    mp_ctx,
    retry,
    set_global_var,
)

__all__ = [
    "BREAKOUT_VERSIONED",
    "CARTPOLE_VERSIONED",
    "CLIFFWALKING_VERSIONED",
    "HALFCHEETAH_VERSIONED",
    "IS_WIN",
    "PENDULUM_VERSIONED",
    "PONG_VERSIONED",
    "PYTHON_3_9",
    "ContinuousActionConvMockEnv",
    "ContinuousActionConvMockEnvNumpy",
    "ContinuousActionVecMockEnv",
    "CountingBatchedEnv",
    "CountingEnv",
    "CountingEnvCountModule",
    "CountingEnvCountPolicy",
    "DiscreteActionConvMockEnv",
    "DiscreteActionConvMockEnvNumpy",
    "DiscreteActionConvPolicy",
    "DiscreteActionVecMockEnv",
    "DiscreteActionVecPolicy",
    "EnvThatDoesNothing",
    "EnvWithScalarAction",
    "IncrementingEnv",
    "MockBatchedLockedEnv",
    "MockSerialEnv",
    "MultiKeyCountingEnv",
    "MultiKeyCountingEnvPolicy",
    "NestedCountingEnv",
    "capture_log_records",
    "check_rollout_consistency_multikey_env",
    "generate_seeds",
    "get_available_devices",
    "get_default_devices",
    "make_tc",
    "mp_ctx",
    "rand_reset",
    "retry",
    "rollout_consistency_assertion",
    "set_global_var",
]
