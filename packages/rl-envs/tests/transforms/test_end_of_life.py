import pytest
import torch

from rl_core import TransformedEnv, check_env_specs
from rl_envs import GymEnv, default_info_dict_reader
from rl_envs.transforms import EndOfLifeTransform


def test_flags_lost_lives_in_breakout():
    pytest.importorskip("ale_py")
    base = GymEnv("ALE/Breakout-v5", frameskip=4, repeat_action_probability=0.0)
    base.set_info_dict_reader(default_info_dict_reader(["lives"]))
    env = TransformedEnv(base, EndOfLifeTransform())
    env.set_seed(0)
    check_env_specs(env)
    # Always FIRE and never move: each served ball is missed and a life is lost.
    fire = torch.tensor([0, 1, 0, 0])
    traj = env.rollout(40, lambda td: td.set("action", fire), break_when_any_done=False)
    lost = traj["next", "lives"] < traj["lives"]
    assert lost.any()
    assert torch.equal(traj["next", "end-of-life"].squeeze(-1), lost)
    assert not traj["end-of-life"][0].item()


def test_needs_lives(cartpole):
    env = TransformedEnv(cartpole, EndOfLifeTransform())
    with pytest.raises(KeyError, match="EndOfLifeTransform: the env shows no 'lives' entry"):
        env.reset()
