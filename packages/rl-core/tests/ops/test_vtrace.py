"""The V-trace wrapper: layout handling, clipping, flags, validation."""

from __future__ import annotations

import pytest
import torch

from rl_core.ops import generalized_advantage_estimate, reference, vtrace_advantage_estimate

KEYS = ("log_pi", "log_mu", "state_value", "next_state_value", "reward", "done", "terminated")


@pytest.mark.parametrize("time_dim", [-2, 0, 1])
def test_vtrace_batch_feature_and_time_dims_match_the_reference(make_trajectory, time_dim):
    traj = make_trajectory((3, 2, 12, 2), seed=20)
    moved = {k: traj[k].movedim(-2, time_dim) for k in KEYS}
    adv, target = vtrace_advantage_estimate(
        0.9, *[moved[k] for k in KEYS], rho_thresh=1.5, c_thresh=0.8, time_dim=time_dim
    )
    flat = {k: traj[k].movedim(-2, 0).reshape(12, -1) for k in KEYS}
    want_adv, want_target = reference.vtrace_advantage_estimate(
        0.9, 1.5, 0.8, *[flat[k] for k in KEYS]
    )

    def back(t):
        return t.reshape(12, 3, 2, 2).movedim(0, -2).movedim(-2, time_dim)

    torch.testing.assert_close(adv, back(want_adv))
    torch.testing.assert_close(target, back(want_target))


def test_on_policy_vtrace_equals_lambda_one_gae(make_trajectory):
    traj = make_trajectory((4, 10, 1), seed=21)
    values = [traj[k] for k in KEYS[2:]]
    adv, target = vtrace_advantage_estimate(0.9, traj["log_pi"], traj["log_pi"], *values)
    gae_adv, gae_target = generalized_advantage_estimate(0.9, 1.0, *values)
    torch.testing.assert_close(target, gae_target)
    # One-step advantage towards the next V-trace target: r + g * v[t+1] - V[t].
    not_term = (~traj["terminated"]).double()
    next_target = torch.where(
        traj["done"], traj["next_state_value"], torch.cat([target[:, 1:], target[:, -1:]], 1)
    )
    next_target[:, -1] = traj["next_state_value"][:, -1]
    torch.testing.assert_close(
        adv, traj["reward"] + 0.9 * not_term * next_target - traj["state_value"]
    )
    # ... which, on-policy and unclipped, is the lambda=1 GAE advantage.
    torch.testing.assert_close(adv, gae_adv)


def test_clipping_thresholds_limit_the_importance_weights():
    value = torch.zeros(1, 1, 1)
    reward = torch.ones(1, 1, 1)
    done = torch.ones(1, 1, 1, dtype=torch.bool)
    log_pi = torch.full((1, 1, 1), 2.0)  # ratio e^2 with log_mu = 0
    log_mu = torch.zeros(1, 1, 1)
    adv, target = vtrace_advantage_estimate(
        0.9, log_pi, log_mu, value, value, reward, done, rho_thresh=1.5
    )
    assert adv.item() == pytest.approx(1.5)
    assert target.item() == pytest.approx(1.5)
    adv, _ = vtrace_advantage_estimate(
        0.9, -log_pi, log_mu, value, value, reward, done, rho_thresh=1.5
    )
    assert adv.item() == pytest.approx(torch.exp(torch.tensor(-2.0)).item())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"rho_thresh": 0.0},
            ValueError,
            r"vtrace_advantage_estimate: expected rho_thresh > 0, got 0.0",
        ),
        ({"c_thresh": -1.0}, ValueError, r"expected c_thresh > 0, got -1.0"),
        ({"gamma": 1.01}, ValueError, r"expected gamma in \[0, 1\], got 1.01"),
        (
            {"log_mu": torch.zeros(2, 3, 2)},
            ValueError,
            r"expected log_mu of shape \(2, 3, 1\) like log_pi, got \(2, 3, 2\)",
        ),
        (
            {"done": torch.zeros(2, 3, 1, dtype=torch.uint8)},
            TypeError,
            r"expected done to be a torch.bool tensor, got torch.uint8",
        ),
    ],
)
def test_vtrace_argument_errors(kwargs, error, match):
    zeros = torch.zeros(2, 3, 1)
    args = {
        "gamma": 0.9,
        "log_pi": zeros,
        "log_mu": zeros,
        "state_value": zeros,
        "next_state_value": zeros,
        "reward": zeros,
        "done": torch.zeros(2, 3, 1, dtype=torch.bool),
    }
    args.update(kwargs)
    with pytest.raises(error, match=match):
        vtrace_advantage_estimate(**args)
