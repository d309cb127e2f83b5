"""DiffusionBCLoss against DDPM's epsilon-prediction objective in float64: t uniform, the
noisy action from q(x_t | x_0), the squared error to the drawn noise; chunks; bad input."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict

from rl_objectives import DiffusionBCLoss
from rl_objectives.modules import DiffusionActor


def _alpha_bar(n, b0, b1):
    out, prod = [], 1.0
    for i in range(n):
        prod *= 1.0 - (b0 + (b1 - b0) * i / (n - 1))
        out.append(prod)
    return out


def _actor(chunk_size=None):
    torch.manual_seed(0)
    return DiffusionActor(
        2, 3, num_steps=12, beta_start=0.01, beta_end=0.2, chunk_size=chunk_size
    ).double()


@pytest.mark.parametrize("chunk_size", [None, 4])
def test_loss_is_the_noise_prediction_error(chunk_size):
    actor = _actor(chunk_size)
    loss = DiffusionBCLoss(actor)
    shape = (6, 2) if chunk_size is None else (6, chunk_size, 2)
    g = torch.Generator().manual_seed(1)
    td = TensorDict(
        observation=torch.randn(6, 3, generator=g, dtype=torch.float64),
        action=torch.randn(*shape, generator=g, dtype=torch.float64),
        batch_size=[6],
    )
    torch.manual_seed(9)
    out = loss(td)["loss_diffusion_bc"]
    # by hand: t then eps, drawn in that order
    torch.manual_seed(9)
    t = torch.randint(0, 12, (6,))
    eps = torch.randn(*shape, dtype=torch.float64)
    alpha_bar = _alpha_bar(12, 0.01, 0.2)
    total = 0.0
    for i in range(6):
        a = alpha_bar[t[i].item()]
        noisy = math.sqrt(a) * td["action"][i] + math.sqrt(1 - a) * eps[i]
        inp = torch.cat(
            [
                noisy.reshape(-1),
                td["observation"][i],
                torch.tensor([float(t[i])], dtype=torch.float64),
            ]
        )
        pred = actor.module.score_network(inp).reshape(eps[i].shape)
        total += ((pred - eps[i]) ** 2).sum().item()
    assert out.item() == pytest.approx(total / eps.numel(), rel=1e-10)
    out.backward()
    assert all(p.grad is not None for p in actor.parameters())


def test_reductions_and_chunk_key():
    actor = _actor(4)
    td = TensorDict(observation=torch.randn(5, 3, dtype=torch.float64), batch_size=[5])
    td["vla_action", "chunk"] = torch.randn(5, 4, 2, dtype=torch.float64)
    loss = DiffusionBCLoss(actor, reduction="none").set_keys(action=("vla_action", "chunk"))
    torch.manual_seed(0)
    per_entry = loss(td)["loss_diffusion_bc"]
    assert per_entry.shape == (5, 4, 2)
    torch.manual_seed(0)
    summed = DiffusionBCLoss(actor, reduction="sum").set_keys(action=("vla_action", "chunk"))(td)
    torch.testing.assert_close(summed["loss_diffusion_bc"], per_entry.sum())


def test_bad_input_is_refused_naming_it():
    with pytest.raises(TypeError, match=r"actor_network to be a DiffusionActor.*got Linear"):
        DiffusionBCLoss(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"reduction must be"):
        DiffusionBCLoss(_actor(), reduction="avg")
    loss = DiffusionBCLoss(_actor())
    with pytest.raises(KeyError, match=r"no entry 'action'"):
        loss(TensorDict(observation=torch.randn(4, 3, dtype=torch.float64), batch_size=[4]))
    bad = TensorDict(
        observation=torch.randn(4, 3, dtype=torch.float64),
        action=torch.randn(4, 5, dtype=torch.float64),
        batch_size=[4],
    )
    with pytest.raises(ValueError, match=r"action.*\(5,\).*expected \(2,\)"):
        loss(bad)
