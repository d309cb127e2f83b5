"""gSDEModule and LazygSDEModule: the noise, the action and the scale by hand, and the per-episode
noise drawn when gSDENoise's zeros come in."""

import math

import pytest
import torch

from rl_core import ExplorationType, set_exploration_type
from rl_objectives.modules.gsde import LazygSDEModule, gSDEModule


def test_noise_action_and_scale_by_hand():
    m = gSDEModule(1, 2, sigma_init=0.5, learn_sigma=False)
    mu, state, eps = torch.tensor([[1.0]]), torch.tensor([[3.0, 4.0]]), torch.tensor([[[1.0, 2.0]]])
    _, scale, action, kept = m(mu, state, eps)
    # noise = 0.5 * 1 * 3 + 0.5 * 2 * 4 = 5.5; scale = sqrt(0.5^2 * 9 + 0.5^2 * 16) = 2.5
    assert action.item() == pytest.approx(6.5)
    assert scale.item() == pytest.approx(2.5)
    assert torch.equal(kept, eps)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        assert m(mu, state, eps)[2].item() == 1.0


def test_zeros_draw_a_new_matrix_and_sigma_is_learned():
    torch.manual_seed(0)
    m = gSDEModule(2, 3)
    assert torch.allclose(m.sigma, torch.full((2, 3), math.sqrt(0.99 / 3)))
    assert m.log_sigma.requires_grad
    mu, state = torch.zeros(4, 2), torch.randn(4, 3)
    _, _, action, eps = m(mu, state, torch.zeros(4, 1))  # what gSDENoise primes at reset
    assert eps.shape == (4, 2, 3)
    assert eps.abs().sum() > 0
    expected = torch.einsum("bij,bj->bi", m.sigma * eps, state)
    torch.testing.assert_close(action, expected)
    with pytest.raises(ValueError, match="mu and state must share their batch dims"):
        m(torch.zeros(3, 2), state, None)


def test_lazy_module_sizes_and_initial_variance():
    torch.manual_seed(0)
    m = LazygSDEModule(sigma_init=2.0, learn_sigma=False)
    state = torch.tensor([[1.0, 2.0], [1.0, 2.0]])  # mean squares 1 and 4
    m(torch.zeros(2, 3), state, None)
    assert type(m) is gSDEModule
    # sigma_ij = 2 / sqrt(2 * mean(s_j^2)): the noise variance sum_j sigma_j^2 s_j^2 = 4
    torch.testing.assert_close(m.sigma[0], torch.tensor([2 / math.sqrt(2), 1 / math.sqrt(2)]))
    assert (m.sigma.pow(2) * state[0].pow(2)).sum(-1).tolist() == pytest.approx([4.0] * 3)
