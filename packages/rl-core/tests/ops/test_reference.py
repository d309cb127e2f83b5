"""The reference kernels against float64 loops written from the textbook formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from rl_core.ops import reference


def _columns(data: dict[str, torch.Tensor]) -> list[dict[str, list]]:
    """Splits ``[T, N]`` tensors into N sequences of Python numbers."""
    n = data["reward"].shape[1]
    return [{key: value[:, i].tolist() for key, value in data.items()} for i in range(n)]


def _segment_end(done: list[bool], t: int) -> int:
    """Last step of the episode segment that contains step ``t``."""
    end = t
    while end < len(done) - 1 and not done[end]:
        end += 1
    return end


def naive_gae(gamma, lmbda, seq):
    """A[t] = sum_k (gamma * lmbda)^k delta[t + k] up to the end of the episode segment."""
    v, nv, r, d, term = (
        seq[k] for k in ("state_value", "next_state_value", "reward", "done", "terminated")
    )
    delta = [r[t] + gamma * (1 - term[t]) * nv[t] - v[t] for t in range(len(r))]
    adv = []
    for t in range(len(r)):
        end = _segment_end(d, t)
        adv.append(sum((gamma * lmbda) ** (k - t) * delta[k] for k in range(t, end + 1)))
    return adv, [a + b for a, b in zip(adv, v)]


def naive_td_lambda(gamma, lmbda, seq):
    """The lambda-return as a weighted average of n-step returns within the segment."""
    nv, r, d, term = (seq[k] for k in ("next_state_value", "reward", "done", "terminated"))
    out = []
    for t in range(len(r)):
        horizon = _segment_end(d, t) - t + 1

        def n_step(n, t=t):
            ret = sum(gamma**i * r[t + i] for i in range(n))
            return ret + gamma**n * (1 - term[t + n - 1]) * nv[t + n - 1]

        mixed = sum((1 - lmbda) * lmbda ** (n - 1) * n_step(n) for n in range(1, horizon))
        out.append(mixed + lmbda ** (horizon - 1) * n_step(horizon))
    return out


def naive_vtrace(gamma, rho_bar, c_bar, seq):
    """IMPALA eq. (1) and the policy-gradient advantage, with V(x_{s+1}) = state_value[s+1]."""
    lp, lm, v, nv, r, d, term = (
        seq[k]
        for k in (
            "log_pi",
            "log_mu",
            "state_value",
            "next_state_value",
            "reward",
            "done",
            "terminated",
        )
    )
    steps = len(r)
    ratio = [math.exp(a - b) for a, b in zip(lp, lm)]
    rho = [min(rho_bar, x) for x in ratio]
    c = [min(c_bar, x) for x in ratio]
    # Inside an episode the next state's value is V(x_{t+1}); at its end, the bootstrap value.
    v_next = [nv[t] if d[t] or t == steps - 1 else v[t + 1] for t in range(steps)]
    delta = [rho[t] * (r[t] + gamma * (1 - term[t]) * v_next[t] - v[t]) for t in range(steps)]
    vs = []
    for s in range(steps):
        total = 0.0
        for t in range(s, _segment_end(d, s) + 1):
            total += gamma ** (t - s) * math.prod(c[s:t]) * delta[t]
        vs.append(v[s] + total)
    adv = []
    for s in range(steps):
        target_next = nv[s] if d[s] or s == steps - 1 else vs[s + 1]
        adv.append(rho[s] * (r[s] + gamma * (1 - term[s]) * target_next - v[s]))
    return adv, vs


def paper_vtrace(gamma, rho_bar, c_bar, seq):
    """V-trace from IMPALA (Espeholt et al. 2018), for any ``next_state_value``.

    Eq. (1): ``v_s = V(x_s) + sum_{t=s}^{end} gamma^(t-s) (prod_{i=s}^{t-1} c_i) delta_t V``
    with ``delta_t V = rho_t (r_t + gamma V(x_{t+1}) - V(x_t))``, where ``V(x_{t+1})`` is the
    value of the state landed in (``next_state_value[t]``, zero after a terminal step). The
    policy-gradient advantage is ``rho_s (r_s + gamma v_{s+1} - V(x_s))`` (section 4.2), with
    ``v_{s+1}`` the V-trace target of the next step of the same episode; where the episode or
    the data stops there is no next target and the bootstrap value ``next_state_value[s]``
    stands in, as in TorchRL's ``vtrace_advantage_estimate`` at the last step.
    """
    lp, lm, v, nv, r, d, term = (
        seq[k]
        for k in (
            "log_pi",
            "log_mu",
            "state_value",
            "next_state_value",
            "reward",
            "done",
            "terminated",
        )
    )
    steps = len(r)
    ratio = [math.exp(a - b) for a, b in zip(lp, lm)]
    rho = [min(rho_bar, x) for x in ratio]
    c = [min(c_bar, x) for x in ratio]
    delta = [rho[t] * (r[t] + gamma * (1 - term[t]) * nv[t] - v[t]) for t in range(steps)]
    vs = []
    for s in range(steps):
        total = 0.0
        for t in range(s, _segment_end(d, s) + 1):
            total += gamma ** (t - s) * math.prod(c[s:t]) * delta[t]
        vs.append(v[s] + total)
    adv = []
    for s in range(steps):
        v_next = nv[s] if d[s] or s == steps - 1 else vs[s + 1]
        adv.append(rho[s] * (r[s] + gamma * (1 - term[s]) * v_next - v[s]))
    return adv, vs


def _kernel_layout(traj):
    return {key: value.squeeze(-1).T.contiguous() for key, value in traj.items()}


@pytest.mark.parametrize(("gamma", "lmbda"), [(0.99, 0.95), (0.9, 1.0), (0.5, 0.0), (1.0, 1.0)])
def test_gae_matches_float64_loop(make_trajectory, gamma, lmbda):
    data = _kernel_layout(make_trajectory((6, 40, 1), seed=1))
    args = [data[k] for k in ("state_value", "next_state_value", "reward", "done", "terminated")]
    adv, target = reference.generalized_advantage_estimate(gamma, lmbda, *args)
    for i, seq in enumerate(_columns(data)):
        want_adv, want_target = naive_gae(gamma, lmbda, seq)
        np.testing.assert_allclose(adv[:, i].numpy(), want_adv, rtol=0, atol=1e-5)
        np.testing.assert_allclose(target[:, i].numpy(), want_target, rtol=0, atol=1e-5)


def test_gae_float32_matches_float64_loop(make_trajectory):
    data = _kernel_layout(make_trajectory((4, 30, 1), seed=2))
    args = [
        data[k].float() if data[k].is_floating_point() else data[k]
        for k in ("state_value", "next_state_value", "reward", "done", "terminated")
    ]
    adv, _ = reference.generalized_advantage_estimate(0.99, 0.95, *args)
    assert adv.dtype == torch.float32
    for i, seq in enumerate(_columns(data)):
        want, _ = naive_gae(0.99, 0.95, seq)
        np.testing.assert_allclose(adv[:, i].double().numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("gamma", "lmbda"), [(0.99, 0.95), (0.9, 1.0), (0.8, 0.0), (1.0, 0.5)])
def test_td_lambda_matches_n_step_mixture(make_trajectory, gamma, lmbda):
    data = _kernel_layout(make_trajectory((5, 25, 1), seed=3))
    args = [data[k] for k in ("next_state_value", "reward", "done", "terminated")]
    target = reference.td_lambda_return_estimate(gamma, lmbda, *args)
    for i, seq in enumerate(_columns(data)):
        np.testing.assert_allclose(
            target[:, i].numpy(), naive_td_lambda(gamma, lmbda, seq), rtol=0, atol=1e-10
        )


@pytest.mark.parametrize(("rho_bar", "c_bar"), [(1.0, 1.0), (2.0, 0.5), (0.5, 0.5)])
def test_vtrace_matches_impala_formulas(make_trajectory, rho_bar, c_bar):
    data = _kernel_layout(make_trajectory((5, 30, 1), seed=4))
    keys = ("log_pi", "log_mu", "state_value", "next_state_value", "reward", "done", "terminated")
    adv, vs = reference.vtrace_advantage_estimate(0.95, rho_bar, c_bar, *[data[k] for k in keys])
    for i, seq in enumerate(_columns(data)):
        want_adv, want_vs = naive_vtrace(0.95, rho_bar, c_bar, seq)
        np.testing.assert_allclose(vs[:, i].numpy(), want_vs, rtol=0, atol=1e-10)
        np.testing.assert_allclose(adv[:, i].numpy(), want_adv, rtol=0, atol=1e-10)


@pytest.mark.parametrize(("rho_bar", "c_bar"), [(1.0, 1.0), (1.5, 0.7), (0.6, 1.3)])
def test_vtrace_advantage_bootstraps_from_the_next_vtrace_target(make_trajectory, rho_bar, c_bar):
    # next_state_value drawn apart from state_value: the advantage must read
    # v_{s+1} = V(x_{s+1}) + correction, not next_state_value[s] + correction (issue 43).
    traj = make_trajectory((6, 25, 1), seed=14, done_prob=0.25, independent_next_value=True)
    data = _kernel_layout(traj)
    assert data["done"].any()
    assert (data["done"] & ~data["terminated"]).any()
    keys = ("log_pi", "log_mu", "state_value", "next_state_value", "reward", "done", "terminated")
    adv, vs = reference.vtrace_advantage_estimate(0.9, rho_bar, c_bar, *[data[k] for k in keys])
    for i, seq in enumerate(_columns(data)):
        want_adv, want_vs = paper_vtrace(0.9, rho_bar, c_bar, seq)
        np.testing.assert_allclose(vs[:, i].numpy(), want_vs, rtol=0, atol=1e-10)
        np.testing.assert_allclose(adv[:, i].numpy(), want_adv, rtol=0, atol=1e-10)


def test_vtrace_handles_no_steps():
    empty = torch.zeros(0, 3, dtype=torch.float64)
    flags = torch.zeros(0, 3, dtype=torch.bool)
    adv, vs = reference.vtrace_advantage_estimate(
        0.9, 1.0, 1.0, empty, empty, empty, empty, empty, flags, flags
    )
    assert adv.shape == vs.shape == (0, 3)


def test_on_policy_vtrace_target_is_the_lambda_one_gae_target(make_trajectory):
    data = _kernel_layout(make_trajectory((3, 20, 1), seed=5))
    values = [data[k] for k in ("state_value", "next_state_value", "reward", "done", "terminated")]
    _, vs = reference.vtrace_advantage_estimate(
        0.9, 1.0, 1.0, data["log_pi"], data["log_pi"], *values
    )
    _, gae_target = reference.generalized_advantage_estimate(0.9, 1.0, *values)
    torch.testing.assert_close(vs, gae_target)


def test_value_kernels_accept_empty_time():
    empty = torch.zeros(0, 3)
    flags = torch.zeros(0, 3, dtype=torch.bool)
    adv, target = reference.generalized_advantage_estimate(
        0.9, 0.9, empty, empty, empty, flags, flags
    )
    assert adv.shape == target.shape == (0, 3)
    assert reference.td_lambda_return_estimate(0.9, 0.9, empty, empty, flags, flags).shape == (0, 3)
    adv, target = reference.vtrace_advantage_estimate(
        0.9, 1.0, 1.0, empty, empty, empty, empty, empty, flags, flags
    )
    assert adv.shape == target.shape == (0, 3)


def test_sum_tree_kernels_keep_every_node_the_sum_of_its_children():
    capacity = 16
    tree = torch.zeros(2 * capacity, dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        index = torch.randint(0, capacity, (7,), generator=gen)
        reference.sum_tree_update_(tree, index, torch.rand(7, generator=gen, dtype=torch.float64))
        parents = torch.arange(1, capacity)
        torch.testing.assert_close(tree[parents], tree[2 * parents] + tree[2 * parents + 1])


def test_sum_tree_find_prefixsum_descends_to_the_first_exceeding_leaf():
    leaves = torch.tensor([0.0, 2.0, 0.0, 1.0, 3.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    tree = torch.zeros(16, dtype=torch.float64)
    reference.sum_tree_update_(tree, torch.arange(8), leaves)
    queries = torch.tensor([-1.0, 0.0, 1.999, 2.0, 3.0, 5.999, 6.0, 100.0], dtype=torch.float64)
    found = reference.sum_tree_find_prefixsum(tree, queries)
    assert found.tolist() == [1, 1, 1, 3, 4, 4, 4, 4]


def _scalar_tree_update(tree, index, value, combine):
    """One leaf after the other, each up to the root: the update rule in its plainest form."""
    capacity = tree.shape[0] // 2
    for leaf, priority in zip(index.tolist(), value.unbind(0)):
        node = leaf + capacity
        tree[node] = priority
        while node > 1:
            node //= 2
            tree[node] = combine(tree[2 * node], tree[2 * node + 1])


def _scalar_find(tree, query):
    """One descent per query, one node at a time, in the tree's dtype."""
    capacity = tree.shape[0] // 2
    found = []
    for v in query.unbind(0):
        remaining = v.clamp(min=0)
        node = 1
        while node < capacity:
            left = tree[2 * node]
            if bool(remaining >= left) and bool(tree[2 * node + 1] > 0):
                remaining = remaining - left
                node = 2 * node + 1
            else:
                node = 2 * node
        found.append(node - capacity)
    return found


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_segment_tree_kernels_equal_a_node_by_node_loop_bit_for_bit(dtype):
    # The reference kernels work a tree level at a time on whole batches; the node-by-node
    # loop is the rule they implement. Same trees and same leaves, exactly (sums included:
    # each node is combined from its two final children either way), including repeated
    # leaves, zero priorities and queries at, beyond and below the total.
    gen = torch.Generator().manual_seed(3)
    capacity = 64
    trees = {
        "sum": (torch.zeros(2 * capacity, dtype=dtype), reference.sum_tree_update_, torch.add),
        "min": (
            torch.full((2 * capacity,), float("inf"), dtype=dtype),
            reference.min_tree_update_,
            torch.minimum,
        ),
    }
    for _, (tree, kernel, combine) in trees.items():
        loop = tree.clone()
        for step in range(6):
            index = torch.randint(0, capacity - 8, (40,), generator=gen)  # repeats, 8 empty
            value = (torch.rand(40, generator=gen) * 10).to(dtype)
            value[::7] = 0
            kernel(tree, index, value)
            _scalar_tree_update(loop, index, value, combine)
            assert torch.equal(tree, loop), step
    tree = trees["sum"][0]
    total = float(tree[1])
    query = torch.cat(
        [torch.rand(60, generator=gen) * total, torch.tensor([-1.0, 0.0, total, 2 * total])]
    ).to(dtype)
    # queries on the exact prefix sums, where rounding decides between two leaves
    prefix = tree[capacity:].cumsum(0).to(dtype)
    query = torch.cat([query, prefix[:20]])
    assert reference.sum_tree_find_prefixsum(tree, query).tolist() == _scalar_find(tree, query)


def test_segment_tree_kernels_on_a_strided_tree():
    base = torch.zeros(32, 2)
    tree = base[:, 0]  # stride 2: worked on a contiguous copy, written back
    reference.sum_tree_update_(tree, torch.tensor([0, 3, 15]), torch.tensor([1.0, 2.0, 4.0]))
    assert float(tree[1]) == 7.0
    assert base[:, 1].abs().sum() == 0
    found = reference.sum_tree_find_prefixsum(tree, torch.tensor([0.5, 1.5, 6.9]))
    assert found.tolist() == [0, 3, 15]
