"""MultiStepTransform: n-step transitions against a float64 reference written from the
definition, across calls (as a replay buffer's writes) and episode ends."""

import pytest
import torch
from tensordict import TensorDict

from rl_core import StepCounter, TransformedEnv
from rl_envs import PendulumEnv
from rl_envs.transforms import MultiStepTransform


def _reference(reward, done, next_obs, gamma, n):
    """Per step t of one stream: k = min(n, steps to the episode's end), the discounted sum of
    the k rewards, and the next observation k - 1 steps ahead."""
    length = len(reward)
    out_r, out_obs, out_k = [], [], []
    for t in range(length):
        k = 0
        total = 0.0
        while k < n and t + k < length:
            total += gamma**k * float(reward[t + k])
            k += 1
            if done[t + k - 1]:
                break
        out_r.append(total)
        out_obs.append(next_obs[t + k - 1])
        out_k.append(k)
    return torch.tensor(out_r, dtype=torch.float64), torch.stack(out_obs), out_k


def _rollout(steps, seed):
    env = TransformedEnv(PendulumEnv(batch_size=[2]), StepCounter(max_steps=5))
    env.set_seed(seed)
    return env.rollout(
        steps, lambda td: td.set("action", torch.rand(2, 1) * 4 - 2), break_when_any_done=False
    )


@pytest.mark.parametrize("n", [1, 3])
def test_matches_the_definition_across_calls_on_batched_rollouts(n):
    torch.manual_seed(0)
    gamma = 0.9
    first, second = _rollout(7, 0), _rollout(6, 1)
    t = MultiStepTransform(n_steps=n, gamma=gamma)
    out = torch.cat([t.inv(first.clone()), t.inv(second.clone())], dim=1)
    stream = torch.cat([first, second], dim=1)
    assert out.batch_size == (2, 13 - n)
    for b in range(2):
        reward = stream["next", "reward"][b].squeeze(-1).double()
        done = stream["next", "done"][b].squeeze(-1).tolist()
        rewards, obs, ks = _reference(reward, done, stream["next", "observation"][b], gamma, n)
        torch.testing.assert_close(
            out["next", "reward"][b].squeeze(-1).double(), rewards[: 13 - n], rtol=1e-6, atol=1e-5
        )
        torch.testing.assert_close(out["next", "observation"][b], obs[: 13 - n])
        assert out["steps_to_next_obs"][b].tolist() == ks[: 13 - n]
        gammas = torch.tensor([gamma**k for k in ks[: 13 - n]], dtype=torch.float64)
        torch.testing.assert_close(out["gamma"][b].double(), gammas, rtol=1e-6, atol=1e-7)
        assert out["nonterminal"][b].tolist() == [k != 1 for k in ks[: 13 - n]]
    # The one-step rewards and the steps' own done flags stay.
    # TorchRL's key for the one-step reward: ("next", "original_reward")
    torch.testing.assert_close(
        out["next", "original_reward"], stream["next", "reward"][:, : 13 - n]
    )
    assert ("next", "reward_orig") not in out.keys(include_nested=True)
    assert torch.equal(out["next", "done"], stream["next", "done"][:, : 13 - n])


def test_mask_reset_and_errors():
    data = TensorDict(batch_size=[5])
    data["next", "reward"] = torch.arange(5.0).unsqueeze(-1)
    data["next", "done"] = torch.zeros(5, 1, dtype=torch.bool)
    data["valid"] = torch.tensor([True, False, True, True, True])
    t = MultiStepTransform(2, 1.0, mask_key="valid")
    out = t.inv(data)
    assert out["next", "reward"].squeeze(-1).tolist() == [1.0, 5.0]  # step 1 dropped
    t.reset()
    assert t.inv(data[:1]).batch_size == (0,)  # shorter than n_steps: kept for later
    with pytest.raises(ValueError, match="differ from those of the steps kept"):
        t.inv(data.unsqueeze(0))
    with pytest.raises(ValueError, match="expected n_steps as an int >= 1"):
        MultiStepTransform(0, 0.9)
    with pytest.raises(KeyError, match=r"lacks \('next', 'done'\)"):
        MultiStepTransform(2, 0.9).inv(data.exclude(("next", "done")))
    assert MultiStepTransform(2, 0.9)(data) is data  # sampled batches pass through
    with pytest.raises(RuntimeError, match="it cannot be put in an env"):
        TransformedEnv(PendulumEnv(), MultiStepTransform(2, 0.9)).observation_spec  # noqa: B018
