"""get_env_transforms_from_module: a recurrent policy rolls out in the env it prepares."""

import torch
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_core import Compose, InitTracker, TransformedEnv
from rl_core.modules import MLP, LSTMModule
from rl_core.testing import CountingEnv
from rl_objectives.modules.env_transforms import get_env_transforms_from_module


def test_recurrent_policy_gets_init_tracker_and_primer():
    torch.manual_seed(0)
    policy = TensorDictSequential(
        TensorDictModule(lambda count: count.float(), in_keys=["observation"], out_keys=["x"]),
        LSTMModule(1, 8, in_key="x", out_key="features"),
        TensorDictModule(
            lambda f: (f[..., :1] > -1).long(), in_keys=["features"], out_keys=["action"]
        ),
    )
    transforms = get_env_transforms_from_module(policy)
    assert isinstance(transforms, Compose)
    assert [type(t).__name__ for t in transforms] == ["InitTracker", "TensorDictPrimer"]
    env = TransformedEnv(CountingEnv(max_count=10, batch_size=[2]), transforms)
    td = env.reset()
    assert td["is_init"].all()
    assert td["recurrent_state_h"].shape == (2, 1, 8)
    assert not td["recurrent_state_h"].any()
    traj = env.rollout(3, policy)
    assert traj["is_init"][:, 0].all()
    assert not traj["is_init"][:, 1:].any()
    assert traj["next", "recurrent_state_h"].abs().sum() > 0  # the state moves on


def test_plain_policy_gets_the_init_tracker_only():
    plain = TensorDictModule(MLP(3, 1, num_cells=[]), in_keys=["obs"], out_keys=["action"])
    out = get_env_transforms_from_module(plain, init_key="first")
    assert isinstance(out, InitTracker)
    assert out.init_key == "first"
