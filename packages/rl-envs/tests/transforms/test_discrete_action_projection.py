"""DiscreteActionProjection: a policy over max_actions one-hot actions drives an env with
fewer (TorchRL's mapping: kept below num_actions_effective, drawn at random above)."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import OneHot, TransformedEnv, check_env_specs
from rl_envs import CartPoleEnv, SerialEnv
from rl_envs.transforms import DiscreteActionProjection


def _one_hot(index, n, batch=()):
    return torch.nn.functional.one_hot(torch.full(batch, index), n).to(torch.bool)


def test_inverse_keeps_actions_in_range_and_draws_the_others():
    t = DiscreteActionProjection(num_actions_effective=3, max_actions=5)
    actions = torch.nn.functional.one_hot(torch.tensor([0, 1, 2, 4, 3] * 40), 5)
    out = t.inv(TensorDict({"action": actions}, [200]))["action"]
    assert out.shape == (200, 3)
    index = out.argmax(-1)
    assert index[:3].tolist() == [0, 1, 2]
    kept = torch.tensor([0, 1, 2] * 40)
    assert index.reshape(40, 5)[:, :3].reshape(-1).equal(kept)
    drawn = index.reshape(40, 5)[:, 3:]
    assert set(drawn.reshape(-1).tolist()) == {0, 1, 2}  # 80 uniform draws hit all three
    # the forward path (replay-buffer samples) re-encodes with max_actions entries
    small = TensorDict({"action": torch.tensor([[0, 0, 1], [1, 0, 0]])}, [2])
    assert t(small)["action"].tolist() == [[0, 0, 1, 0, 0], [1, 0, 0, 0, 0]]


def test_in_a_batched_env_the_steps_equal_the_projected_actions():
    base = CartPoleEnv(batch_size=[3])
    env = TransformedEnv(
        CartPoleEnv(batch_size=[3]),
        DiscreteActionProjection(num_actions_effective=2, max_actions=4),
    )
    assert env.action_spec == OneHot(4, shape=(3, 4), dtype=base.action_spec.dtype)
    check_env_specs(env)
    pushes = [0, 1, 1, 0, 1]  # in range: passed on as they are
    env.set_seed(0)
    base.set_seed(0)
    taken = iter(pushes)
    traj = env.rollout(5, lambda td: td.set("action", _one_hot(next(taken), 4, (3,))))
    taken = iter(pushes)
    ref = base.rollout(5, lambda td: td.set("action", _one_hot(next(taken), 2, (3,))))
    assert traj["next", "observation"].equal(ref["next", "observation"])
    assert traj["action"].shape == (3, 5, 4)  # the policy's actions are kept


def test_in_serial_env_sub_envs():
    env = SerialEnv(
        2,
        lambda: TransformedEnv(
            CartPoleEnv(), DiscreteActionProjection(num_actions_effective=2, max_actions=3)
        ),
    )
    try:
        check_env_specs(env)
        assert env.action_spec.shape == (2, 3)
        traj = env.rollout(4)
    finally:
        env.close()
    assert traj["action"].shape == (2, 4, 3)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="expected max_actions >= num_actions_effective"):
        DiscreteActionProjection(4, 3)
    with pytest.raises(ValueError, match="expected num_actions_effective to be an int >= 1"):
        DiscreteActionProjection(0, 3)
    t = DiscreteActionProjection(2, 3)
    with pytest.raises(ValueError, match=r"one-hot over max_actions=3 \(last dim 3\), got shape"):
        t.inv(TensorDict({"action": torch.ones(2, 5)}, [2]))
    env = TransformedEnv(CartPoleEnv(), DiscreteActionProjection(3, 4))
    with pytest.raises(ValueError, match="has 2 one-hot entries, expected num_actions_effective=3"):
        _ = env.action_spec
