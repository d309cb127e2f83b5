"""ACTLoss against the paper's definition in float64: the mean absolute error of the chunk
plus beta times the KL divergence of N(mu, diag(exp(log_var))) from N(0, I); keys,
reductions and bad input."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_objectives import ACTLoss
from rl_objectives.losses import kl_to_standard_normal
from rl_objectives.modules import ACTModel


def _kl_by_hand(mu, log_var):
    """Sum over dims of the closed form KL(N(m, s^2) || N(0, 1)) = log(1/s) + (s^2 + m^2)/2 - 1/2."""
    out = []
    for m_row, lv_row in zip(mu.tolist(), log_var.tolist()):
        total = 0.0
        for m, lv in zip(m_row, lv_row):
            s2 = math.exp(lv)
            total += -0.5 * lv + 0.5 * (s2 + m * m) - 0.5
        out.append(total)
    return torch.tensor(out, dtype=torch.float64)


def _actor():
    torch.manual_seed(0)
    model = ACTModel(
        3,
        2,
        4,
        hidden_dim=16,
        nheads=2,
        num_encoder_layers=1,
        num_decoder_layers=1,
        latent_dim=5,
        dropout=0.0,
    ).double()
    return model, TensorDictModule(
        model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"]
    )


def _batch(n=6):
    g = torch.Generator().manual_seed(1)
    td = TensorDict(observation=torch.randn(n, 3, generator=g, dtype=torch.float64), batch_size=[n])
    td["vla_action", "chunk"] = torch.randn(n, 4, 2, generator=g, dtype=torch.float64)
    return td


def test_kl_matches_the_closed_form():
    g = torch.Generator().manual_seed(0)
    mu = torch.randn(4, 3, generator=g, dtype=torch.float64)
    log_var = torch.randn(4, 3, generator=g, dtype=torch.float64)
    torch.testing.assert_close(kl_to_standard_normal(mu, log_var), _kl_by_hand(mu, log_var))


def test_loss_is_l1_reconstruction_plus_beta_kl():
    model, actor = _actor()
    loss = ACTLoss(actor, kl_weight=3.5)
    td = _batch()
    torch.manual_seed(7)
    out = loss(td)
    torch.manual_seed(7)
    pred, mu, log_var = model(td["observation"], td["vla_action", "chunk"])
    chunk = td["vla_action", "chunk"]
    recon = sum(abs(p - c) for p, c in zip(pred.flatten().tolist(), chunk.flatten().tolist()))
    recon /= chunk.numel()
    kl = _kl_by_hand(mu.detach(), log_var.detach()).mean().item()
    assert out["loss_reconstruction"].item() == pytest.approx(recon, rel=1e-12)
    assert out["loss_kl"].item() == pytest.approx(kl, rel=1e-12)
    assert out["loss_act"].item() == pytest.approx(recon + 3.5 * kl, rel=1e-12)
    assert not out["loss_kl"].requires_grad
    assert out["loss_act"].requires_grad
    out["loss_act"].backward()
    # the loss holds the model's own parameters: the gradient reaches them
    assert loss.actor_network_params["module", "latent_proj", "weight"] is model.latent_proj.weight
    assert model.latent_proj.weight.grad.abs().sum() > 0


def test_reductions_and_renamed_keys():
    _, actor = _actor()
    td = _batch()
    torch.manual_seed(7)
    per_sample = ACTLoss(actor, reduction="none")(td)
    assert per_sample["loss_act"].shape == (6,)
    torch.manual_seed(7)
    summed = ACTLoss(actor, reduction="sum")(td)
    torch.testing.assert_close(summed["loss_act"], per_sample["loss_act"].sum())
    renamed = TensorDict(obs=td["observation"], target=td["vla_action", "chunk"], batch_size=[6])
    loss = ACTLoss(actor).set_keys(observation="obs", action_chunk="target")
    assert loss.in_keys == ["obs", "target"]
    assert loss(renamed)["loss_act"].shape == ()


def test_bad_input_is_refused_naming_it():
    _, actor = _actor()
    with pytest.raises(ValueError, match=r"kl_weight >= 0.*got -1"):
        ACTLoss(actor, kl_weight=-1)
    with pytest.raises(TypeError, match=r"kl_weight to be a number, got '10'"):
        ACTLoss(actor, kl_weight="10")
    with pytest.raises(ValueError, match=r"reduction must be"):
        ACTLoss(actor, reduction="max")
    td = _batch()
    del td["vla_action"]
    with pytest.raises(KeyError, match=r"no entry \('vla_action', 'chunk'\)"):
        ACTLoss(actor)(td)
    # an actor whose predicted chunk is longer than the data's
    bad = _batch()
    bad["vla_action", "chunk"] = bad["vla_action", "chunk"][:, :3]
    with pytest.raises(ValueError, match=r"'action_pred' has shape \(6, 4, 2\), the expert chunk"):
        ACTLoss(
            TensorDictModule(
                _Padded(), ["observation", "action_chunk"], ["action_pred", "mu", "log_var"]
            )
        )(bad)


class _Padded(torch.nn.Module):
    """An ACT model for chunks of 4 that pads a shorter expert chunk with its last action."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.model = ACTModel(
            3, 2, 4, hidden_dim=16, nheads=2, num_encoder_layers=1, num_decoder_layers=1
        ).double()

    def forward(self, observation, action_chunk):
        return self.model(observation, torch.cat([action_chunk, action_chunk[..., -1:, :]], -2))
