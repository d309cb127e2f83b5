"""The compiled GAE, TD(lambda) and V-trace kernels against rl_core's reference kernels."""

from __future__ import annotations

import math

import pytest
import torch

import rl_kernels  # noqa: F401  (registers the kernels)
from rl_core import ops
from rl_core.ops import reference

VALUE_OPS = (
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "vtrace_advantage_estimate",
)


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _check_against_reference(name, args, device):
    moved = tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args)
    got = _as_tuple(getattr(torch.ops.rl_core, name)(*moved))
    expected = _as_tuple(getattr(reference, name)(*args))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.device.type == device
        assert g.dtype == e.dtype
        assert g.shape == e.shape
        # Outputs are laid out like torch.empty_like(reward), as the fake kernels say.
        assert g.stride() == torch.empty_like(moved[-3]).stride()
        torch.testing.assert_close(g.cpu(), e)


@pytest.mark.parametrize("name", VALUE_OPS)
def test_kernels_are_registered_for_cpu(name):
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"rl_core::{name}", "CPU")


@pytest.mark.parametrize("name", VALUE_OPS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("done_prob", [0.0, 0.3, 1.0], ids=["never-done", "some-done", "all-done"])
def test_value_kernel_matches_reference(device, name, dtype, done_prob, trajectory, op_args):
    data = trajectory(37, 9, dtype=dtype, done_prob=done_prob, seed=int(done_prob * 10))
    _check_against_reference(name, op_args(name, data), device)


def _impala_vtrace(gamma, rho_bar, c_bar, lp, lm, v, nv, r, done, term):
    """One sequence, plain floats: IMPALA's v_s (eq. 1) and advantage rho_s (r_s + gamma
    v_{s+1} - V(x_s)), v_{s+1} replaced by the bootstrap value next_state_value[s] where the
    episode or the data stops (TorchRL's choice at the last step)."""
    steps = len(r)
    ratio = [math.exp(a - b) for a, b in zip(lp, lm)]
    rho = [min(rho_bar, x) for x in ratio]
    c = [min(c_bar, x) for x in ratio]
    delta = [rho[t] * (r[t] + gamma * (1 - term[t]) * nv[t] - v[t]) for t in range(steps)]
    vs = []
    for s in range(steps):
        total, weight, t = 0.0, 1.0, s
        while True:
            total += weight * delta[t]
            if done[t] or t == steps - 1:
                break
            weight *= gamma * c[t]
            t += 1
        vs.append(v[s] + total)
    adv = []
    for s in range(steps):
        v_next = nv[s] if done[s] or s == steps - 1 else vs[s + 1]
        adv.append(rho[s] * (r[s] + gamma * (1 - term[s]) * v_next - v[s]))
    return adv, vs


@pytest.mark.parametrize(("rho_bar", "c_bar"), [(1.0, 1.0), (1.6, 0.6), (0.7, 1.4)])
def test_vtrace_kernel_matches_impala_with_independent_next_values(
    device, rho_bar, c_bar, trajectory
):
    # next_state_value is drawn apart from state_value (issue 43: the advantage must read
    # V(x_{s+1}) + correction, not next_state_value[s] + correction).
    data = trajectory(30, 7, done_prob=0.2, seed=11)
    assert (data["done"] & ~data["terminated"]).any()
    assert data["terminated"].any()
    keys = ("log_pi", "log_mu", "state_value", "next_state_value", "reward", "done", "terminated")
    moved = [data[k].to(device) for k in keys]
    adv, vs = torch.ops.rl_core.vtrace_advantage_estimate(0.95, rho_bar, c_bar, *moved)
    for j in range(7):
        want_adv, want_vs = _impala_vtrace(
            0.95, rho_bar, c_bar, *(data[k][:, j].tolist() for k in keys)
        )
        torch.testing.assert_close(vs[:, j].cpu(), torch.tensor(want_vs, dtype=torch.float64))
        torch.testing.assert_close(adv[:, j].cpu(), torch.tensor(want_adv, dtype=torch.float64))


@pytest.mark.parametrize("name", VALUE_OPS)
@pytest.mark.parametrize("shape", [(0, 5), (6, 0), (0, 0), (1, 1), (300, 2)])
def test_value_kernel_on_edge_shapes(device, name, shape, trajectory, op_args):
    _check_against_reference(name, op_args(name, trajectory(*shape, seed=3)), device)


@pytest.mark.parametrize("name", VALUE_OPS)
def test_value_kernel_reads_strided_inputs(device, name, trajectory, op_args):
    data = trajectory(40, 12, seed=5)
    # Every other column of a [T, 24] buffer, and a transposed [N, T] buffer: neither is
    # contiguous, and the kernel must read them as they are.
    strided = {
        key: torch.stack([value, value], dim=2).flatten(1)[:, ::2] for key, value in data.items()
    }
    transposed = {key: value.t().contiguous().t() for key, value in data.items()}
    assert not strided["reward"].is_contiguous()
    assert not transposed["reward"].is_contiguous()
    for inputs in (strided, transposed):
        _check_against_reference(name, op_args(name, inputs), device)


@pytest.mark.parametrize("time_dim", [0, -2, -1], ids=["time-first", "time-middle", "time-last"])
def test_public_wrappers_match_reference(device, time_dim, trajectory):
    # [B, T, F] with time moved to time_dim: the wrappers move it first for the kernel.
    data = trajectory(25, 6, seed=7)
    nested = {k: v.reshape(25, 3, 2).movedim(0, time_dim).to(device) for k, v in data.items()}
    args = (nested[k] for k in ("state_value", "next_state_value", "reward", "done"))
    advantage, target = ops.generalized_advantage_estimate(
        0.9, 0.8, *args, nested["terminated"], time_dim=time_dim
    )
    expected_adv, expected_target = reference.generalized_advantage_estimate(
        0.9,
        0.8,
        *(data[k] for k in ("state_value", "next_state_value", "reward")),
        data["done"],
        data["terminated"],
    )

    def back(x):
        return x.movedim(time_dim, 0).reshape(25, 6).cpu()

    torch.testing.assert_close(back(advantage), expected_adv)
    torch.testing.assert_close(back(target), expected_target)
    lambda_return = ops.td_lambda_return_estimate(
        0.9,
        0.8,
        nested["next_state_value"],
        nested["reward"],
        nested["done"],
        nested["terminated"],
        time_dim=time_dim,
    )
    torch.testing.assert_close(
        back(lambda_return),
        reference.td_lambda_return_estimate(
            0.9, 0.8, data["next_state_value"], data["reward"], data["done"], data["terminated"]
        ),
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_kernels_stay_close_to_reference(device, dtype, trajectory, op_args):
    # The kernels accumulate in float32 where the reference rounds after each op: close, not equal.
    data = trajectory(16, 4, dtype=torch.float64, seed=11)
    low = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in data.items()}
    for name in VALUE_OPS:
        moved = tuple(
            a.to(device) if isinstance(a, torch.Tensor) else a for a in op_args(name, low)
        )
        got = _as_tuple(getattr(torch.ops.rl_core, name)(*moved))
        expected = _as_tuple(getattr(reference, name)(*op_args(name, data)))
        for g, e in zip(got, expected):
            assert g.dtype == dtype
            torch.testing.assert_close(g.cpu().double(), e, atol=0.1, rtol=0.05)


def test_value_kernels_check_the_layout(device):
    x = torch.zeros(2, 3, 1, device=device)
    flags = torch.zeros(2, 3, 1, dtype=torch.bool, device=device)
    with pytest.raises(
        RuntimeError,
        match=r"rl_core::generalized_advantage_estimate: expected state_value in the \[T, N\] "
        r"layout \(2-D\), got shape \(2, 3, 1\)\.",
    ):
        torch.ops.rl_core.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, flags)
    with pytest.raises(
        RuntimeError,
        match=r"rl_core::td_lambda_return_estimate: expected reward of shape \(2, 3\) like "
        r"next_state_value, got \(3, 2\)\.",
    ):
        torch.ops.rl_core.td_lambda_return_estimate(
            0.9, 0.9, x[..., 0], torch.zeros(3, 2, device=device), flags[..., 0], flags[..., 0]
        )
    with pytest.raises(
        RuntimeError, match=r"expected done of dtype torch.bool, got torch.float32\."
    ):
        torch.ops.rl_core.td_lambda_return_estimate(0.9, 0.9, x[0], x[0], x[0], flags[0])
    with pytest.raises(
        RuntimeError, match=r"expected reward of dtype torch.float32, got torch.float64\."
    ):
        torch.ops.rl_core.vtrace_advantage_estimate(
            0.9, 1.0, 1.0, x[0], x[0], x[0], x[0], x[0].double(), flags[0], flags[0]
        )
