"""MAPPOLoss / IPPOLoss against hand-written float64 references (per-agent advantage
standardisation, ClipPPO objective, entropy, value-normalised critic, agent masks)."""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.modules import OneHotCategorical, ProbabilisticActor, ValueOperator
from rl_objectives import IPPOLoss, MAPPOLoss, RunningValueNorm
from rl_objectives.modules import MultiAgentMLP
from rl_objectives.utils import ValueEstimators
from rl_objectives.value import MultiAgentGAE

B, T, N, OBS, ACT = 2, 4, 3, 4, 2
KEYS = dict(
    action=("agents", "action"),
    sample_log_prob=("agents", "action_log_prob"),
    value=("agents", "state_value"),
    advantage=("agents", "advantage"),
    value_target=("agents", "value_target"),
)


def make(centralized=True):
    torch.manual_seed(0)
    policy_net = MultiAgentMLP(
        OBS, ACT, n_agents=N, centralized=False, share_params=True, depth=1, num_cells=8
    ).double()
    actor = ProbabilisticActor(
        TensorDictModule(policy_net, [("agents", "observation")], [("agents", "logits")]),
        [("agents", "logits")],
        out_keys=[("agents", "action")],
        distribution_class=OneHotCategorical,
        return_log_prob=True,
        log_prob_key=("agents", "action_log_prob"),
    )
    critic_net = MultiAgentMLP(
        OBS, 1, n_agents=N, centralized=centralized, share_params=True, depth=1, num_cells=8
    ).double()
    critic = ValueOperator(critic_net, [("agents", "observation")], [("agents", "state_value")])
    return actor, critic, policy_net, critic_net


def data(actor, mask=None):
    g = torch.Generator().manual_seed(1)
    f64 = dict(generator=g, dtype=torch.float64)
    agents = dict(observation=torch.randn(B, T, N, OBS, **f64))
    if mask is not None:
        agents["mask"] = mask
    td = TensorDict(
        agents=TensorDict(agents, batch_size=[B, T, N]),
        next=TensorDict(
            agents=TensorDict(observation=torch.randn(B, T, N, OBS, **f64), batch_size=[B, T, N]),
            reward=torch.randn(B, T, 1, **f64),
            done=torch.zeros(B, T, 1, dtype=torch.bool),
            terminated=torch.zeros(B, T, 1, dtype=torch.bool),
            batch_size=[B, T],
        ),
        batch_size=[B, T],
    )
    with torch.no_grad():
        actor(td)
    td["agents", "advantage"] = torch.randn(B, T, N, 1, **f64) * 3 + 1
    td["agents", "value_target"] = torch.randn(B, T, N, 1, **f64) * 5 + 2
    return td


def smooth_l1(x):
    return 0.5 * x * x if abs(x) < 1 else abs(x) - 0.5


def reference(td, policy_net, critic_net, mask, *, eps=0.2, ent=0.01, value_norm_stats=None):
    """Plain loops over (b, t, n), float64, from the definitions."""
    logits = policy_net(td["agents", "observation"]).detach()
    logp_all = torch.log_softmax(logits, -1)
    values = critic_net(td["agents", "observation"]).detach()
    adv, tgt = td["agents", "advantage"], td["agents", "value_target"]
    act, old = td["agents", "action"], td["agents", "action_log_prob"]
    valid = [(b, t, n) for b in range(B) for t in range(T) for n in range(N) if mask[b, t, n]]
    std_adv = {}
    for n in range(N):  # one mean and (unbiased) deviation per agent
        xs = [adv[b, t, n, 0].item() for (b, t, m) in valid if m == n]
        mu = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - mu) ** 2 for x in xs) / (len(xs) - 1))
        for b, t, m in valid:
            if m == n:
                std_adv[b, t, n] = (adv[b, t, n, 0].item() - mu) / sd
    obj = entr = crit = 0.0
    for b, t, n in valid:
        lp = sum(logp_all[b, t, n, a].item() * act[b, t, n, a].item() for a in range(ACT))
        r = math.exp(lp - old[b, t, n].item())
        a_ = std_adv[b, t, n]
        obj += -min(r * a_, min(max(r, 1 - eps), 1 + eps) * a_)
        p = logp_all[b, t, n].exp()
        entr += -sum(p[a].item() * logp_all[b, t, n, a].item() for a in range(ACT))
        v, y = values[b, t, n, 0].item(), tgt[b, t, n, 0].item()
        if value_norm_stats is not None:
            m, s = value_norm_stats
            v, y = (v - m) / s, (y - m) / s
        crit += smooth_l1(v - y)
    k = len(valid)
    return obj / k, -ent * entr / k, crit / k


def perturb(net):
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.3 * torch.randn_like(p))


@pytest.mark.parametrize("cls", [MAPPOLoss, IPPOLoss])
def test_matches_reference_without_mask(cls):
    actor, critic, policy_net, critic_net = make(centralized=cls is MAPPOLoss)
    td = data(actor)
    loss = cls(actor, critic).set_keys(**KEYS)
    perturb(policy_net)
    out = loss(td)
    ref = reference(td, policy_net, critic_net, torch.ones(B, T, N, dtype=torch.bool))
    assert out["loss_objective"].item() == pytest.approx(ref[0], rel=1e-9)
    assert out["loss_entropy"].item() == pytest.approx(ref[1], rel=1e-9)
    assert out["loss_critic"].item() == pytest.approx(ref[2], rel=1e-9)


@pytest.mark.parametrize("trailing_one", [False, True])
def test_agent_mask_is_honoured_everywhere(trailing_one):
    actor, critic, policy_net, critic_net = make()
    g = torch.Generator().manual_seed(7)
    mask = torch.rand(B, T, N, generator=g) < 0.6
    mask[0, 0] = True  # every agent has at least two valid entries
    mask[1, 0] = True
    td = data(actor, mask.unsqueeze(-1) if trailing_one else mask)
    vn = RunningValueNorm().double()
    loss = MAPPOLoss(actor, critic, value_norm=vn).set_keys(**KEYS)
    perturb(policy_net)
    out = loss(td)
    ys = [td["agents", "value_target"][b, t, n, 0].item() for b, t, n in mask.nonzero().tolist()]
    m = sum(ys) / len(ys)
    s = math.sqrt(sum((y - m) ** 2 for y in ys) / len(ys))  # population, as RunningValueNorm
    assert vn.count.item() == len(ys)  # only the valid targets were folded in
    ref = reference(td, policy_net, critic_net, mask, value_norm_stats=(m, s))
    assert out["loss_objective"].item() == pytest.approx(ref[0], rel=1e-9)
    assert out["loss_entropy"].item() == pytest.approx(ref[1], rel=1e-9)
    assert out["loss_critic"].item() == pytest.approx(ref[2], rel=1e-9)


def test_masked_entries_do_not_change_the_loss():
    actor, critic, policy_net, _ = make()
    mask = torch.ones(B, T, N, dtype=torch.bool)
    mask[:, 1:, 2] = False
    td = data(actor, mask)
    loss = MAPPOLoss(actor, critic).set_keys(**KEYS)
    perturb(policy_net)
    other = td.clone()
    other["agents", "advantage"][:, 1:, 2] = 1e6
    other["agents", "value_target"][:, 1:, 2] = -1e6
    a, b = loss(td), loss(other)
    for key in ("loss_objective", "loss_entropy", "loss_critic"):
        torch.testing.assert_close(a[key], b[key])
    none = MAPPOLoss(actor, critic, reduction="none").set_keys(**KEYS)(other)
    assert (none["loss_critic"][:, 1:, 2] == 0).all()


def test_defaults_follow_torchrl():
    actor, critic, *_ = make()
    loss = MAPPOLoss(actor, critic)
    assert loss.entropy_coeff == 0.01
    assert loss.normalize_advantage is True
    assert loss.normalize_advantage_exclude_dims == (-2,)
    assert loss.value_norm is None
    assert loss.clip_epsilon == 0.2
    assert MAPPOLoss.default_value_estimator is ValueEstimators.MAGAE
    assert isinstance(loss.value_estimator, MultiAgentGAE)
    assert loss.tensor_keys.mask == ("agents", "mask")


def test_value_norm_is_a_submodule_in_the_state_dict():
    actor, critic, *_ = make()
    loss = MAPPOLoss(actor, critic, value_norm=RunningValueNorm())
    assert "value_norm.count" in loss.state_dict()


def test_estimator_computes_the_advantage_when_absent():
    actor, critic, *_ = make()
    td = data(actor)
    del td["agents", "advantage"]
    del td["agents", "value_target"]
    loss = MAPPOLoss(actor, critic).set_keys(**KEYS)
    out = loss(td)
    given = td.clone()
    with torch.no_grad():  # the default estimator: MultiAgentGAE(gamma=0.99, lmbda=0.95)
        MultiAgentGAE(0.99, 0.95, critic)(given)
    ref = loss(given)
    for key in ("loss_objective", "loss_entropy", "loss_critic"):
        torch.testing.assert_close(out[key], ref[key])


def test_bad_inputs_raise():
    actor, critic, *_ = make()
    with pytest.raises(TypeError, match="expected value_norm to be a ValueNorm"):
        MAPPOLoss(actor, critic, value_norm=object())
    with pytest.raises(ValueError, match="normalize_advantage_exclude_dims"):
        MAPPOLoss(actor, critic, normalize_advantage_exclude_dims=(2,))
    td = data(actor, torch.ones(B, T, N, dtype=torch.bool))
    td["agents", "mask"] = torch.ones(B, T, N, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"agent mask .* with shape \(2, 4, 3\)"):
        MAPPOLoss(actor, critic).set_keys(**KEYS)(td)


def test_the_default_estimator_reads_the_same_mask():
    actor, critic, *_ = make()
    mask = torch.ones(B, T, N, dtype=torch.bool)
    mask[0, 2:, 1] = False
    td = data(actor, mask)
    td["next", "agents", "mask"] = torch.cat([mask[:, 1:], mask[:, -1:]], 1)
    del td["agents", "advantage"]
    del td["agents", "value_target"]
    loss = MAPPOLoss(actor, critic).set_keys(**KEYS)
    out = loss(td)
    given = td.clone()
    with torch.no_grad():
        MultiAgentGAE(0.99, 0.95, critic)(given)
    assert (given["agents", "advantage"][0, 2:, 1] == 0).all()
    ref = loss(given)
    for key in ("loss_objective", "loss_entropy", "loss_critic"):
        torch.testing.assert_close(out[key], ref[key])
