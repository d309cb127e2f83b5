"""Gradients of the value ops: gradcheck, and agreement with autograd through the loops."""

from __future__ import annotations

import pytest
import torch

from rl_core.ops import (
    generalized_advantage_estimate,
    reference,
    td_lambda_return_estimate,
    vtrace_advantage_estimate,
)


def _leaves(traj, keys):
    return {k: traj[k].clone().requires_grad_() for k in keys}


def test_gae_gradcheck(make_trajectory):
    traj = make_trajectory((2, 7, 1), seed=30, done_prob=0.3)
    done, terminated = traj["done"], traj["terminated"]

    def gae(value, next_value, reward):
        return generalized_advantage_estimate(0.9, 0.8, value, next_value, reward, done, terminated)

    inputs = [
        traj[k].clone().requires_grad_() for k in ("state_value", "next_state_value", "reward")
    ]
    assert torch.autograd.gradcheck(gae, inputs)


def test_td_lambda_gradcheck(make_trajectory):
    traj = make_trajectory((3, 6, 1), seed=31, done_prob=0.3)

    def td_lambda(next_value, reward):
        return td_lambda_return_estimate(
            0.95, 0.6, next_value, reward, traj["done"], traj["terminated"]
        )

    inputs = [traj[k].clone().requires_grad_() for k in ("next_state_value", "reward")]
    assert torch.autograd.gradcheck(td_lambda, inputs)


def test_vtrace_gradcheck_with_fixed_importance_weights(make_trajectory):
    traj = make_trajectory((2, 6, 1), seed=32, done_prob=0.3, independent_next_value=True)

    def vtrace(value, next_value, reward):
        return vtrace_advantage_estimate(
            0.9,
            traj["log_pi"],
            traj["log_mu"],
            value,
            next_value,
            reward,
            traj["done"],
            traj["terminated"],
            rho_thresh=1.2,
            c_thresh=0.9,
        )

    inputs = [
        traj[k].clone().requires_grad_() for k in ("state_value", "next_state_value", "reward")
    ]
    assert torch.autograd.gradcheck(vtrace, inputs)


@pytest.mark.parametrize("used", ["advantage", "target", "both"])
def test_gae_gradients_match_autograd_through_the_reference_loop(make_trajectory, used):
    traj = make_trajectory((4, 12, 1), seed=33)
    keys = ("state_value", "next_state_value", "reward")
    op_in, loop_in = _leaves(traj, keys), _leaves(traj, keys)
    flags = (traj["done"], traj["terminated"])
    op_out = generalized_advantage_estimate(0.97, 0.9, *op_in.values(), *flags)
    flat = [x.squeeze(-1).T for x in (*loop_in.values(), *flags)]
    loop_out = reference.generalized_advantage_estimate(0.97, 0.9, *flat)
    weights = {"advantage": (1.0, 0.0), "target": (0.0, 1.0), "both": (0.3, -2.0)}[used]
    loss = sum(w * (o**2).sum() for w, o in zip(weights, op_out) if w)
    loop_loss = sum(w * (o**2).sum() for w, o in zip(weights, loop_out) if w)
    loss.backward()
    loop_loss.backward()
    for key in keys:
        torch.testing.assert_close(op_in[key].grad, loop_in[key].grad)


def test_vtrace_gradients_match_the_loop_and_skip_the_log_probs(make_trajectory):
    traj = make_trajectory((3, 10, 1), seed=34, independent_next_value=True)
    keys = ("log_pi", "log_mu", "state_value", "next_state_value", "reward")
    op_in, loop_in = _leaves(traj, keys), _leaves(traj, keys)
    flags = (traj["done"], traj["terminated"])
    adv, target = vtrace_advantage_estimate(0.9, *op_in.values(), *flags, rho_thresh=1.3)
    ((adv**2).sum() + target.sum()).backward()
    flat = [x.squeeze(-1).T for x in (*loop_in.values(), *flags)]
    flat[0], flat[1] = flat[0].detach(), flat[1].detach()  # IMPALA: weights are constants
    loop_adv, loop_target = reference.vtrace_advantage_estimate(0.9, 1.3, 1.0, *flat)
    ((loop_adv**2).sum() + loop_target.sum()).backward()
    for key in keys[2:]:
        torch.testing.assert_close(op_in[key].grad, loop_in[key].grad)
    assert op_in["log_pi"].grad is None
    assert op_in["log_mu"].grad is None
