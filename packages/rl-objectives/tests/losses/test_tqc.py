import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _continuous import ACT, OBS, q_with, tanh_actor, tanh_sample
from _nets import assert_same_grads, grads, offpolicy_batch

from rl_core.modules import MLP, ValueOperator
from rl_objectives import TQCLoss
from rl_objectives.losses.tqc import quantile_huber_loss

N_ATOMS = 5


def _quantile_huber_reference(quantiles, targets, kappa=1.0):
    """Kuznetsov et al. (2020), eq. for J(psi_n), one scalar at a time, in float64, summed
    over the critics ``n`` (TorchRL's TQCLoss sums them; the paper trains each on its own)."""
    n_nets, batch, n_atoms = quantiles.shape
    out = torch.zeros(batch, dtype=torch.float64)
    for b in range(batch):
        total = 0.0
        for n in range(n_nets):
            for m in range(n_atoms):
                tau = (2 * m + 1) / (2 * n_atoms)
                for j in range(targets.shape[-1]):
                    u = float(targets[b, j] - quantiles[n, b, m])
                    huber = 0.5 * u * u if abs(u) <= kappa else kappa * (abs(u) - 0.5 * kappa)
                    total += abs(tau - (1.0 if u < 0 else 0.0)) * huber / kappa
        out[b] = total / (n_atoms * targets.shape[-1])
    return out


@pytest.mark.parametrize("kappa", [1.0, 0.3])
def test_quantile_huber_loss_matches_float64_reference(kappa):
    g = torch.Generator().manual_seed(0)
    quantiles = torch.randn(3, 4, 6, generator=g, dtype=torch.float64) * 2
    targets = torch.randn(4, 7, generator=g, dtype=torch.float64) * 2
    torch.testing.assert_close(
        quantile_huber_loss(quantiles, targets, kappa),
        _quantile_huber_reference(quantiles, targets, kappa),
    )


def test_quantile_huber_loss_sums_over_critics():
    # TorchRL's TQCLoss: three identical critics give three times one critic's loss
    g = torch.Generator().manual_seed(1)
    one = torch.randn(1, 4, 6, generator=g, dtype=torch.float64)
    targets = torch.randn(4, 7, generator=g, dtype=torch.float64)
    torch.testing.assert_close(
        quantile_huber_loss(one.expand(3, 4, 6), targets), 3 * quantile_huber_loss(one, targets)
    )


def _critic(seed=1):
    torch.manual_seed(seed)
    return ValueOperator(MLP(OBS + ACT, N_ATOMS, depth=1, num_cells=16), ["observation", "action"])


def test_tqc_matches_reference_in_float64():
    actor, param_net = tanh_actor()
    actor, critic = actor.double(), _critic().double()
    loss = TQCLoss(
        actor, critic, num_qvalue_nets=3, top_quantiles_to_drop_per_net=2, alpha_init=0.5, gamma=0.9
    )
    with torch.no_grad():
        loss.target_qvalue_network_params.apply_(lambda x: x.mul_(0.9))
    g = torch.Generator().manual_seed(7)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) * 1.6 - 0.8)
    td = td.apply(lambda x: x.double() if x.is_floating_point() else x)
    torch.manual_seed(123)
    out = loss(td)
    torch.manual_seed(123)
    obs, nobs = td["observation"], td["next", "observation"]
    a, logp = tanh_sample(param_net, obs)
    # actor: alpha * log_pi - mean over every critic's every atom
    z_new = torch.stack([q_with(loss, i, False, td, a) for i in range(3)])
    actor_loss = (0.5 * logp - z_new.mean(dim=(0, 2))).mean()
    with torch.no_grad():
        a2, logp2 = tanh_sample(param_net, nobs)
        atoms = torch.cat([q_with(loss, i, True, td["next"], a2) for i in range(3)], dim=-1)
        kept = 3 * (N_ATOMS - 2)
        truncated = atoms.sort(-1).values[:, :kept]
        y = td["next", "reward"] + 0.9 * (~td["next", "terminated"]).double() * (
            truncated - 0.5 * logp2.unsqueeze(-1)
        )
    preds = torch.stack([q_with(loss, i, False, td, td["action"]) for i in range(3)])
    q_loss = _quantile_huber_reference(preds.detach(), y).mean()
    torch.testing.assert_close(out["loss_actor"], actor_loss)
    torch.testing.assert_close(out["loss_qvalue"], q_loss)
    torch.testing.assert_close(out["loss_alpha"], (-loss.log_alpha * (logp.detach() - ACT)).mean())
    assert td["td_error"].shape == (8,)
    # gradients of the critic loss against the vectorised form of the same definition
    tau = (torch.arange(N_ATOMS, dtype=torch.float64) + 0.5) / N_ATOMS
    u = y[None, :, None, :] - preds[..., None]
    rho = (tau[:, None] - (u < 0).double()).abs() * torch.nn.functional.huber_loss(
        u, torch.zeros_like(u), reduction="none"
    )
    qparams = list(loss.qvalue_network_params.values(True, True))
    rho = rho.mean(dim=(-2, -1)).sum(0).mean()
    assert_same_grads(grads(out["loss_qvalue"], qparams), grads(rho, qparams), atol=1e-10)
    assert all(g is None for g in grads(out["loss_actor"], qparams))
    actor_params = list(param_net.parameters())
    assert_same_grads(
        grads(out["loss_actor"], actor_params), grads(actor_loss, actor_params), atol=1e-10
    )


def test_tqc_defaults_follow_torchrl():
    actor, _ = tanh_actor()
    loss = TQCLoss(actor, _critic())
    assert loss.num_qvalue_nets == 5
    assert loss.top_quantiles_to_drop_per_net == 2
    assert len(loss.qvalue_network.nets) == 5


def test_tqc_rejects_too_few_atoms_and_negative_drop():
    actor, _ = tanh_actor()
    with pytest.raises(ValueError, match="expected top_quantiles_to_drop_per_net >= 0"):
        TQCLoss(actor, _critic(), top_quantiles_to_drop_per_net=-1)
    loss = TQCLoss(actor, _critic(), num_qvalue_nets=2, top_quantiles_to_drop_per_net=N_ATOMS)
    g = torch.Generator().manual_seed(7)
    td = offpolicy_batch(action=torch.rand(8, ACT, generator=g) - 0.5)
    with pytest.raises(ValueError, match="write 5 atoms per critic, not more than"):
        loss(td)
