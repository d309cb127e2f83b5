"""Losses on batched multi-agent keys (``("agents", ...)`` entries, a shared team reward)."""

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
from rl_objectives import ClipPPOLoss
from rl_objectives.modules import MultiAgentMLP
from rl_objectives.value import MultiAgentGAE

B, T, N, OBS, ACT = 2, 5, 3, 4, 2


def make():
    torch.manual_seed(0)
    policy_net = MultiAgentMLP(
        OBS, ACT, n_agents=N, centralized=False, share_params=True, depth=1, num_cells=8
    )
    actor = ProbabilisticActor(
        TensorDictModule(policy_net, [("agents", "observation")], [("agents", "logits")]),
        [("agents", "logits")],
        out_keys=[("agents", "action")],
        distribution_class=OneHotCategorical,
        return_log_prob=True,
        log_prob_key=("agents", "action_log_prob"),
    )
    critic_net = MultiAgentMLP(
        OBS, 1, n_agents=N, centralized=True, share_params=True, depth=1, num_cells=8
    )
    critic = ValueOperator(critic_net, [("agents", "observation")], [("agents", "state_value")])
    return actor, critic, policy_net, critic_net


def data(actor):
    g = torch.Generator().manual_seed(1)
    done = torch.rand(B, T, 1, generator=g) < 0.2
    td = TensorDict(
        agents=TensorDict(observation=torch.randn(B, T, N, OBS, generator=g), batch_size=[B, T, N]),
        next=TensorDict(
            agents=TensorDict(
                observation=torch.randn(B, T, N, OBS, generator=g), batch_size=[B, T, N]
            ),
            reward=torch.randn(B, T, 1, generator=g),
            done=done,
            terminated=done,
            batch_size=[B, T],
        ),
        batch_size=[B, T],
    )
    with torch.no_grad():
        actor(td)
    return td


def test_clip_ppo_on_agent_keys_matches_per_agent_reference():
    actor, critic, policy_net, critic_net = make()
    td = data(actor)
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_bonus=False).set_keys(
        action=("agents", "action"),
        sample_log_prob=("agents", "action_log_prob"),
        value=("agents", "state_value"),
        advantage=("agents", "advantage"),
        value_target=("agents", "value_target"),
    )
    loss.make_value_estimator(gamma=0.9, lmbda=0.8)
    loss.value_estimator(td)
    # the shared team reward is broadcast to every agent, as MultiAgentGAE does
    check = td.clone()
    MultiAgentGAE(0.9, 0.8, critic)(check)
    torch.testing.assert_close(td["agents", "advantage"], check["agents", "advantage"])
    with torch.no_grad():  # perturb the policy so that ratios differ from 1
        for p in policy_net.parameters():
            p.add_(0.3 * torch.randn_like(p))
    out = loss(td)
    logp_all = torch.log_softmax(policy_net(td["agents", "observation"]), -1)
    logp = (logp_all * td["agents", "action"].float()).sum(-1)
    ratio = (logp - td["agents", "action_log_prob"]).exp()
    adv = td["agents", "advantage"].squeeze(-1)
    ref = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    torch.testing.assert_close(out["loss_objective"], ref)
    value = critic_net(td["agents", "observation"])
    ref_critic = torch.nn.functional.smooth_l1_loss(value, td["agents", "value_target"])
    torch.testing.assert_close(out["loss_critic"], ref_critic)
