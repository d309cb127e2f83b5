"""NextObservationDelta: deltas written by the env, next observations dropped at the buffer's
write and rebuilt at its read."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv, check_env_specs
from rl_envs import PendulumEnv
from rl_envs.transforms import NextObservationDelta


def _torque(td):
    return td.set("action", torch.full((*td.batch_size, 1), 0.7))


def test_env_writes_float16_deltas_and_the_buffer_side_rebuilds_next():
    env = TransformedEnv(PendulumEnv(batch_size=[3]), NextObservationDelta(in_keys=["observation"]))
    check_env_specs(env)
    spec = env.observation_spec[("delta", "observation")]
    assert spec.dtype == torch.float16
    assert spec.shape == (3, 3)
    env.set_seed(0)
    traj = env.rollout(5, _torque)
    obs, nxt = traj["observation"].double(), traj["next", "observation"].double()
    delta = traj["next", "delta", "observation"]
    assert delta.dtype == torch.float16
    assert torch.equal(delta, (nxt - obs).to(torch.float32).half())
    assert traj["delta", "observation"][:, 0].eq(0).all()  # reset writes zeros
    # Written to a buffer: the inverse drops the full next observation.
    stored = env.transform.inv(traj.clone())
    assert ("next", "observation") not in stored.keys(include_nested=True)
    # Sampled: rebuilt as obs + delta, in obs's dtype, within float16's precision of the delta.
    sample = env.transform(stored.clone())
    rebuilt = sample["next", "observation"]
    assert rebuilt.dtype == torch.float32
    assert ("next", "delta", "observation") not in sample.keys(include_nested=True)
    assert torch.allclose(rebuilt.double(), nxt, atol=2e-3 * nxt.abs().max().item() + 1e-3)
    # Across an episode boundary the delta is the step's own, so it rebuilds as well.
    assert torch.allclose(rebuilt[:, -1].double(), nxt[:, -1], atol=1e-2)


def test_default_keys_skip_integers_and_options():
    env = TransformedEnv(PendulumEnv(batch_size=[2]), NextObservationDelta())
    env.observation_spec  # noqa: B018  (the specs pick the keys)
    assert "observation" in env.transform.in_keys
    data = TensorDict(obs=torch.tensor([1.0, 2.0], dtype=torch.float64))
    data["next", "delta", "obs"] = torch.tensor([0.5, -0.25], dtype=torch.float16)
    t = NextObservationDelta(restore_dtype=torch.float32, drop_delta=False)
    out = t(data)
    assert out["next", "obs"].dtype == torch.float32
    assert out["next", "obs"].tolist() == [1.5, 1.75]
    assert ("next", "delta", "obs") in out.keys(include_nested=True)
    with pytest.raises(KeyError, match="needs the observation 'obs' at the root"):
        NextObservationDelta(in_keys=["obs"])(data.exclude("obs"))
    with pytest.raises(TypeError, match="expected restore_dtype"):
        NextObservationDelta(restore_dtype="float32")
