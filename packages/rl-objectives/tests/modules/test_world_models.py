"""RSSM prior/posterior/rollout and the world-model wrapper, against float64 references written
from the definitions (Hafner et al. 2018/2019: GRU belief, Gaussian states, softplus scales)."""

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch.nn import functional as F

from rl_core.specs import Bounded
from rl_objectives.modules import RSSMPosterior, RSSMPrior, RSSMRollout, WorldModelWrapper

S, H, A, E, HID = 3, 5, 2, 4, 6


def _gru_reference(cell, x, h):
    """torch.nn.GRUCell's equations (gates r, z, n in that order), written out."""
    w_ih, w_hh, b_ih, b_hh = cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh
    gi = x @ w_ih.T + b_ih
    gh = h @ w_hh.T + b_hh
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_z + h_z)
    n = torch.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


def _linear(layer, x):
    return x @ layer.weight.T + layer.bias


def _prior_reference(prior, state, belief, action, noise, scale_lb=0.1):
    x = F.elu(_linear(prior.action_state_projector[0], torch.cat([state, action], -1)))
    h = _gru_reference(prior.rnn, x, belief)
    proj = prior.rnn_to_prior_projector
    out = _linear(proj[2], F.elu(_linear(proj[0], h)))
    mean, raw = out[..., :S], out[..., S:]
    std = torch.clamp(torch.log1p(torch.exp(raw)), min=scale_lb)
    return mean, std, mean + noise * std, h


def _posterior_reference(post, belief, emb, noise, scale_lb=0.1):
    proj = post.obs_rnn_to_post_projector
    out = _linear(proj[2], F.elu(_linear(proj[0], torch.cat([belief, emb], -1))))
    mean, raw = out[..., :S], out[..., S:]
    std = torch.clamp(torch.log1p(torch.exp(raw)), min=scale_lb)
    return mean, std, mean + noise * std


def _modules(dtype=torch.float64):
    torch.manual_seed(0)
    prior = RSSMPrior(Bounded(-1.0, 1.0, shape=(A,)), hidden_dim=HID, rnn_hidden_dim=H,
                      state_dim=S).to(dtype)  # fmt: skip
    post = RSSMPosterior(hidden_dim=HID, state_dim=S, rnn_hidden_dim=H, obs_embed_dim=E).to(dtype)
    return prior, post


def test_prior_matches_reference_values_and_gradients():
    prior, _ = _modules()
    g = torch.Generator().manual_seed(1)
    state, belief, action, noise = (
        torch.randn(4, 7, n, generator=g, dtype=torch.float64) for n in (S, H, A, S)
    )
    out = prior(state, belief, action, noise)
    ref = _prior_reference(prior, state.reshape(-1, S), belief.reshape(-1, H),
                           action.reshape(-1, A), noise.reshape(-1, S))  # fmt: skip
    for got, want in zip(out, ref, strict=True):
        torch.testing.assert_close(got.reshape(-1, got.shape[-1]), want)
    params = list(prior.parameters())
    grads = torch.autograd.grad(sum(o.sum() for o in out), params)
    ref_grads = torch.autograd.grad(sum(r.sum() for r in ref), params)
    for got, want in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want)


def test_prior_scale_lower_bound_and_sampling():
    prior, _ = _modules()
    with torch.no_grad():
        prior.rnn_to_prior_projector[2].bias[S:] = -50.0  # softplus ~ 0: clamped at scale_lb
    mean, std, state, _ = prior(torch.zeros(2, S, dtype=torch.float64),
                                torch.zeros(2, H, dtype=torch.float64),
                                torch.zeros(2, A, dtype=torch.float64))  # fmt: skip
    assert torch.all(std == 0.1)
    assert not torch.equal(state, mean)  # sampled with fresh noise


def test_prior_input_errors():
    with pytest.raises(ValueError, match=r"RSSMPrior: expected an action spec with a feature dim"):
        RSSMPrior(Bounded(-1.0, 1.0, shape=()))
    with pytest.raises(ValueError, match=r"RSSMPrior: expected state_dim as a positive int, got 0"):
        RSSMPrior(action_dim=1, state_dim=0)
    prior, _ = _modules()
    z = torch.zeros(2, S, dtype=torch.float64)
    with pytest.raises(
        ValueError, match=r"RSSMPrior: expected noise of shape \(2, 3\).*got \(2, 4\)"
    ):
        prior(z, torch.zeros(2, H, dtype=torch.float64), torch.zeros(2, A, dtype=torch.float64),
              torch.zeros(2, 4, dtype=torch.float64))  # fmt: skip


def test_prior_lazy_without_action_size():
    prior = RSSMPrior(hidden_dim=HID, rnn_hidden_dim=H, state_dim=S)
    assert isinstance(prior.action_state_projector[0], torch.nn.LazyLinear)
    out = prior(torch.zeros(3, S), torch.zeros(3, H), torch.zeros(3, A))
    assert out[3].shape == (3, H)


def test_posterior_matches_reference_values_and_gradients():
    _, post = _modules()
    g = torch.Generator().manual_seed(2)
    belief, emb, noise = (torch.randn(5, n, generator=g, dtype=torch.float64) for n in (H, E, S))
    out = post(belief, emb, noise)
    ref = _posterior_reference(post, belief, emb, noise)
    for got, want in zip(out, ref, strict=True):
        torch.testing.assert_close(got, want)
    params = list(post.parameters())
    grads = torch.autograd.grad(out[2].square().sum(), params)
    ref_grads = torch.autograd.grad(ref[2].square().sum(), params)
    for got, want in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want)


def _rollout_modules():
    prior, post = _modules()
    prior_td = TensorDictModule(
        prior,
        in_keys=["state", "belief", "action"],
        out_keys=[("next", "prior_mean"), ("next", "prior_std"), "_", ("next", "belief")],
    )
    post_td = TensorDictModule(
        post,
        in_keys=[("next", "belief"), ("next", "encoded_latents")],
        out_keys=[("next", "posterior_mean"), ("next", "posterior_std"), ("next", "state")],
    )
    return prior, post, RSSMRollout(prior_td, post_td)


def test_rollout_filters_step_by_step_as_the_definition():
    prior, post, rollout = _rollout_modules()
    g = torch.Generator().manual_seed(3)
    B, T = 3, 6
    td = TensorDict(
        state=torch.randn(B, T, S, generator=g, dtype=torch.float64),
        belief=torch.randn(B, T, H, generator=g, dtype=torch.float64),
        action=torch.randn(B, T, A, generator=g, dtype=torch.float64),
        next=TensorDict(
            encoded_latents=torch.randn(B, T, E, generator=g, dtype=torch.float64),
            batch_size=[B, T],
        ),
        batch_size=[B, T],
    )
    torch.manual_seed(10)
    out = rollout(td)
    # the same draws in the same order: the prior's noise, then the posterior's, per step
    torch.manual_seed(10)
    state, belief = td["state"][:, 0], td["belief"][:, 0]
    for t in range(T):
        p_noise = torch.randn(B, S, dtype=torch.float64)
        p_mean, p_std, _, belief = _prior_reference(
            prior, state, belief, td["action"][:, t], p_noise
        )
        q_noise = torch.randn(B, S, dtype=torch.float64)
        q_mean, q_std, state = _posterior_reference(post, belief, td["next", "encoded_latents"][:, t],
                                                    q_noise)  # fmt: skip
        torch.testing.assert_close(out["next", "prior_mean"][:, t], p_mean)
        torch.testing.assert_close(out["next", "prior_std"][:, t], p_std)
        torch.testing.assert_close(out["next", "belief"][:, t], belief)
        torch.testing.assert_close(out["next", "posterior_mean"][:, t], q_mean)
        torch.testing.assert_close(out["next", "posterior_std"][:, t], q_std)
        torch.testing.assert_close(out["next", "state"][:, t], state)
        if t + 1 < T:  # the root latents of the next step are this step's posterior ones
            torch.testing.assert_close(out["state"][:, t + 1], state)
            torch.testing.assert_close(out["belief"][:, t + 1], belief)
    assert out.batch_size == (B, T)
    torch.testing.assert_close(out["state"][:, 0], td["state"][:, 0])


def test_rollout_is_differentiable_through_time():
    prior, _, rollout = _rollout_modules()
    td = TensorDict(state=torch.zeros(2, 4, S, dtype=torch.float64),
                    belief=torch.zeros(2, 4, H, dtype=torch.float64),
                    action=torch.randn(2, 4, A, dtype=torch.float64),
                    batch_size=[2, 4])  # fmt: skip
    td["next", "encoded_latents"] = torch.randn(2, 4, E, dtype=torch.float64)
    out = rollout(td)
    out["next", "state"][:, -1].sum().backward()
    assert prior.action_state_projector[0].weight.grad.abs().sum() > 0


def test_rollout_input_errors():
    prior, post, rollout = _rollout_modules()
    with pytest.raises(TypeError, match=r"RSSMRollout: expected rssm_prior as a TensorDict module"):
        RSSMRollout(prior, post)
    with pytest.raises(ValueError, match=r"RSSMRollout: expected a TensorDict with a time dim"):
        rollout(TensorDict(state=torch.zeros(S)))


def test_world_model_wrapper_runs_both_parts():
    trans = TensorDictModule(torch.nn.Linear(2, 3), ["observation"], ["latent"])
    reward = TensorDictModule(torch.nn.Linear(3, 1), ["latent"], ["reward"])
    model = WorldModelWrapper(trans, reward)
    assert model.get_transition_model_operator() is trans
    assert model.get_reward_operator() is reward
    out = model(TensorDict(observation=torch.ones(4, 2), batch_size=[4]))
    torch.testing.assert_close(out["reward"], reward.module(trans.module(torch.ones(4, 2))))
