"""BatchSizeTransform: a batch size for a stateless env, or the env's batch reshaped."""

import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_envs import PendulumEnv
from rl_envs.transforms import BatchSizeTransform


def _torques(steps, batch):
    gen = torch.Generator().manual_seed(3)
    return torch.rand(steps, *batch, 1, generator=gen) * 4 - 2


def _replay(env, actions):
    step = iter(actions)
    return env.rollout(len(actions), lambda td: td.set("action", next(step)))


def test_batch_size_for_a_stateless_env_matches_its_own_batching():
    env = TransformedEnv(PendulumEnv(), BatchSizeTransform(batch_size=[4]))
    check_env_specs(env)
    assert env.batch_size == (4,)
    assert env.observation_spec["observation"].shape == (4, 3)
    env.set_seed(0)
    actions = _torques(5, [4])
    traj = _replay(env, actions)
    assert traj.batch_size == (4, 5)
    # Reference: the unbatched env from the same start, one row at a time.
    for row in range(4):
        ref = PendulumEnv()
        ref.set_seed(0)
        out = _replay(ref, actions[:, row])
        assert torch.allclose(traj["next", "observation"][row], out["next", "observation"])
        assert torch.allclose(traj["next", "reward"][row], out["next", "reward"])


def test_reshape_fn_and_reset_func():
    env = TransformedEnv(
        PendulumEnv(batch_size=[2, 3]), BatchSizeTransform(reshape_fn=lambda x: x.reshape(6))
    )
    check_env_specs(env)
    assert env.batch_size == (6,)
    env.set_seed(1)
    actions = _torques(4, [6])
    traj = _replay(env, actions)
    ref = PendulumEnv(batch_size=[2, 3])
    ref.set_seed(1)
    out = _replay(ref, actions.reshape(4, 2, 3, 1))
    assert torch.allclose(traj["next", "observation"], out["next", "observation"].reshape(6, 4, 3))

    def zero_start(tensordict, tensordict_reset, env):
        assert isinstance(env, PendulumEnv)
        start = tensordict_reset.expand(2).clone()
        start["th"] = torch.zeros(2, 1)
        start["thdot"] = torch.zeros(2, 1)
        start["observation"] = torch.tensor([[1.0, 0.0, 0.0]]).expand(2, 3).clone()
        return start

    env = TransformedEnv(
        PendulumEnv(),
        BatchSizeTransform(batch_size=[2], reset_func=zero_start, env_kwarg=True),
    )
    assert env.reset()["observation"].tolist() == [[1.0, 0.0, 0.0]] * 2


def test_partial_resets_reset_only_the_masked_rows():
    env = TransformedEnv(
        PendulumEnv(), Compose(BatchSizeTransform(batch_size=[4]), StepCounter(max_steps=3))
    )
    env.set_seed(0)
    traj = env.rollout(7, break_when_any_done=False)  # truncations every 3 steps
    assert traj["next", "step_count"][0].squeeze(-1).tolist() == [1, 2, 3, 1, 2, 3, 1]
    env = TransformedEnv(
        PendulumEnv(batch_size=[2, 3]),
        Compose(BatchSizeTransform(reshape_fn=lambda x: x.reshape(6)), StepCounter()),
    )
    td = env.reset()
    for _ in range(2):
        td = env.step_mdp_plan()(env.step(td.set("action", torch.zeros(6, 1))))
    before = td["th"].clone()
    td["_reset"] = torch.tensor([True, False, False, False, False, True]).unsqueeze(-1)
    out = env.reset(td)
    assert out["step_count"].squeeze(-1).tolist() == [0, 2, 2, 2, 2, 0]
    assert torch.equal(out["th"][1:5], before[1:5])  # rows not reset keep their state


def test_errors():
    with pytest.raises(ValueError, match="expected exactly one of batch_size and reshape_fn"):
        BatchSizeTransform()
    env = TransformedEnv(PendulumEnv(batch_size=[3]), BatchSizeTransform(batch_size=[2]))
    with pytest.raises(ValueError, match="does not expand to"):
        env.observation_spec  # noqa: B018
