"""Composite actions (several heads, ``tensordict.nn.CompositeDistribution``) in the PPO family
and V-trace: ``set_keys(sample_log_prob=[...])`` adds the heads' log-probabilities."""

import functools

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import CompositeDistribution, TensorDictModule
from torch import nn

from rl_core.modules import ProbabilisticActor, ValueOperator
from rl_objectives import A2CLoss, ClipPPOLoss, PPOLoss, VTrace

OBS = 3
LP1, LP2 = ("action", "a1_log_prob"), ("action", "a2_log_prob")
A1, A2 = ("action", "a1"), ("action", "a2")


class _TwoHeads(nn.Module):
    """A Normal head over 2 dims and a Categorical head over 3 choices."""

    def __init__(self) -> None:
        super().__init__()
        self.normal = nn.Linear(OBS, 4)
        self.cat = nn.Linear(OBS, 3)

    def forward(self, obs):
        loc, raw = self.normal(obs).chunk(2, -1)
        return loc, nn.functional.softplus(raw) + 0.1, self.cat(obs)

    def log_prob(self, obs, a1, a2):
        """The joint log-probability, by hand: independent heads multiply."""
        loc, scale, logits = self(obs)
        lp1 = torch.distributions.Normal(loc, scale).log_prob(a1).sum(-1)
        lp2 = torch.log_softmax(logits, -1).gather(-1, a2.unsqueeze(-1)).squeeze(-1)
        return lp1 + lp2


class _IndependentNormal(torch.distributions.Independent):
    def __init__(self, loc, scale):
        super().__init__(torch.distributions.Normal(loc, scale), 1)


def _actor():
    torch.manual_seed(0)
    net = _TwoHeads()
    module = TensorDictModule(
        net,
        ["observation"],
        [("params", "a1", "loc"), ("params", "a1", "scale"), ("params", "a2", "logits")],
    )
    dist = functools.partial(
        CompositeDistribution,
        distribution_map={
            "a1": _IndependentNormal,
            "a2": torch.distributions.Categorical,
        },
        name_map={"a1": A1, "a2": A2},
    )
    actor = ProbabilisticActor(
        module, ["params"], out_keys=[A1, A2], distribution_class=dist, return_log_prob=True
    )
    return actor, net


def _batch(b=2, t=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            "observation": torch.randn(b, t, OBS, generator=g),
            A1: torch.randn(b, t, 2, generator=g),
            A2: torch.randint(3, (b, t), generator=g),
            LP1: torch.randn(b, t, generator=g) - 2.0,
            LP2: torch.randn(b, t, generator=g) - 1.0,
            "advantage": torch.randn(b, t, 1, generator=g),
            "next": {
                "observation": torch.randn(b, t, OBS, generator=g),
                "reward": torch.randn(b, t, 1, generator=g),
                "done": torch.zeros(b, t, 1, dtype=torch.bool),
                "terminated": torch.zeros(b, t, 1, dtype=torch.bool),
            },
        },
        batch_size=[b, t],
    )


def _log_weight(td, net):
    with torch.no_grad():
        return net.log_prob(td["observation"], td[A1], td[A2]) - (td[LP1] + td[LP2])


@pytest.mark.parametrize("given", ["set_keys", "from_actor"])
def test_ppo_adds_the_heads_log_probs(given):
    actor, net = _actor()
    loss = PPOLoss(actor, entropy_bonus=False)
    if given == "set_keys":
        loss.set_keys(action=[A1, A2], sample_log_prob=[LP1, LP2])
    # from_actor: TorchRL reads both lists off the actor's log_prob_keys/dist_sample_keys
    assert loss.tensor_keys.sample_log_prob == [LP1, LP2]
    assert loss.tensor_keys.action == [A1, A2]
    td = _batch()
    out = loss(td)
    expected = -(_log_weight(td, net).exp() * td["advantage"].squeeze(-1)).mean()
    torch.testing.assert_close(out["loss_objective"].detach(), expected)
    assert {LP1, LP2, A1, A2} <= set(loss.in_keys)


def test_clip_ppo_and_a2c_with_a_list_of_log_prob_keys():
    actor, net = _actor()
    td = _batch(seed=1)
    adv = td["advantage"].squeeze(-1)
    ratio = _log_weight(td, net).exp()
    clip = ClipPPOLoss(actor, entropy_bonus=False, clip_epsilon=0.2)
    clip.set_keys(sample_log_prob=[LP1, LP2])
    expected = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    torch.testing.assert_close(clip(td)["loss_objective"].detach(), expected)
    a2c = A2CLoss(actor, entropy_bonus=False)
    with torch.no_grad():
        logp = net.log_prob(td["observation"], td[A1], td[A2])
    torch.testing.assert_close(a2c(td)["loss_objective"].detach(), -(logp * adv).mean())


def test_one_head_given_as_a_one_element_list():
    # TorchRL's own tests spell a single composite head as a list of one key
    actor, _ = _actor()
    td = _batch(seed=2)
    loss = PPOLoss(actor, entropy_bonus=False)
    loss.set_keys(sample_log_prob=[LP1, LP2])
    both = loss(td)["loss_objective"]
    td2 = td.clone()
    td2.set(("action", "joint_log_prob"), td[LP1] + td[LP2])
    loss.set_keys(sample_log_prob=[("action", "joint_log_prob")])
    torch.testing.assert_close(loss(td2)["loss_objective"], both)


def test_entropy_of_a_composite_action_sums_the_heads():
    actor, net = _actor()
    td = _batch(seed=3)
    loss = PPOLoss(actor, entropy_coeff=0.5)
    out = loss(td)
    with torch.no_grad():
        loc, scale, logits = net(td["observation"])
        h1 = torch.distributions.Normal(loc, scale).entropy().sum(-1)
        h2 = torch.distributions.Categorical(logits=logits).entropy()
    torch.testing.assert_close(out["entropy"], (h1 + h2).mean())
    torch.testing.assert_close(out["loss_entropy"].detach(), -0.5 * (h1 + h2).mean())


def test_vtrace_adds_the_heads_log_probs():
    actor, _ = _actor()
    torch.manual_seed(1)
    value = ValueOperator(nn.Linear(OBS, 1), ["observation"])
    td = _batch(seed=4)
    listed = VTrace(0.9, value, actor, action_key="action")
    listed.set_keys(sample_log_prob=[LP1, LP2])
    assert listed.tensor_keys.sample_log_prob == [LP1, LP2]
    out = listed(td.clone())
    # the same data with the joint log-prob stored once, read by the actor's own dist
    td_joint = td.clone()
    td_joint.set("joint_log_prob", td[LP1] + td[LP2])
    single = VTrace(0.9, value, actor, action_key="action")
    single.set_keys(sample_log_prob="joint_log_prob")
    ref = single(td_joint)
    torch.testing.assert_close(out["advantage"], ref["advantage"])
    torch.testing.assert_close(out["value_target"], ref["value_target"])


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([], "sample_log_prob must be a key .* or a non-empty list of keys"),
        ([LP1, 3], r"sample_log_prob must be a key .* got \[\('action', 'a1_log_prob'\), 3\]"),
        ((LP1, LP2), "sample_log_prob must be a string or a non-empty tuple of strings"),
    ],
)
def test_set_keys_refuses_what_is_not_a_key_list(value, match):
    actor, _ = _actor()
    loss = PPOLoss(actor)
    before = loss.tensor_keys.sample_log_prob
    with pytest.raises(TypeError, match=match):
        loss.set_keys(sample_log_prob=value)
    assert loss.tensor_keys.sample_log_prob == before
    with pytest.raises(TypeError, match=r"VTrace\.set_keys: sample_log_prob must be a key"):
        VTrace(0.9, None, actor).set_keys(sample_log_prob=[])


def test_a_missing_head_log_prob_is_named():
    actor, _ = _actor()
    loss = PPOLoss(actor, entropy_bonus=False)
    td = _batch().exclude(LP2)
    with pytest.raises(KeyError, match=r"PPOLoss: .*\('action', 'a2_log_prob'\)"):
        loss(td)
    with pytest.raises(KeyError, match=r"PPOLoss: the batch has no entry 'observation'"):
        loss(_batch().exclude("observation"))
