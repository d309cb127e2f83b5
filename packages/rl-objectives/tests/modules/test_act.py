"""ACTModel: the CVAE's reparameterised sample, the prior at inference, shapes, and bad input."""

from __future__ import annotations

import pytest
import torch

from rl_objectives.modules import ACTModel


def _model(**kw):
    torch.manual_seed(0)
    args = dict(
        obs_dim=3,
        action_dim=2,
        chunk_size=4,
        hidden_dim=16,
        nheads=2,
        num_encoder_layers=1,
        num_decoder_layers=2,
        latent_dim=5,
        dropout=0.0,
    )
    args.update(kw)
    return ACTModel(**args).double()


def test_training_call_decodes_the_reparameterised_posterior_sample():
    model = _model()
    obs = torch.randn(6, 3, dtype=torch.float64)
    chunk = torch.randn(6, 4, 2, dtype=torch.float64)
    torch.manual_seed(123)
    pred, mu, log_var = model(obs, chunk)
    # by hand: z = mu + exp(log_var / 2) * eps, eps the next standard normal draw
    mu_ref, log_var_ref = model.encode(obs, chunk)
    torch.manual_seed(123)
    eps = torch.randn(6, 5, dtype=torch.float64)
    z = mu_ref + torch.sqrt(torch.exp(log_var_ref)) * eps
    torch.testing.assert_close(mu, mu_ref)
    torch.testing.assert_close(log_var, log_var_ref)
    torch.testing.assert_close(pred, model.decode(obs, z))
    assert pred.shape == (6, 4, 2)
    assert mu.shape == (6, 5)
    # the posterior depends on the actions, the decoder on z
    assert not torch.allclose(model.encode(obs, chunk + 1.0)[0], mu_ref)
    assert not torch.allclose(model.decode(obs, z + 1.0), pred)


def test_inference_uses_the_prior_mean_and_keeps_batch_dims():
    model = _model()
    obs = torch.randn(2, 3, 3, dtype=torch.float64)
    pred, mu, log_var = model(obs)
    assert pred.shape == (2, 3, 4, 2)
    assert mu.shape == log_var.shape == (2, 3, 5)
    assert mu.eq(0).all()
    assert log_var.eq(0).all()
    torch.testing.assert_close(pred, model.decode(obs, torch.zeros(2, 3, 5, dtype=torch.float64)))
    torch.testing.assert_close(pred, model(obs)[0])  # deterministic
    # each sample is decoded on its own: the batch does not mix
    torch.testing.assert_close(model(obs[0, :1])[0], pred[0, :1])


def test_gradients_reach_encoder_and_decoder():
    model = _model()
    pred, mu, log_var = model(
        torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 4, 2, dtype=torch.float64)
    )
    (pred.sum() + mu.sum() + log_var.sum()).backward()
    for name in (
        "action_proj.weight",
        "latent_proj.weight",
        "action_queries",
        "action_head.weight",
    ):
        grad = dict(model.named_parameters())[name].grad
        assert grad is not None, name
        assert grad.abs().sum() > 0, name


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"chunk_size to be an int >= 1, got 0"):
        ACTModel(3, 2, 0)
    with pytest.raises(ValueError, match=r"obs_dim to be an int >= 1, got 2.5"):
        ACTModel(2.5, 2, 4)
    with pytest.raises(ValueError, match=r"hidden_dim to be even and a multiple of nheads=4"):
        ACTModel(3, 2, 4, hidden_dim=18, nheads=4)
    with pytest.raises(ValueError, match=r"dropout in \[0, 1\), got 1.0"):
        ACTModel(3, 2, 4, hidden_dim=16, nheads=2, dropout=1.0)
    model = _model()
    with pytest.raises(ValueError, match=r"observation shaped \[\*B, 3\], got \(4, 5\)"):
        model(torch.zeros(4, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"action_chunk shaped \[\*B, 4, 2\], got \(4, 3, 2\)"):
        model(torch.zeros(4, 3, dtype=torch.float64), torch.zeros(4, 3, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"batch \(4,\) and the action_chunk's \(2,\) differ"):
        model(torch.zeros(4, 3, dtype=torch.float64), torch.zeros(2, 4, 2, dtype=torch.float64))
