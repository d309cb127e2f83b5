import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _nets import assert_same_grads, categorical_actor, grads, onpolicy_batch, value_critic

from rl_objectives import PPOLoss
from rl_objectives.value import functional as F


def reference(
    td, actor_net, critic_net, *, entropy_coeff, critic_coeff, normalize, clip_value=None
):
    adv = td["advantage"].squeeze(-1)
    if normalize:
        adv = (adv - adv.mean()) / adv.std()
    logp_all = torch.log_softmax(actor_net(td["observation"]), -1)
    logp = (logp_all * td["action"].float()).sum(-1)
    ratio = torch.exp(logp - td["action_log_prob"])
    objective = -(ratio * adv).mean()
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    value = critic_net(td["observation"])
    err = torch.nn.functional.smooth_l1_loss(value, td["value_target"], reduction="none")
    if clip_value is not None:
        old = td["state_value"]
        clipped = old + (value - old).clamp(-clip_value, clip_value)
        err = torch.maximum(
            err, torch.nn.functional.smooth_l1_loss(clipped, td["value_target"], reduction="none")
        )
    return objective, -entropy_coeff * entropy.mean(), critic_coeff * err.mean(), ratio


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("clip_value", [None, 0.1])
def test_ppo_matches_reference(normalize, clip_value):
    actor, actor_net = categorical_actor()
    critic, critic_net = value_critic()
    loss = PPOLoss(
        actor,
        critic,
        entropy_coeff=0.02,
        critic_coeff=0.5,
        normalize_advantage=normalize,
        clip_value=clip_value,
        gamma=0.9,
    )
    td = onpolicy_batch()
    loss.value_estimator(td)  # fills advantage / value_target
    out = loss(td)
    ref = reference(
        td,
        actor_net,
        critic_net,
        entropy_coeff=0.02,
        critic_coeff=0.5,
        normalize=normalize,
        clip_value=clip_value,
    )
    for name, r in zip(("loss_objective", "loss_entropy", "loss_critic"), ref):
        torch.testing.assert_close(out[name], r)
    params = [*actor_net.parameters(), *critic_net.parameters()]
    total = out["loss_objective"] + out["loss_entropy"] + out["loss_critic"]
    assert_same_grads(grads(total, params), grads(ref[0] + ref[1] + ref[2], params))


def test_ppo_computes_gae_when_advantage_missing():
    actor, _ = categorical_actor()
    critic, critic_net = value_critic()
    loss = PPOLoss(actor, critic, gamma=0.9)
    loss.make_value_estimator(lmbda=0.8)
    td = onpolicy_batch()
    out = loss(td)
    with torch.no_grad():
        adv, _ = F.generalized_advantage_estimate(
            0.9,
            0.8,
            critic_net(td["observation"]),
            critic_net(td["next", "observation"]),
            td["next", "reward"],
            td["next", "done"],
            td["next", "terminated"],
            time_dim=1,
        )
    td["advantage"] = adv
    td["value_target"] = adv + critic_net(td["observation"]).detach()
    torch.testing.assert_close(out["loss_objective"], PPOLoss(actor, critic)(td)["loss_objective"])
    assert "advantage" not in out.keys()


def test_ppo_set_keys_reach_estimator_and_errors():
    actor, _ = categorical_actor()
    critic, _ = value_critic()
    loss = PPOLoss(actor, critic).set_keys(advantage="adv", sample_log_prob="old_lp")
    assert loss.value_estimator.tensor_keys.advantage == "adv"
    td = onpolicy_batch()
    with pytest.raises(KeyError, match="expected the behaviour log-probabilities at 'old_lp'"):
        loss(td)
    with pytest.raises(TypeError, match="actor_network must be a probabilistic actor"):
        PPOLoss(critic, critic)
    with pytest.raises(
        ValueError, match="loss function must be 'l1', 'l2' or 'smooth_l1', got 'huber'"
    ):
        PPOLoss(actor, critic, loss_critic_type="huber")
    no_critic = PPOLoss(actor)
    with pytest.raises(KeyError, match="no 'advantage' entry and the loss has no critic"):
        no_critic(td)


def test_clip_value_errors_as_torchrl():
    # TorchRL: a bool clip_value is refused (but by ClipPPOLoss, which reads True as its
    # clip_epsilon), a tensor is a number, and a batch without the old values says so
    from rl_objectives import A2CLoss, ClipPPOLoss, KLPENPPOLoss

    actor, _ = categorical_actor()
    critic, _ = value_critic()
    for cls in (PPOLoss, KLPENPPOLoss, A2CLoss):
        with pytest.raises(
            ValueError, match="clip_value must be a float or a scalar tensor, got True"
        ):
            cls(actor, critic, clip_value=True)
    assert ClipPPOLoss(actor, critic, clip_value=True).clip_value == pytest.approx(0.2)
    loss = PPOLoss(actor, critic, clip_value=torch.tensor(0.5), gamma=0.9)
    assert loss.clip_value == 0.5
    td = onpolicy_batch()
    loss.value_estimator(td)
    with pytest.raises(
        KeyError, match=r"clip_value is set to 0\.5, but the key state_value was not"
    ):
        loss(td.exclude("state_value"))
    assert "loss_critic" in loss(td).keys()
