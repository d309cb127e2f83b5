"""DreamerEnv: imagination in a world model's latent space, on any batch; specs, transforms."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

from rl_core.envs import check_env_specs
from rl_core.modules import MLP
from rl_core.transforms import TransformedEnv
from rl_envs import PendulumEnv
from rl_envs.model_based import DreamerEnv
from rl_envs.transforms import RewardSum

S, H = 3, 5


class Prior(torch.nn.Module):
    """A small stochastic latent transition with an RSSM prior's signature: (state, belief,
    action) -> (mean, std, next state, next belief), the next state drawn from N(mean, std)."""

    def __init__(self):
        super().__init__()
        self.belief = torch.nn.GRUCell(S + 1, H)
        self.head = MLP(H, 2 * S, depth=1, num_cells=8)

    def forward(self, state, belief, action):
        belief = self.belief(torch.cat([state, action], -1), belief)
        mean, raw_std = self.head(belief).chunk(2, -1)
        std = torch.nn.functional.softplus(raw_std) + 0.1
        return mean, std, mean + std * torch.randn_like(std), belief


class Cat(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, state, belief):
        return self.net(torch.cat([state, belief], -1))


def _env(batch_size=(), decoder=False):
    torch.manual_seed(0)
    prior = Prior()
    reward = Cat(MLP(S + H, 1, depth=1, num_cells=8))
    model = TensorDictSequential(
        TensorDictModule(prior, ["state", "belief", "action"], ["_", "_", "state", "belief"]),
        TensorDictModule(reward, ["state", "belief"], ["reward"]),
    )
    dec = None
    if decoder:
        dec = TensorDictModule(
            MLP(S + H, 3, depth=1, num_cells=8),
            ["state", "belief"],
            ["reco_observation"],
        )
    env = DreamerEnv(model, (S,), (H,), obs_decoder=dec, batch_size=batch_size)
    env.set_specs_from_env(PendulumEnv(batch_size=batch_size))
    return env, prior, reward


@pytest.mark.parametrize("batch_size", [(), (3,)])
def test_passes_check_env_specs(batch_size):
    env, _, _ = _env(batch_size)
    assert set(env.observation_keys) == {"state", "belief"}
    assert env.action_spec.shape == (*batch_size, 1)
    check_env_specs(env, seed=0)


def test_imagines_from_given_latents_on_any_batch():
    env, prior, reward = _env()
    start = TensorDict(state=torch.randn(40, S), belief=torch.randn(40, H), batch_size=[40])
    td = env.reset(start)
    assert td.batch_size == (40,)
    assert not td["done"].any()
    policy = TensorDictModule(Cat(torch.nn.Linear(S + H, 1)), ["state", "belief"], ["action"])
    torch.manual_seed(1)  # the prior's draws only: the policy is deterministic
    traj = env.rollout(4, policy, auto_reset=False, tensordict=td)
    assert traj.batch_size == (40, 4)
    # each step is the prior's transition and the reward of the landed latents
    torch.manual_seed(1)
    state, belief = start["state"], start["belief"]
    for t in range(4):
        action = traj["action"][:, t]
        _, _, state, belief = prior(state, belief, action)
        torch.testing.assert_close(traj["next", "state"][:, t], state)
        torch.testing.assert_close(traj["next", "belief"][:, t], belief)
        torch.testing.assert_close(traj["next", "reward"][:, t], reward(state, belief))
    assert not traj["next", "terminated"].any()


def test_reset_without_latents():
    env, _, _ = _env((2,))
    td = env.reset()
    assert torch.equal(td["state"], torch.zeros(2, S))
    with pytest.raises(ValueError, match=r"DreamerEnv.reset: expected a TensorDict holding the "):
        env.reset(TensorDict(state=torch.zeros(7, S), batch_size=[7]))
    with pytest.raises(ValueError, match=r"DreamerEnv.rand_action: random actions for a batch"):
        env.rand_action(TensorDict(batch_size=[7]))


def test_composes_with_transforms_and_a_policy():
    env, _, _ = _env((4,))
    env = TransformedEnv(env, RewardSum())
    policy = TensorDictModule(Cat(torch.nn.Linear(S + H, 1)), ["state", "belief"], ["action"])
    traj = env.rollout(5, policy)
    assert traj.batch_size == (4, 5)
    torch.testing.assert_close(traj["next", "episode_reward"][:, -1], traj["next", "reward"].sum(1))


def test_decode_obs():
    env, _, _ = _env(decoder=True)
    td = env.reset(TensorDict(state=torch.zeros(6, S), belief=torch.zeros(6, H), batch_size=[6]))
    assert env.decode_obs(td)["reco_observation"].shape == (6, 3)
    td["action"] = torch.zeros(6, 1)
    out = env.decode_obs(td.clone(), compute_latents=True)
    assert not torch.equal(out["state"], td["state"])  # the model ran first
    bare, _, _ = _env()
    with pytest.raises(ValueError, match=r"DreamerEnv.decode_obs: the env has no obs_decoder"):
        bare.decode_obs(td)
