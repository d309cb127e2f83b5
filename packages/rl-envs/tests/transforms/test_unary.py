"""UnaryTransform on a batched env (observations, actions) and on data, strings included."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import NonTensor, TransformedEnv, Unbounded, check_env_specs
from rl_envs.native.pendulum import PendulumEnv
from rl_envs.transforms import UnaryTransform


def test_observations_and_actions_of_a_batched_env():
    t = UnaryTransform(
        in_keys=["observation"],
        out_keys=["obs_sq"],
        in_keys_inv=["action"],
        out_keys_inv=["half_action"],
        fn=torch.square,
        inv_fn=lambda a: 2 * a,  # the policy writes half the torque
    )
    env = TransformedEnv(PendulumEnv(batch_size=[2]), t)
    spec = env.observation_spec["obs_sq"]
    assert isinstance(spec, Unbounded)
    assert spec.shape == (2, 3)
    assert "half_action" in env.full_action_spec.keys()
    check_env_specs(env)
    traj = env.rollout(3, lambda td: td.set("half_action", torch.full((2, 1), 0.5)))
    torch.testing.assert_close(traj["next", "obs_sq"], traj["next", "observation"] ** 2)
    # the env got 2 * 0.5 = 1.0: the same trajectory as the bare env driven with 1.0
    bare = PendulumEnv(batch_size=[2])
    state = traj[:, 0].select("th", "thdot", "observation")
    step = bare.step(state.set("action", torch.ones(2, 1)))
    torch.testing.assert_close(step["next", "observation"], traj["next", "observation"][:, 0])


def test_strings_and_errors():
    td = TensorDict(batch_size=[2])
    td["text"] = ["ab", "cde"]
    out = UnaryTransform(["text"], ["n"], fn=lambda words: torch.tensor([len(w) for w in words]))(
        td
    )
    assert out["n"].tolist() == [2, 3]
    upper = UnaryTransform(["s"], ["u"], fn=str.upper)
    assert upper._map_spec("s", NonTensor(shape=(), example_data="x")).example_data == "X"
    with pytest.raises(TypeError, match="UnaryTransform: expected fn as a callable, got int"):
        UnaryTransform(["x"], fn=3)
