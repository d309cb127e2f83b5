"""The GAE / TD(lambda) / TD(0) wrappers: layout handling, flags, validation."""

from __future__ import annotations

import pytest
import torch

from rl_core.ops import (
    generalized_advantage_estimate,
    reference,
    td0_return_estimate,
    td_lambda_return_estimate,
)

GAE_KEYS = ("state_value", "next_state_value", "reward", "done", "terminated")
TDL_KEYS = ("next_state_value", "reward", "done", "terminated")


def _per_column(kernel, traj, keys, *scalars):
    """Runs a reference kernel on each [T] sequence of a [*B, T, F] trajectory."""
    shape = traj["reward"].shape
    flat = {k: traj[k].movedim(-2, 0).reshape(shape[-2], -1) for k in keys}
    out = kernel(*scalars, *[flat[k] for k in keys])
    outs = out if isinstance(out, tuple) else (out,)
    moved = (shape[-2], *shape[:-2], shape[-1])
    return tuple(o.reshape(moved).movedim(0, -2) for o in outs)


def test_gae_batch_and_feature_dims_match_the_reference(make_trajectory):
    traj = make_trajectory((2, 3, 17, 4), seed=10)
    adv, target = generalized_advantage_estimate(0.97, 0.9, *[traj[k] for k in GAE_KEYS])
    want_adv, want_target = _per_column(
        reference.generalized_advantage_estimate, traj, GAE_KEYS, 0.97, 0.9
    )
    assert adv.shape == target.shape == (2, 3, 17, 4)
    torch.testing.assert_close(adv, want_adv)
    torch.testing.assert_close(target, want_target)


@pytest.mark.parametrize("time_dim", [0, 1, 2, -1, -3])
def test_gae_time_dim_moves_with_the_data(make_trajectory, time_dim):
    traj = make_trajectory((3, 11, 2), seed=11)
    expected = generalized_advantage_estimate(0.9, 0.8, *[traj[k] for k in GAE_KEYS])
    moved = {k: traj[k].movedim(-2, time_dim) for k in GAE_KEYS}
    adv, target = generalized_advantage_estimate(
        0.9, 0.8, *[moved[k] for k in GAE_KEYS], time_dim=time_dim
    )
    torch.testing.assert_close(adv, expected[0].movedim(-2, time_dim))
    torch.testing.assert_close(target, expected[1].movedim(-2, time_dim))


def test_gae_time_only_input_with_time_dim_minus_one():
    reward = torch.tensor([1.0, 1.0, 1.0])
    zeros = torch.zeros(3)
    done = torch.tensor([False, False, True])
    adv, _ = generalized_advantage_estimate(0.5, 1.0, zeros, zeros, reward, done, time_dim=-1)
    assert adv.tolist() == [1.75, 1.5, 1.0]


def test_gae_truncation_bootstraps_and_termination_does_not():
    reward = torch.zeros(1, 2, 1)
    value = torch.zeros(1, 2, 1)
    next_value = torch.full((1, 2, 1), 10.0)
    done = torch.tensor([True, True]).view(1, 2, 1)
    terminated = torch.tensor([False, True]).view(1, 2, 1)
    adv, _ = generalized_advantage_estimate(0.5, 1.0, value, next_value, reward, done, terminated)
    # Step 0 was truncated: it bootstraps from 10; the trace stops there (done) so the
    # terminated step 1 does not leak into it.
    assert adv.flatten().tolist() == [5.0, 0.0]


def test_gae_done_cuts_the_trace_inside_a_sequence():
    reward = torch.tensor([0.0, 0.0, 8.0]).view(1, 3, 1)
    zeros = torch.zeros(1, 3, 1)
    done = torch.tensor([False, True, False]).view(1, 3, 1)
    adv, target = generalized_advantage_estimate(0.5, 1.0, zeros, zeros, reward, done)
    assert adv.flatten().tolist() == [0.0, 0.0, 8.0]
    assert target.flatten().tolist() == [0.0, 0.0, 8.0]


def test_terminated_none_means_terminated_is_done(make_trajectory):
    traj = make_trajectory((2, 9, 1), seed=12)
    args = [traj[k] for k in GAE_KEYS[:4]]
    torch.testing.assert_close(
        generalized_advantage_estimate(0.9, 0.9, *args),
        generalized_advantage_estimate(0.9, 0.9, *args, traj["done"]),
    )
    args = [traj[k] for k in TDL_KEYS[:3]]
    torch.testing.assert_close(
        td_lambda_return_estimate(0.9, 0.9, *args),
        td_lambda_return_estimate(0.9, 0.9, *args, traj["done"]),
    )


def test_scalars_accept_zero_dim_tensors_and_ints(make_trajectory):
    traj = make_trajectory((2, 5, 1), seed=13)
    args = [traj[k] for k in GAE_KEYS]
    torch.testing.assert_close(
        generalized_advantage_estimate(torch.tensor(0.5), torch.tensor(1), *args),
        generalized_advantage_estimate(0.5, 1, *args),
    )


def test_mixed_float_dtypes_are_promoted(make_trajectory):
    traj = make_trajectory((2, 5, 1), seed=14, dtype=torch.float32)
    args = [traj[k] for k in GAE_KEYS]
    args[2] = args[2].double()
    adv, target = generalized_advantage_estimate(0.9, 0.9, *args)
    assert adv.dtype == target.dtype == torch.float64


def test_td_lambda_batch_dims_match_the_reference(make_trajectory):
    traj = make_trajectory((4, 13, 3), seed=15)
    target = td_lambda_return_estimate(0.95, 0.7, *[traj[k] for k in TDL_KEYS])
    (want,) = _per_column(reference.td_lambda_return_estimate, traj, TDL_KEYS, 0.95, 0.7)
    torch.testing.assert_close(target, want)


def test_td_lambda_with_lambda_zero_is_td0(make_trajectory):
    traj = make_trajectory((3, 8, 1), seed=16)
    torch.testing.assert_close(
        td_lambda_return_estimate(0.9, 0.0, *[traj[k] for k in TDL_KEYS]),
        td0_return_estimate(0.9, traj["next_state_value"], traj["reward"], traj["terminated"]),
    )


def test_td0_keeps_any_shape():
    terminated = torch.tensor([False, True])
    out = td0_return_estimate(0.5, torch.tensor([4.0, 4.0]), torch.tensor([1.0, 1.0]), terminated)
    assert out.tolist() == [3.0, 1.0]


def _gae_args(shape=(2, 5, 1)):
    value = torch.zeros(shape)
    done = torch.zeros(shape, dtype=torch.bool)
    return [value, value.clone(), value.clone(), done]


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (
            {"gamma": 1.5},
            ValueError,
            r"generalized_advantage_estimate: expected gamma in \[0, 1\], got 1.5",
        ),
        ({"lmbda": -0.1}, ValueError, r"expected lmbda in \[0, 1\], got -0.1"),
        (
            {"gamma": torch.ones(3)},
            TypeError,
            r"expected gamma to be a float or a one-element tensor, got a tensor of shape \(3,\)",
        ),
        (
            {"gamma": "0.9"},
            TypeError,
            r"expected gamma to be a float or a one-element tensor, got str",
        ),
        (
            {"reward": torch.zeros(2, 4, 1)},
            ValueError,
            r"expected reward of shape \(2, 5, 1\) like state_value, got \(2, 4, 1\)",
        ),
        (
            {"done": torch.zeros(2, 5, 1)},
            TypeError,
            r"expected done to be a torch.bool tensor, got torch.float32. Convert it with "
            r"done.bool\(\)",
        ),
        (
            {"terminated": torch.zeros(2, 5, 1, dtype=torch.int64)},
            TypeError,
            r"expected terminated to be a torch.bool tensor, got torch.int64",
        ),
        (
            {"reward": torch.zeros(2, 5, 1, dtype=torch.int64)},
            TypeError,
            r"expected reward to be a floating-point tensor, got torch.int64",
        ),
        (
            {"reward": torch.zeros(2, 5, 1, device="meta")},
            ValueError,
            r"expected reward on cpu like state_value, got meta",
        ),
        ({"time_dim": 3}, ValueError, r"time_dim=3 is out of range for state_value of shape"),
    ],
)
def test_gae_argument_errors(change, error, match):
    state_value, next_state_value, reward, done = _gae_args()
    kwargs = {
        "gamma": 0.9,
        "lmbda": 0.9,
        "state_value": state_value,
        "next_state_value": next_state_value,
        "reward": reward,
        "done": done,
        "terminated": done,
        "time_dim": -2,
    }
    kwargs.update(change)
    with pytest.raises(error, match=match):
        generalized_advantage_estimate(**kwargs)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_gamma_and_lmbda_as_one_element_tensors(shape):
    # One float each way: 0.5 and 1.0 as floats or as one-element tensors of any shape.
    state_value, next_state_value, reward, done = _gae_args((1, 3, 1))
    reward += 1.0
    as_floats = generalized_advantage_estimate(
        0.5, 1.0, state_value, next_state_value, reward, done
    )
    as_tensors = generalized_advantage_estimate(
        torch.full(shape, 0.5), torch.full(shape, 1.0), state_value, next_state_value, reward, done
    )
    assert as_floats[0].flatten().tolist() == [1.75, 1.5, 1.0]
    for a, b in zip(as_floats, as_tensors, strict=True):
        assert torch.equal(a, b)


def test_td_lambda_and_td0_argument_errors():
    value = torch.zeros(2, 5, 1)
    done = torch.zeros(2, 5, 1, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"td_lambda_return_estimate: expected gamma in \[0, 1\]"):
        td_lambda_return_estimate(2.0, 0.9, value, value, done)
    with pytest.raises(ValueError, match=r"td_lambda_return_estimate: expected done of shape"):
        td_lambda_return_estimate(0.9, 0.9, value, value, done[:, :3])
    with pytest.raises(
        TypeError, match=r"td0_return_estimate: expected terminated to be a torch.bool"
    ):
        td0_return_estimate(0.9, value, value, done.float())
    with pytest.raises(
        ValueError, match=r"td0_return_estimate: expected next_state_value with at least one"
    ):
        td0_return_estimate(0.9, torch.tensor(1.0), torch.tensor(1.0), torch.tensor(False))
