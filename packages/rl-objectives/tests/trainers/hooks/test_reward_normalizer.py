import math

import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import RewardNormalizer


def batch(rewards, mask=None):
    r = torch.tensor(rewards).unsqueeze(-1)
    td = TensorDict({("next", "reward"): r}, batch_size=r.shape[:-1])
    if mask is not None:
        td.set(("collector", "mask"), torch.tensor(mask))
    return td


def test_decayed_statistics_match_a_hand_computation():
    hook = RewardNormalizer(decay=0.5, scale=2.0)
    hook.update_reward_stats(batch([1.0, 2.0, 9.0], mask=[True, True, False]))  # 9 is padding
    hook.update_reward_stats(batch([3.0]))
    # S = 0.5 * 3 + 3 = 4.5, Q = 0.5 * 5 + 9 = 11.5, N = 0.5 * 2 + 1 = 2
    mean, var = 4.5 / 2, 11.5 / 2 - (4.5 / 2) ** 2
    assert hook.mean == pytest.approx(mean)
    assert hook.std == pytest.approx(math.sqrt(var))
    stored = batch([0.0, 4.0])
    out = hook.normalize_reward(stored)
    expected = [2.0 * (r - mean) / math.sqrt(var) for r in (0.0, 4.0)]
    assert out["next", "reward"].flatten().tolist() == pytest.approx(expected)
    assert stored["next", "reward"].flatten().tolist() == [0.0, 4.0]  # the stored batch is kept


def test_eps_floor_and_state_round_trip():
    hook = RewardNormalizer(decay=1.0, eps=0.1)
    hook.update_reward_stats(batch([2.0, 2.0]))
    assert hook.std == 0.1
    other = RewardNormalizer(decay=1.0, eps=0.1)
    other.load_state_dict(hook.state_dict())
    assert (other.mean, other.std) == (2.0, 0.1)


def test_errors():
    with pytest.raises(ValueError, match=r"decay must be in \[0, 1\], got 1.5"):
        RewardNormalizer(decay=1.5)
    with pytest.raises(ValueError, match="eps must be > 0"):
        RewardNormalizer(eps=0.0)
    with pytest.raises(RuntimeError, match="no reward seen yet"):
        RewardNormalizer().normalize_reward(batch([1.0]))
    with pytest.raises(KeyError, match=r"no reward at 'r'; set reward_key="):
        RewardNormalizer(reward_key="r").update_reward_stats(batch([1.0]))
