"""TorchRL's loss options: separate_losses=, functional=, device=, ValueEstimators.MAGAE, and
losses called with keyword tensors."""

import math
import sys
from pathlib import Path

import pytest
import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, q_critic, tanh_actor
from _nets import N_ACT, OBS, categorical_actor, offpolicy_batch, onpolicy_batch, value_critic

from rl_core.modules import (
    MLP,
    Actor,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)
from rl_objectives import (
    A2CLoss,
    ClipPPOLoss,
    CrossQLoss,
    DDPGLoss,
    DiscreteSACLoss,
    DQNLoss,
    IQLLoss,
    KLPENPPOLoss,
    PPOLoss,
    REDQLoss,
    ReinforceLoss,
    SACLoss,
    TD3Loss,
    ValueEstimators,
)
from rl_objectives.value import MultiAgentGAE

# Networks with a common trunk: the actor and the critic read the same first layer.


class TrunkQ(nn.Module):
    """Q(s, a) = head(cat(trunk(s), a))."""

    def __init__(self, trunk):
        super().__init__()
        self.trunk, self.head = trunk, nn.Linear(8 + ACT, 1)

    def forward(self, obs, action):
        return self.head(torch.cat([torch.tanh(self.trunk(obs)), action], -1))


def shared(kind):
    torch.manual_seed(0)
    trunk = nn.Linear(OBS, 8)
    if kind == "discrete_q":
        net = nn.Sequential(trunk, nn.Tanh(), nn.Linear(8, N_ACT))
        module = TensorDictModule(net, ["observation"], ["logits"])
        actor = ProbabilisticActor(module, ["logits"], distribution_class=OneHotCategorical)
        q_net = nn.Sequential(trunk, nn.Tanh(), nn.Linear(8, N_ACT))
        return trunk, actor, TensorDictModule(q_net, ["observation"], ["action_value"])
    if kind == "discrete":
        net = nn.Sequential(trunk, nn.Tanh(), nn.Linear(8, N_ACT))
        module = TensorDictModule(net, ["observation"], ["logits"])
        actor = ProbabilisticActor(
            module, ["logits"], distribution_class=OneHotCategorical, return_log_prob=True
        )
        critic = ValueOperator(nn.Sequential(trunk, nn.Tanh(), nn.Linear(8, 1)), ["observation"])
        return trunk, actor, critic
    if kind == "stochastic":
        net = nn.Sequential(trunk, nn.Tanh(), nn.Linear(8, 2 * ACT), NormalParamExtractor())
        module = TensorDictModule(net, ["observation"], ["loc", "scale"])
        actor = ProbabilisticActor(module, ["loc", "scale"], distribution_class=TanhNormal)
    else:
        actor = Actor(nn.Sequential(trunk, nn.Tanh(), nn.Linear(8, ACT), nn.Tanh()))
    return trunk, actor, ValueOperator(TrunkQ(trunk), ["observation", "action"])


def _grads(value, params):
    return [
        None if g is None else g.abs().sum().item()
        for g in torch.autograd.grad(value, list(params), allow_unused=True, retain_graph=True)
    ]


def _cont_batch():
    return offpolicy_batch(action=torch.rand(8, ACT) * 2 - 1)


def _discrete_batch():
    return offpolicy_batch(action=torch.eye(N_ACT)[torch.arange(8) % N_ACT])


CASES = {
    # name: (build(separate_losses) -> (loss, trunk, critic head params), batch, critic, actor)
    "PPOLoss": ("discrete", lambda a, c, s: PPOLoss(a, c, separate_losses=s), onpolicy_batch,
                "loss_critic", "loss_objective"),
    "ClipPPOLoss": ("discrete", lambda a, c, s: ClipPPOLoss(a, c, separate_losses=s),
                    onpolicy_batch, "loss_critic", "loss_objective"),
    "A2CLoss": ("discrete", lambda a, c, s: A2CLoss(a, c, separate_losses=s), onpolicy_batch,
                "loss_critic", "loss_objective"),
    "ReinforceLoss": ("discrete", lambda a, c, s: ReinforceLoss(a, c, separate_losses=s),
                      onpolicy_batch, "loss_value", "loss_actor"),
    "SACLoss": ("stochastic", lambda a, c, s: SACLoss(a, c, separate_losses=s), _cont_batch,
                "loss_qvalue", "loss_actor"),
    "TD3Loss": ("deterministic", lambda a, c, s: TD3Loss(a, c, separate_losses=s), _cont_batch,
                "loss_qvalue", "loss_actor"),
    "DDPGLoss": ("deterministic", lambda a, c, s: DDPGLoss(a, c, separate_losses=s),
                 _cont_batch, "loss_value", "loss_actor"),
    "REDQLoss": ("stochastic",
                 lambda a, c, s: REDQLoss(a, c, num_qvalue_nets=2, separate_losses=s),
                 _cont_batch, "loss_qvalue", "loss_actor"),
    "CrossQLoss": ("stochastic", lambda a, c, s: CrossQLoss(a, c, separate_losses=s),
                   _cont_batch, "loss_qvalue", "loss_actor"),
    "DiscreteSACLoss": ("discrete_q",
                        lambda a, c, s: DiscreteSACLoss(a, c, num_actions=N_ACT, separate_losses=s),
                        _discrete_batch, "loss_qvalue", "loss_actor"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_separate_losses_keeps_the_shared_trunk_out_of_the_critic_loss(name):
    kind, build, make_batch, critic_term, actor_term = CASES[name]
    results = {}
    for separate in (False, True):
        trunk, actor, critic = shared(kind)
        loss = build(actor, critic, separate)
        torch.manual_seed(1)
        out = loss(make_batch())
        trunk_params = list(trunk.parameters())
        head = [p for p in critic.parameters() if all(p is not q for q in trunk_params)]
        results[separate] = (
            out[critic_term].detach(),
            _grads(out[critic_term], trunk_params),
            _grads(out[critic_term], head),
            _grads(out[actor_term], trunk_params),
        )
    value_off, trunk_off, head_off, actor_off = results[False]
    value_on, trunk_on, head_on, actor_on = results[True]
    torch.testing.assert_close(value_on, value_off)  # the same loss value
    assert all(g is not None and g > 0 for g in trunk_off)  # by default the critic trains it
    assert all(g is None or g == 0 for g in trunk_on)  # separated: it does not
    assert head_on == pytest.approx(head_off)
    assert all(g > 0 for g in head_on)
    assert actor_on == pytest.approx(actor_off)
    assert all(g > 0 for g in actor_on)


def test_separate_losses_in_iql_keeps_the_trunk_to_the_actor():
    torch.manual_seed(0)
    trunk, actor, critic = shared("stochastic")
    value = ValueOperator(nn.Sequential(trunk, nn.Tanh(), nn.Linear(8, 1)), ["observation"])
    loss = IQLLoss(actor, critic, value, separate_losses=True)
    out = loss(_cont_batch())
    for term in ("loss_qvalue", "loss_value"):
        assert all(g is None or g == 0 for g in _grads(out[term], trunk.parameters()))
    assert all(g > 0 for g in _grads(out["loss_actor"], trunk.parameters()))


# functional=False


def _clip_objective_by_hand(actor_net, td, eps=0.2):
    """ClipPPO's objective in float64 from the definition."""
    logits = actor_net.double()(td["observation"].double())
    log_p = (torch.log_softmax(logits, -1) * td["action"].double()).sum(-1)
    ratio = torch.exp(log_p - td["action_log_prob"].double())
    adv = td["advantage"].double().squeeze(-1)
    actor_net.float()
    return -torch.minimum(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv).mean()


def test_functional_false_keeps_the_modules_and_gives_the_same_losses():
    actor, actor_net = categorical_actor()
    critic, _ = value_critic()
    td = onpolicy_batch()
    td["advantage"] = torch.randn(2, 6, 1, generator=torch.Generator().manual_seed(3))
    td["value_target"] = torch.randn(2, 6, 1, generator=torch.Generator().manual_seed(4))
    plain = ClipPPOLoss(actor, critic, functional=False)
    assert plain.actor_network is actor
    assert plain.critic_network is critic
    assert {id(p) for p in plain.parameters()} == {
        id(p) for p in [*actor.parameters(), *critic.parameters()]
    }
    functional = ClipPPOLoss(actor, critic)
    a, b = plain(td.clone()), functional(td.clone())
    for key in ("loss_objective", "loss_critic", "loss_entropy"):
        torch.testing.assert_close(a[key], b[key])
    expected = _clip_objective_by_hand(actor_net, td)
    torch.testing.assert_close(a["loss_objective"].double(), expected, rtol=1e-5, atol=1e-6)
    # an optimizer over the loss trains the modules themselves
    before = [p.detach().clone() for p in actor.parameters()]
    opt = torch.optim.SGD(plain.parameters(), lr=0.1)
    (a["loss_objective"] + a["loss_critic"]).backward()
    opt.step()
    assert any(not torch.equal(p, q) for p, q in zip(actor.parameters(), before, strict=True))


def test_functional_false_estimates_the_advantage_with_its_own_critic():
    actor, _ = categorical_actor()
    critic, _ = value_critic()
    td = onpolicy_batch()
    a = A2CLoss(actor, critic, functional=False)(td.clone())
    b = A2CLoss(actor, critic)(td.clone())
    for key in ("loss_objective", "loss_critic"):
        torch.testing.assert_close(a[key], b[key])


def test_reinforce_functional_false_refuses_a_target_critic():
    actor, _ = categorical_actor()
    critic, _ = value_critic()
    with pytest.raises(ValueError, match="delay_value=True needs a target copy"):
        ReinforceLoss(actor, critic, delay_value=True, functional=False)
    loss = ReinforceLoss(actor, critic, functional=False)
    assert loss.critic_network is critic


# device=


def test_device_places_the_loss_tensors_not_the_networks():
    actor, _ = categorical_actor()
    critic, _ = value_critic()
    loss = KLPENPPOLoss(actor, critic, device="meta")
    assert loss.beta.device.type == "meta"
    assert loss.device == torch.device("meta")
    assert all(p.device.type == "cpu" for p in actor.parameters())
    assert KLPENPPOLoss(actor, critic).beta.device == next(actor.parameters()).device
    with pytest.raises(ValueError, match=r"device must be a torch\.device"):
        PPOLoss(actor, critic, device="nowhere")


# ValueEstimators.MAGAE


def test_magae_builds_multi_agent_gae():
    actor, _ = categorical_actor()
    critic, _ = value_critic()
    loss = PPOLoss(actor, critic)
    loss.make_value_estimator(ValueEstimators.MAGAE, gamma=0.9, lmbda=0.8)
    assert type(loss.value_estimator) is MultiAgentGAE
    assert loss.value_estimator.gamma == pytest.approx(0.9)
    assert loss.value_estimator.lmbda == pytest.approx(0.8)
    assert loss.make_value_estimator("MAGAE").value_estimator.__class__ is MultiAgentGAE


# keyword tensors


def test_sac_called_with_keyword_tensors():
    loss = SACLoss(tanh_actor()[0], q_critic())
    td = _cont_batch()
    torch.manual_seed(5)
    expected = loss(td.clone())
    torch.manual_seed(5)
    got = loss(
        observation=td["observation"],
        action=td["action"],
        next_observation=td["next", "observation"],
        next_reward=td["next", "reward"],
        next_done=td["next", "done"],
        next_terminated=td["next", "terminated"],
    )
    names = ["loss_actor", "loss_qvalue", "loss_alpha", "alpha", "entropy"]  # TorchRL's order
    assert len(got) == len(names)
    for value, name in zip(got, names, strict=True):
        torch.testing.assert_close(value, expected[name])


def test_dqn_called_with_keyword_tensors_returns_its_one_loss():
    torch.manual_seed(0)
    loss = DQNLoss(QValueActor(MLP(OBS, N_ACT, depth=1, num_cells=8), action_space="one-hot"))
    td = offpolicy_batch(action=torch.eye(N_ACT)[torch.arange(8) % N_ACT])
    expected = loss(td.clone())["loss"]
    got = loss(
        observation=td["observation"],
        action=td["action"],
        next_observation=td["next", "observation"],
        next_reward=td["next", "reward"],
        next_terminated=td["next", "terminated"],
    )
    torch.testing.assert_close(got, expected)
    # TD(0) written out: r + gamma * (1 - terminated) * max_a' Q_target(s', a')
    with loss.target_value_network_params.to_module(loss.value_network):
        next_q = loss.value_network(td["next"].copy())["action_value"].max(-1, keepdim=True)
    with loss.value_network_params.to_module(loss.value_network):
        q = loss.value_network(td.copy())["action_value"]
    target = td["next", "reward"] + 0.99 * (~td["next", "terminated"]).float() * next_q.values
    pred = (q * td["action"]).sum(-1, keepdim=True)
    assert math.isclose(got.item(), (pred - target).pow(2).mean().item(), rel_tol=1e-5)


# explicit None meaning the default (TorchRL's signatures default these to None)


@pytest.mark.parametrize("cls", [PPOLoss, ClipPPOLoss, KLPENPPOLoss, A2CLoss])
def test_none_coefficients_mean_the_defaults(cls):
    actor, _ = categorical_actor()
    critic, _ = value_critic()
    td = onpolicy_batch()
    explicit = cls(actor, critic, entropy_coeff=None, critic_coeff=None)
    assert (explicit.entropy_coeff, explicit.critic_coeff) == (0.01, 1.0)
    a, b = explicit(td.clone()), cls(actor, critic)(td.clone())
    for key in ("loss_entropy", "loss_critic"):
        torch.testing.assert_close(a[key], b[key])
    # loss_entropy = -0.01 * mean entropy, written out for the categorical policy
    with torch.no_grad():
        logits = actor.module[0].module(td["observation"])
        p = torch.softmax(logits.double(), -1)
        entropy = -(p * torch.log(p)).sum(-1).mean()
    torch.testing.assert_close(a["loss_entropy"].double(), -0.01 * entropy)
