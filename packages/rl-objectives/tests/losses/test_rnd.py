"""RNDLoss against a float64 reference of Burda et al. 2018's predictor loss: the mean over the
embedding of the squared error between predictor and frozen target, on the (standardised)
next observation, over the kept share of the batch."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_objectives import RNDLoss


def _linear(weight: list[list[float]]) -> torch.nn.Linear:
    w = torch.tensor(weight, dtype=torch.float64)
    layer = torch.nn.Linear(w.shape[1], w.shape[0], bias=False).double()
    with torch.no_grad():
        layer.weight.copy_(w)
    return layer


TARGET_W = [[1.0, -2.0], [0.5, 3.0], [-1.0, 1.0]]
PREDICTOR_W = [[0.0, 1.0], [1.0, 1.0], [2.0, -0.5]]
OBS = [[1.0, 0.0], [0.5, -2.0], [3.0, 1.0], [-1.0, 0.25]]


def ref_error(obs: list[float]) -> float:
    diffs = [sum((PREDICTOR_W[k][i] - TARGET_W[k][i]) * obs[i] for i in range(2)) for k in range(3)]
    return sum(d * d for d in diffs) / 3


def ref_grad(batch: list[list[float]]) -> list[list[float]]:
    """d/dW_P of mean_batch mean_k ((W_P - W_T) o)_k^2 = 2 / (3 n) sum_o ((W_P - W_T) o)_k o_i."""
    grad = [[0.0, 0.0] for _ in range(3)]
    for o in batch:
        for k in range(3):
            d = sum((PREDICTOR_W[k][i] - TARGET_W[k][i]) * o[i] for i in range(2))
            for i in range(2):
                grad[k][i] += 2 * d * o[i] / (3 * len(batch))
    return grad


def _batch(obs: list[list[float]]) -> TensorDict:
    return TensorDict(
        {"next": {"observation": torch.tensor(obs, dtype=torch.float64)}}, batch_size=[len(obs)]
    )


def test_loss_and_gradient_match_the_reference_and_spare_the_target():
    predictor, target = _linear(PREDICTOR_W), _linear(TARGET_W)
    loss = RNDLoss(predictor, target, update_fraction=1.0)
    out = loss(_batch(OBS))["loss_predictor"]
    assert out.item() == pytest.approx(sum(ref_error(o) for o in OBS) / len(OBS), rel=1e-12)
    out.backward()
    torch.testing.assert_close(
        predictor.weight.grad, torch.tensor(ref_grad(OBS), dtype=torch.float64)
    )
    assert target.weight.grad is None
    assert not target.weight.requires_grad
    per_sample = RNDLoss(predictor, target, update_fraction=1.0, reduction="none")(_batch(OBS))
    torch.testing.assert_close(
        per_sample["loss_predictor"].detach(),
        torch.tensor([ref_error(o) for o in OBS], dtype=torch.float64),
    )


def test_update_fraction_keeps_a_random_share_of_the_samples():
    predictor, target = _linear(PREDICTOR_W), _linear(TARGET_W)
    errors = torch.tensor([ref_error(o) for o in OBS], dtype=torch.float64)
    torch.manual_seed(1)
    keep = torch.rand(len(OBS)) < 0.5
    torch.manual_seed(1)
    mean = RNDLoss(predictor, target, update_fraction=0.5)(_batch(OBS))["loss_predictor"]
    assert 0 < keep.sum() < len(OBS)  # this seed keeps some and drops some
    assert mean.item() == pytest.approx(errors[keep].mean().item(), rel=1e-12)
    torch.manual_seed(1)
    none = RNDLoss(predictor, target, update_fraction=0.5, reduction="none")(_batch(OBS))
    torch.testing.assert_close(none["loss_predictor"].detach(), torch.where(keep, errors, 0.0))
    zero = RNDLoss(predictor, target, update_fraction=0.0)(_batch(OBS))["loss_predictor"]
    assert zero.item() == 0.0


def test_observations_are_standardised_with_the_shared_statistics():
    class Stats:  # the interface of rl-envs' RunningMeanStd: normalize(x)
        def normalize(self, x):
            return (x - 1.0) / 2.0

    predictor, target = _linear(PREDICTOR_W), _linear(TARGET_W)
    loss = RNDLoss(predictor, target, obs_rms=Stats(), obs_clip=0.6, update_fraction=1.0)
    normed = [[max(-0.6, min(0.6, (v - 1.0) / 2.0)) for v in o] for o in OBS]
    out = loss(_batch(OBS))["loss_predictor"]
    assert out.item() == pytest.approx(sum(ref_error(o) for o in normed) / len(OBS), rel=1e-12)


def test_bad_input_is_refused_naming_the_argument():
    net = torch.nn.Linear(2, 3)
    with pytest.raises(ValueError, match=r"expected update_fraction in \[0, 1\].*got 1\.5"):
        RNDLoss(net, torch.nn.Linear(2, 3), update_fraction=1.5)
    with pytest.raises(ValueError, match="expected obs_clip as a finite number > 0, got -1"):
        RNDLoss(net, torch.nn.Linear(2, 3), obs_clip=-1)
    with pytest.raises(ValueError, match="reduction must be"):
        RNDLoss(net, torch.nn.Linear(2, 3), reduction="max")
    with pytest.raises(TypeError, match=r"expected target_network as a torch\.nn\.Module"):
        RNDLoss(net, "target")
    with pytest.raises(TypeError, match="expected obs_rms with a normalize"):
        RNDLoss(net, torch.nn.Linear(2, 3), obs_rms=object())
    loss = RNDLoss(net, torch.nn.Linear(2, 4))
    batch = TensorDict({"next": {"observation": torch.randn(5, 2)}}, batch_size=[5])
    with pytest.raises(ValueError, match=r"shaped like the target's \(5, 4\), got \(5, 3\)"):
        loss(batch)
    with pytest.raises(KeyError, match=r"expected the observation at .*pixels.*set_keys"):
        RNDLoss(net, torch.nn.Linear(2, 3)).set_keys(observation=("next", "pixels"))(batch)
