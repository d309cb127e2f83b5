"""DiffusionActor against the DDPM/DDIM definitions in float64: the linear schedule and
alpha_bar, the forward noising q(x_t | x_0), the DDPM reverse chain (Ho et al. 2020,
Algorithm 2) and the DDIM one (Song et al. 2021, eq. 12), chunks, and bad arguments."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_objectives.modules import DiffusionActor


class _Score(torch.nn.Module):
    """A fixed, known noise predictor: eps = tanh(W [x, o, t / 10])."""

    def __init__(self, in_features, out_features):
        super().__init__()
        g = torch.Generator().manual_seed(3)
        self.weight = torch.nn.Parameter(
            torch.randn(out_features, in_features, generator=g, dtype=torch.float64) * 0.5
        )

    def forward(self, x):
        scaled = torch.cat([x[..., :-1], x[..., -1:] / 10.0], -1)
        return torch.tanh(scaled @ self.weight.T)


def _schedule(n, b0, b1):
    betas = [b0 + (b1 - b0) * i / (n - 1) for i in range(n)]
    alpha_bar, prod = [], 1.0
    for b in betas:
        prod *= 1.0 - b
        alpha_bar.append(prod)
    return betas, alpha_bar


def _actor(**kw):
    args = dict(action_dim=2, obs_dim=3, num_steps=8, beta_start=0.01, beta_end=0.3)
    args.update(kw)
    flat = args["action_dim"] * (args.get("chunk_size") or 1)
    args.setdefault("score_network", _Score(flat + 3 + 1, flat))
    return DiffusionActor(**args).double()


def test_schedule_and_forward_noising_follow_q_xt_given_x0():
    actor = _actor(num_steps=20)
    betas, alpha_bar = _schedule(20, 0.01, 0.3)
    torch.testing.assert_close(actor.module.betas, torch.tensor(betas, dtype=torch.float64))
    torch.testing.assert_close(
        actor.module.alphas_cumprod, torch.tensor(alpha_bar, dtype=torch.float64)
    )
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(5, 2, generator=g, dtype=torch.float64)
    eps = torch.randn(5, 2, generator=g, dtype=torch.float64)
    t = torch.tensor([0, 3, 7, 12, 19])
    noisy, noise = actor.module.add_noise(x0, t, eps)
    assert noise is eps
    for i, step in enumerate(t.tolist()):
        a = alpha_bar[step]
        for j in range(2):
            expected = math.sqrt(a) * x0[i, j].item() + math.sqrt(1 - a) * eps[i, j].item()
            assert noisy[i, j].item() == pytest.approx(expected, rel=1e-6)
    # drawn noise: the next standard normal draws
    torch.manual_seed(5)
    noisy, noise = actor.module.add_noise(x0, t)
    torch.manual_seed(5)
    torch.testing.assert_close(noise, torch.randn(5, 2, dtype=torch.float64))


def test_ddpm_chain_follows_algorithm_2():
    actor = _actor()
    score = actor.module.score_network
    betas, alpha_bar = _schedule(8, 0.01, 0.3)
    obs = torch.randn(4, 3, dtype=torch.float64)
    torch.manual_seed(11)
    action = actor(TensorDict(observation=obs, batch_size=[4]))["action"]
    torch.manual_seed(11)
    x = torch.randn(4, 2, dtype=torch.float64)
    for t in reversed(range(8)):
        eps = score(torch.cat([x, obs, torch.full((4, 1), float(t), dtype=torch.float64)], -1))
        b, a = betas[t], alpha_bar[t]
        x = (x - b / math.sqrt(1 - a) * eps) / math.sqrt(1 - b)
        if t > 0:
            x = x + math.sqrt(b) * torch.randn(4, 2, dtype=torch.float64)
    torch.testing.assert_close(action, x)
    # deterministic: the same x_T, no noise added afterwards
    torch.manual_seed(11)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        mean_path = actor(TensorDict(observation=obs, batch_size=[4]))["action"]
    torch.manual_seed(11)
    x = torch.randn(4, 2, dtype=torch.float64)
    for t in reversed(range(8)):
        eps = score(torch.cat([x, obs, torch.full((4, 1), float(t), dtype=torch.float64)], -1))
        x = (x - betas[t] / math.sqrt(1 - alpha_bar[t]) * eps) / math.sqrt(1 - betas[t])
    torch.testing.assert_close(mean_path, x)


@pytest.mark.parametrize("eta", [0.0, 0.7])
def test_ddim_chain_follows_song_et_al(eta):
    actor = _actor(num_steps=10, sampler="ddim", sampling_steps=4, eta=eta, chunk_size=3)
    score = actor.module.score_network
    _, alpha_bar = _schedule(10, 0.01, 0.3)
    steps = [9, 6, 3, 0]  # 4 evenly spaced steps from 9 down to 0
    assert actor.module.ddim_timesteps().tolist() == steps
    obs = torch.randn(2, 3, dtype=torch.float64)
    torch.manual_seed(4)
    action = actor(TensorDict(observation=obs, batch_size=[2]))["action"]
    assert action.shape == (2, 3, 2)
    torch.manual_seed(4)
    x = torch.randn(2, 3, 2, dtype=torch.float64)
    for i, t in enumerate(steps):
        inp = torch.cat(
            [x.reshape(2, 6), obs, torch.full((2, 1), float(t), dtype=torch.float64)], -1
        )
        eps = score(inp).reshape(2, 3, 2)
        a, a_prev = alpha_bar[t], (alpha_bar[steps[i + 1]] if i + 1 < len(steps) else 1.0)
        x0 = (x - math.sqrt(1 - a) * eps) / math.sqrt(a)
        sigma = eta * math.sqrt((1 - a_prev) / (1 - a)) * math.sqrt(1 - a / a_prev)
        x = math.sqrt(a_prev) * x0 + math.sqrt(1 - a_prev - sigma**2) * eps
        if sigma > 0:
            x = x + sigma * torch.randn(2, 3, 2, dtype=torch.float64)
    torch.testing.assert_close(action, x)


def test_default_network_spec_and_lazy_observation_size():
    actor = DiffusionActor(action_dim=2, num_steps=5)  # obs_dim inferred on first call
    out = actor(TensorDict(observation=torch.randn(6, 4), batch_size=[6]))
    assert out["action"].shape == (6, 2)
    from rl_core.specs import Bounded

    safe = DiffusionActor(1, 4, num_steps=5, spec=Bounded(-0.1, 0.1, shape=(1,)), safe=True)
    assert (
        safe(TensorDict(observation=torch.randn(6, 4), batch_size=[6]))["action"].abs().max() <= 0.1
    )


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"action_dim to be an int >= 1, got 0"):
        DiffusionActor(0)
    with pytest.raises(ValueError, match=r"num_steps to be an int >= 1, got 1.5"):
        DiffusionActor(2, num_steps=1.5)
    with pytest.raises(
        ValueError, match=r"0 < beta_start <= beta_end < 1, got beta_start=0.5, beta_end=0.1"
    ):
        DiffusionActor(2, beta_start=0.5, beta_end=0.1)
    with pytest.raises(ValueError, match=r"sampler in \('ddpm', 'ddim'\), got 'euler'"):
        DiffusionActor(2, sampler="euler")
    with pytest.raises(
        ValueError, match=r"sampler='ddpm' takes all num_steps=100 steps, got sampling_steps=10"
    ):
        DiffusionActor(2, sampling_steps=10)
    with pytest.raises(ValueError, match=r"sampling_steps <= num_steps=100, got 200"):
        DiffusionActor(2, sampler="ddim", sampling_steps=200)
    with pytest.raises(ValueError, match=r"eta >= 0, got -0.5"):
        DiffusionActor(2, sampler="ddim", eta=-0.5)
    with pytest.raises(TypeError, match=r"score_network to be an nn.Module, got function"):
        DiffusionActor(2, score_network=lambda x: x)
    actor = _actor()
    with pytest.raises(ValueError, match=r"observation shaped \[4, 3\], got \(4, 5\)"):
        actor(TensorDict(observation=torch.zeros(4, 5, dtype=torch.float64), batch_size=[4]))
    x0 = torch.zeros(4, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"t in \[0, num_steps=8\), got values in \[0, 8\]"):
        actor.module.add_noise(x0, torch.tensor([0, 1, 2, 8]))
    with pytest.raises(TypeError, match=r"t to be an integer tensor"):
        actor.module.add_noise(x0, torch.zeros(4))
    with pytest.raises(ValueError, match=r"clean_action shaped \[\*B, 2\], got \(4, 3\)"):
        actor.module.add_noise(torch.zeros(4, 3), torch.zeros(4, dtype=torch.long))
