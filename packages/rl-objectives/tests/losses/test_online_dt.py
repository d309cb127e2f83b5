import math
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, OBS, tanh_actor, tanh_sample
from _nets import assert_same_grads, grads

from rl_core.modules import MLP, Actor
from rl_objectives import OnlineDTLoss


def _batch(dtype=torch.float64):
    g = torch.Generator().manual_seed(3)
    return TensorDict(
        observation=torch.randn(4, 6, OBS, generator=g, dtype=dtype),
        action=(torch.rand(4, 6, ACT, generator=g, dtype=dtype) * 1.8 - 0.9),
        batch_size=[4, 6],
    )


def _tanh_normal_log_prob(param_net, obs, action):
    """log N(atanh(a); loc, scale) - log|d tanh/dx|, summed over the action dims."""
    loc, scale = param_net(obs)
    x = torch.atanh(action)
    normal_lp = -((x - loc) ** 2) / (2 * scale**2) - scale.log() - 0.5 * math.log(2 * math.pi)
    log_det = 2 * (math.log(2) - x - torch.nn.functional.softplus(-2 * x))
    return (normal_lp - log_det).sum(-1)


@pytest.mark.parametrize("samples", [1, 3])
def test_online_dt_loss_matches_reference_in_float64(samples):
    actor, param_net = tanh_actor()
    actor = actor.double()
    loss = OnlineDTLoss(actor, alpha_init=0.3, samples_mc_entropy=samples)
    td = _batch()
    torch.manual_seed(11)
    out = loss(td)
    torch.manual_seed(11)
    obs = td["observation"]
    log_lik = _tanh_normal_log_prob(param_net, obs, td["action"])
    _, sample_lp = tanh_sample(param_net, obs, (samples,))
    entropy = -sample_lp.mean(0)
    # target entropy "auto": minus the action's dims, read from the first target action
    assert loss.target_entropy == -ACT
    torch.testing.assert_close(out["loss_log_likelihood"], -log_lik.mean())
    torch.testing.assert_close(out["loss_entropy"], (-0.3 * entropy).mean())
    torch.testing.assert_close(out["loss_alpha"], (0.3 * (entropy.detach() + ACT)).mean())
    torch.testing.assert_close(out["entropy"], entropy.detach().mean())
    torch.testing.assert_close(out["alpha"], torch.tensor(0.3, dtype=torch.float32))
    params = list(param_net.parameters())
    assert_same_grads(
        grads(out["loss_log_likelihood"] + out["loss_entropy"], params),
        grads(-log_lik.mean() - 0.3 * entropy.mean(), params),
        atol=1e-10,
    )
    # the temperature is trained by loss_alpha only, and toward the entropy target
    assert grads(out["loss_entropy"], [loss.log_alpha])[0] is None
    (g_alpha,) = grads(out["loss_alpha"], [loss.log_alpha])
    torch.testing.assert_close(g_alpha, (0.3 * (entropy.detach() + ACT)).mean().float())


def test_online_dt_loss_options_and_errors():
    actor, _ = tanh_actor()
    loss = OnlineDTLoss(actor, fixed_alpha=True, target_entropy=-1.5, reduction="none")
    out = loss(_batch(torch.float32))
    assert out["loss_log_likelihood"].shape == (4, 6)
    assert not isinstance(loss.log_alpha, torch.nn.Parameter)
    assert loss.target_entropy == -1.5
    with pytest.raises(TypeError, match="must be a probabilistic actor with get_dist"):
        OnlineDTLoss(Actor(MLP(OBS, ACT, depth=0)))
    with pytest.raises(ValueError, match="expected samples_mc_entropy >= 1, got 0"):
        OnlineDTLoss(actor, samples_mc_entropy=0)
    with pytest.raises(ValueError, match="target_entropy must be a float or 'auto'"):
        OnlineDTLoss(actor, target_entropy="high")
