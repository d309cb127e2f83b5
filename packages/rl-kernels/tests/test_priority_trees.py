"""The fused prioritized-replay kernels (sum_min_tree_update_, sum_tree_sample,
sum_min_tree_priority_update_) against rl_core's reference kernels on the CPU, bit for bit,
and opcheck on them; on CPU and, marked ``gpu``, on CUDA.
"""

from __future__ import annotations

import pytest
import torch

import rl_kernels
from rl_core.ops import reference

CUDA = torch.cuda.is_available() and "cuda" in rl_kernels.devices()

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _trees(capacity, dtype, device="cpu"):
    """An empty sum tree (zeros) and min tree (``+inf``) in the ops' layout: 1-D, 2 * capacity."""
    return (
        torch.zeros(2 * capacity, dtype=dtype, device=device),
        torch.full((2 * capacity,), float("inf"), dtype=dtype, device=device),
    )


FUSED = ["sum_min_tree_update_", "sum_tree_sample", "sum_min_tree_priority_update_"]


@pytest.mark.parametrize("name", FUSED)
def test_fused_kernels_are_registered(device, name):
    key = "CUDA" if device == "cuda" else "CPU"
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"rl_core::{name}", key)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device and the CUDA kernels")
def test_cuda_sample_never_waits_for_the_device():
    trees = _trees(1024, torch.float32, "cuda")
    torch.ops.rl_core.sum_min_tree_update_(
        *trees, torch.arange(1024, device="cuda"), torch.rand(1024, device="cuda")
    )
    uniform = torch.rand(256, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        index, weight = torch.ops.rl_core.sum_tree_sample(*trees, uniform, 0.4)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    expected = reference.sum_tree_sample(*trees, uniform, 0.4)
    assert torch.equal(index, expected[0])
    assert torch.equal(weight, expected[1])


@pytest.mark.parametrize("dtype", DTYPES)
# (16384, 30000): repeats in the levels the kernels walk without repeats (<= 4096 nodes),
# and in the levels below them, walked as they come.
@pytest.mark.parametrize(
    ("capacity", "count"), [(1, 3), (8, 20), (1024, 300), (4096, 5000), (16384, 30000)]
)
def test_fused_update_matches_reference(device, dtype, capacity, count):
    expected = _trees(capacity, dtype)
    got = _trees(capacity, dtype, device)
    for seed in range(3):
        gen = torch.Generator().manual_seed(seed)
        index = torch.randint(0, min(capacity, max(1, count // 3)), (count,), generator=gen)
        value = torch.rand(count, generator=gen).to(dtype)
        reference.sum_min_tree_update_(*expected, index, value)
        torch.ops.rl_core.sum_min_tree_update_(*got, index.to(device), value.to(device))
        assert torch.equal(got[0].cpu(), expected[0])
        assert torch.equal(got[1].cpu(), expected[1])


def test_fused_update_of_strided_trees(device):
    storage = torch.zeros(2, 32, dtype=torch.float64, device=device)
    storage[1] = float("inf")
    sums, mins = storage[0, ::2], storage[1, ::2]
    index = torch.tensor([0, 3, 5, 3, 7, 1], device=device)
    value = torch.arange(6.0, dtype=torch.float64, device=device)
    torch.ops.rl_core.sum_min_tree_update_(sums, mins, index, value)
    expected = _trees(8, torch.float64)
    reference.sum_min_tree_update_(*expected, index.cpu(), value.cpu())
    assert torch.equal(sums.cpu(), expected[0])
    assert torch.equal(mins.cpu(), expected[1])
    assert torch.equal(storage[0, 1::2].cpu(), torch.zeros(16, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_tree_ops_on_the_columns_of_one_table(device, dtype):
    # Trees as the two columns of one [2 * capacity, 2] table (node i of both in one cache
    # line): every tree op gives there, bit for bit, what it gives on two contiguous trees,
    # and writes the table's columns.
    capacity = 4096
    table = torch.stack(_trees(capacity, dtype), dim=1).to(device)
    paired = (table[:, 0], table[:, 1])
    separate = _trees(capacity, dtype, device)
    tops = [torch.ones(1, dtype=dtype, device=device) for _ in range(2)]
    ops_ = torch.ops.rl_core
    gen = torch.Generator().manual_seed(3)
    start = torch.randperm(capacity, generator=gen)[:3000].to(device)
    for trees in (paired, separate):
        ops_.sum_min_tree_update_(*trees, start, torch.ones(3000, dtype=dtype, device=device))
    for _ in range(3):
        index = torch.randint(0, 3500, (256,), generator=gen).to(device)
        priority = torch.rand(256, generator=gen).to(dtype).to(device)
        uniform = torch.rand(300, generator=gen).to(dtype).to(device)
        draws = []
        for trees, top in zip((paired, separate), tops, strict=True):
            ops_.sum_min_tree_priority_update_(*trees, top, index, priority, 1e-6, 0.7, 3500)
            draws.append(ops_.sum_tree_sample(*trees, uniform, 0.4))
            draws.append(ops_.sum_tree_find_prefixsum(trees[0], uniform * trees[0][1]))
        for got, expected in zip(draws[:2], draws[2:], strict=True):
            if isinstance(got, tuple):
                assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))
            else:
                assert torch.equal(got, expected)
    more = torch.randint(0, capacity, (500,), generator=gen).to(device)
    value = torch.rand(500, generator=gen).to(dtype).to(device)
    for trees in (paired, separate):
        ops_.sum_tree_update_(trees[0], more, value)
        ops_.min_tree_update_(trees[1], more, value * 2)
    assert torch.equal(tops[0], tops[1])
    assert torch.equal(table[:, 0], separate[0])
    assert torch.equal(table[:, 1], separate[1])


def test_cpu_tree_ops_work_on_columns_in_place():
    # A copy of a 2 MB tree per call would cost more than the op: the CPU kernels read and
    # write the columns where they are (no clone or copy among the aten calls they make).
    capacity = 1024
    table = torch.stack(_trees(capacity, torch.float32), dim=1)
    sums, mins = table[:, 0], table[:, 1]
    index, value = torch.arange(0, 1000, 3), torch.rand(334)
    ops_ = torch.ops.rl_core
    calls = [
        lambda: ops_.sum_min_tree_update_(sums, mins, index, value),
        lambda: ops_.sum_min_tree_priority_update_(
            sums, mins, torch.ones(1), index, value, 1e-6, 0.7, capacity
        ),
        lambda: ops_.sum_tree_sample(sums, mins, torch.rand(64), 0.4),
        lambda: ops_.sum_tree_update_(sums, index, value),
        lambda: ops_.min_tree_update_(mins, index, value),
        lambda: ops_.sum_tree_find_prefixsum(sums, torch.rand(64)),
    ]
    for call in calls:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            call()
        names = {event.name for event in prof.events()}
        assert not names & {"aten::clone", "aten::copy_", "aten::contiguous"}, names


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
def test_fused_sample_matches_reference(device, dtype, beta):
    gen = torch.Generator().manual_seed(5)
    capacity = 512
    trees = _trees(capacity, dtype)
    priorities = torch.rand(capacity, generator=gen).to(dtype)
    priorities[torch.rand(capacity, generator=gen) < 0.3] = 0  # never drawn
    priorities[-20:] = 0  # an empty tail: draws at the total land before it
    reference.sum_min_tree_update_(*trees, torch.arange(capacity), priorities)
    uniform = torch.cat(
        [torch.rand(3000, generator=gen), torch.tensor([-0.5, 0.0, 1.0, 2.0, 1 - 1e-7])]
    ).to(dtype)
    expected = reference.sum_tree_sample(*trees, uniform, beta)
    got = torch.ops.rl_core.sum_tree_sample(
        trees[0].to(device), trees[1].to(device), uniform.to(device), beta
    )
    assert torch.equal(got[0].cpu(), expected[0])
    assert torch.equal(got[1].cpu(), expected[1])
    assert bool((priorities[got[0].cpu()] > 0).all())


def test_fused_sample_of_empty_and_zero_trees(device):
    trees = _trees(16, torch.float32, device)
    index, weight = torch.ops.rl_core.sum_tree_sample(*trees, torch.rand(3, device=device), 0.5)
    assert index.tolist() == [0, 0, 0]  # an all-zero tree gives leaf 0
    index, weight = torch.ops.rl_core.sum_tree_sample(*trees, torch.rand(0, device=device), 0.5)
    assert index.shape == weight.shape == (0,)
    assert index.dtype == torch.int64


def test_fused_kernels_check_their_arguments(device):
    sums, mins = _trees(8, torch.float32, device)
    before = (sums.clone(), mins.clone())
    with pytest.raises(
        ValueError,
        match=r"sum_min_tree_update_: expected leaf indices in \[0, 8\), got values in \[-1, 8\]",
    ):
        torch.ops.rl_core.sum_min_tree_update_(
            sums, mins, torch.tensor([3, -1, 8], device=device), torch.ones(3, device=device)
        )
    assert torch.equal(sums, before[0])
    assert torch.equal(mins, before[1])
    with pytest.raises(
        RuntimeError, match=r"rl_core::sum_tree_sample: expected min_tree like sum_tree \(\(16,\)"
    ):
        torch.ops.rl_core.sum_tree_sample(
            sums, torch.zeros(32, device=device), torch.rand(2, device=device), 0.5
        )
    with pytest.raises(RuntimeError, match=r"rl_core::sum_min_tree_update_: expected min_tree"):
        torch.ops.rl_core.sum_min_tree_update_(
            sums,
            mins.double(),
            torch.tensor([1], device=device),
            torch.ones(1, device=device),
        )


def test_opcheck_fused_ops(device):
    gen = torch.Generator().manual_seed(4)
    sums, mins = _trees(8, torch.float64)
    reference.sum_min_tree_update_(
        sums, mins, torch.arange(8), torch.rand(8, generator=gen, dtype=torch.float64)
    )
    sums, mins = sums.to(device), mins.to(device)
    torch.library.opcheck(
        torch.ops.rl_core.sum_min_tree_update_.default,
        (
            sums.clone(),
            mins.clone(),
            torch.tensor([1, 5, 1], device=device),
            torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64, device=device),
        ),
    )
    torch.library.opcheck(
        torch.ops.rl_core.sum_tree_sample.default,
        (sums, mins, torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64, device=device), 0.5),
    )


# ------------------------------------------------------------ sum_min_tree_priority_update_
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("alpha", "eps"), [(0.7, 1e-8), (1.0, 0.0), (0.0, 0.5), (2.5, 1e-3)])
def test_priority_update_matches_reference(device, dtype, alpha, eps):
    # The reference runs on the same device: its pow is that device's (CUDA's pow of float32
    # and float64 can differ from the CPU's in the last bit; the kernels call torch's own).
    capacity, max_index = 1024, 1000
    expected = (*_trees(capacity, dtype, device), torch.ones(1, dtype=dtype, device=device))
    got = (*_trees(capacity, dtype, device), torch.ones(1, dtype=dtype, device=device))
    for seed in range(4):
        gen = torch.Generator().manual_seed(seed)
        count = (0, 1, 300, 2000)[seed]  # 2000: repeated leaves, the last value wins
        index = torch.randint(0, max_index, (count,), generator=gen).to(device)
        priority = (torch.rand(count, generator=gen) * 4).to(dtype).to(device)
        if count:
            priority[0] = 0.0
        reference.sum_min_tree_priority_update_(*expected, index, priority, eps, alpha, max_index)
        torch.ops.rl_core.sum_min_tree_priority_update_(
            *got, index, priority, eps, alpha, max_index
        )
        for out, ref in zip(got, expected, strict=True):
            assert torch.equal(out, ref)


def test_priority_update_refuses_bad_input_and_writes_nothing(device):
    trees = (*_trees(8, torch.float32, device), torch.ones(1, device=device))
    before = [t.clone() for t in trees]
    index = torch.tensor([1, 6, 2], device=device)
    op = torch.ops.rl_core.sum_min_tree_priority_update_
    with pytest.raises(
        IndexError,
        match=r"sum_min_tree_priority_update_: expected indices in \[0, 6\), got values in \[1, 6\]",
    ):
        op(*trees, index, torch.ones(3, device=device), 1e-8, 0.7, 6)
    for bad, shown in ((-0.5, r"-0\.5"), (float("nan"), "nan")):
        priority = torch.tensor([1.0, bad, 2.0], device=device)
        with pytest.raises(
            ValueError, match=rf"expected priorities >= 0, got a minimum of {shown}"
        ):
            op(*trees, index, priority, 1e-8, 0.7, 8)
    for tree, old in zip(trees, before, strict=True):
        assert torch.equal(tree, old)
    with pytest.raises(RuntimeError, match=r"expected max_value of one element"):
        op(*trees[:2], torch.ones(2, device=device), index, torch.ones(3, device=device), 0, 1, 8)
    with pytest.raises(RuntimeError, match=r"expected max_index in \[0, 8\] \(the capacity\)"):
        op(*trees, index, torch.ones(3, device=device), 0.0, 1.0, 9)


def test_opcheck_priority_update(device):
    sums, mins = _trees(8, torch.float64, device)
    top = torch.ones(1, dtype=torch.float64, device=device)
    torch.library.opcheck(
        torch.ops.rl_core.sum_min_tree_priority_update_.default,
        (
            sums,
            mins,
            top,
            torch.tensor([1, 5, 1], device=device),
            torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64, device=device),
            1e-6,
            0.6,
            7,
        ),
    )


def test_priority_update_max_value_is_torch_maximum(device):
    # eps < 0 can make (priority + eps) ** alpha NaN; max_value then turns NaN as
    # torch.maximum(max_value, value.max()) does, and the trees hold the NaN leaf.
    expected = (*_trees(8, torch.float64), torch.full((1,), 2.0, dtype=torch.float64))
    got = tuple(t.to(device) for t in expected)
    index, priority = torch.tensor([1, 4]), torch.tensor([0.25, 3.0], dtype=torch.float64)
    for eps in (0.0, -0.5):
        reference.sum_min_tree_priority_update_(*expected, index, priority, eps, 0.5, 8)
        torch.ops.rl_core.sum_min_tree_priority_update_(
            *got, index.to(device), priority.to(device), eps, 0.5, 8
        )
        for out, ref in zip(got, expected, strict=True):
            torch.testing.assert_close(out.cpu(), ref, rtol=0, atol=0, equal_nan=True)
    assert expected[2].isnan().all()
