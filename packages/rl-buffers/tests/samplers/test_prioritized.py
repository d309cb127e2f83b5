import pytest
import torch

from rl_buffers import LazyTensorStorage, PrioritizedSampler


def setup(priorities, alpha=0.7, beta=0.5, capacity=64):
    n = priorities.numel()
    storage = LazyTensorStorage(capacity)
    storage.set(torch.arange(n), torch.zeros(n, 1))
    sampler = PrioritizedSampler(capacity, alpha, beta)
    sampler.extend(torch.arange(n))
    sampler.update_priority(torch.arange(n), priorities)
    return storage, sampler


def test_draws_proportionally_to_priority_power(chi_square):
    priorities = torch.tensor([0.1, 1.0, 2.0, 0.0, 5.0, 3.0, 0.5, 1.5, 4.0, 2.5])
    alpha = 0.7
    storage, sampler = setup(priorities, alpha=alpha)
    index, _ = sampler.sample(storage, 30_000)
    counts = torch.bincount(index, minlength=10)
    expected = (priorities + 1e-8) ** alpha
    assert chi_square(counts, expected)
    assert not chi_square(counts, priorities)  # alpha matters: the check can fail


def test_importance_weights():
    priorities = torch.tensor([1.0, 4.0, 2.0])
    storage, sampler = setup(priorities, alpha=1.0, beta=0.5)
    index, info = sampler.sample(storage, 50)
    p = priorities + 1e-8
    expected = (p[index] / p.min()) ** -0.5
    torch.testing.assert_close(info["priority_weight"], expected)
    assert float(info["priority_weight"].max()) <= 1.0


def test_importance_weights_match_a_scan_of_the_stored_priorities():
    # the min tree gives the same weights as scanning the stored leaves, through random
    # updates, overwrites, a state_dict round trip and an empty()
    torch.manual_seed(0)
    storage, sampler = setup(torch.rand(6) + 0.1, alpha=0.7, beta=0.4)

    def check():
        index, info = sampler.sample(storage, 64)
        leaves = sampler._leaves(len(storage))
        torch.testing.assert_close(info["priority_weight"], (leaves[index] / leaves.min()) ** -0.4)

    for _ in range(20):
        picked = torch.randint(0, 6, (3,))
        sampler.update_priority(picked, torch.rand(3) * 5)
        check()
    other = PrioritizedSampler(64, alpha=0.7, beta=0.4)
    other.load_state_dict(sampler.state_dict())
    sampler = other
    check()
    sampler._empty()
    sampler.extend(torch.arange(6))
    check()


def test_new_items_get_max_priority():
    storage, sampler = setup(torch.tensor([3.0, 1.0]), alpha=1.0)
    storage.set(torch.arange(2, 3), torch.zeros(1, 1))
    sampler.extend(torch.tensor([2]))
    assert sampler.default_priority == pytest.approx(3.0)
    assert sampler._leaves(3).tolist() == pytest.approx([3.0, 1.0, 3.0])


def test_reduction_of_extra_dims_and_scalar():
    _storage, sampler = setup(torch.ones(4), alpha=1.0)
    sampler.update_priority(torch.tensor([0, 1]), torch.tensor([[1.0, 3.0], [2.0, 0.5]]))
    assert sampler._leaves(2).tolist() == pytest.approx([3.0, 2.0])
    sampler.update_priority(torch.tensor([2, 3]), 7.0)
    assert sampler._leaves(4).tolist()[2:] == pytest.approx([7.0, 7.0])


def test_alpha_and_beta_as_one_element_tensors_as_in_torchrl():
    sampler = PrioritizedSampler(8, torch.tensor(0.5), torch.tensor([0.25]))
    assert (sampler.alpha, sampler.beta) == (0.5, 0.25)
    with pytest.raises(TypeError, match="expected beta to be a float, got Tensor"):
        PrioritizedSampler(8, 0.5, torch.tensor([0.25, 0.5]))


def test_bad_input():
    storage, sampler = setup(torch.ones(4))
    with pytest.raises(ValueError, match="expected priorities >= 0"):
        sampler.update_priority(torch.tensor([0]), torch.tensor([-1.0]))
    with pytest.raises(ValueError, match=r"expected priorities >= 0.*nan"):
        sampler.update_priority(torch.tensor([0]), torch.tensor([float("nan")]))
    with pytest.raises(IndexError, match=r"expected indices in \[0, 4\) \(the items written"):
        sampler.update_priority(torch.tensor([64]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="expected 2 priorities for 2 indices, got shape"):
        sampler.update_priority(torch.tensor([0, 1]), torch.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="expected alpha >= 0, got -1"):
        PrioritizedSampler(4, -1, 0.5)
    with pytest.raises(ValueError, match="expected max_capacity >= 1"):
        PrioritizedSampler(0, 1.0, 0.5)
    small = PrioritizedSampler(2, 1.0, 1.0)
    with pytest.raises(RuntimeError, match="holds 4 items but max_capacity is 2"):
        small.sample(storage, 1)


@pytest.mark.parametrize("alpha", [0.7, 0.0])
def test_infinite_priorities_are_refused_and_write_nothing(alpha):
    # +inf used to be accepted: the sum tree then held inf and every draw returned that one
    # item with weight 1 (with alpha=0 it became a uniform 1: refused all the same)
    _storage, sampler = setup(torch.tensor([1.0, 2.0, 3.0]), alpha=alpha)
    tree, min_tree = sampler._tree.clone(), sampler._min_tree.clone()
    top = sampler.default_priority
    for index, priority in (
        (torch.tensor([1]), torch.tensor([float("inf")])),  # the fast path's layout
        (torch.tensor([0, 1]), torch.tensor([2.0, float("inf")], dtype=torch.float64)),
        (torch.tensor([1]), float("inf")),
        (torch.tensor([[0, 1]]), torch.tensor([[[1.0, float("inf")], [1.0, 1.0]]])),  # reduced
    ):
        with pytest.raises(ValueError, match="expected finite priorities, got inf"):
            sampler.update_priority(index, priority)
    assert torch.equal(sampler._tree, tree)
    assert torch.equal(sampler._min_tree, min_tree)
    assert sampler.default_priority == top


def test_priorities_of_slots_never_written_are_refused():
    # 8 items written into room for 16: index 12 holds no item, so it gets no priority (it
    # used to be accepted, and draws then returned the unwritten zero row 12)
    storage, sampler = setup(torch.ones(8), capacity=16)
    tree = sampler._tree.clone()
    for index in (torch.tensor([12]), torch.tensor([3, 12]), [8]):
        with pytest.raises(
            IndexError, match=r"expected indices in \[0, 8\) \(the items written so far"
        ):
            sampler.update_priority(index, torch.full((len(index),), 100.0))
    assert torch.equal(sampler._tree, tree)
    index, _ = sampler.sample(storage, 1000)
    assert int(index.max()) < 8
    sampler.extend(torch.arange(8, 13))  # once written, the slot takes a priority
    sampler.update_priority(torch.tensor([12]), torch.tensor([100.0]))
    # the bound survives a state_dict round trip and resets with the sampler
    other = PrioritizedSampler(16, 0.7, 0.5)
    other.load_state_dict(sampler.state_dict())
    other.update_priority(torch.tensor([12]), torch.tensor([1.0]))
    with pytest.raises(IndexError, match=r"expected indices in \[0, 13\)"):
        other.update_priority(torch.tensor([13]), torch.tensor([1.0]))
    other._empty()
    with pytest.raises(IndexError, match=r"expected indices in \[0, 0\)"):
        other.update_priority(torch.tensor([0]), torch.tensor([1.0]))


def test_state_round_trip_and_empty():
    _storage, sampler = setup(torch.tensor([1.0, 2.0]))
    other = PrioritizedSampler(64, 0.7, 0.5)
    other.load_state_dict(sampler.state_dict())
    assert torch.equal(other._tree, sampler._tree)
    with pytest.raises(ValueError, match="the saved tree has 64 leaves, this sampler 8"):
        PrioritizedSampler(8, 0.7, 0.5).load_state_dict(sampler.state_dict())
    sampler._empty()
    assert float(sampler._tree.sum()) == 0.0


def test_update_fast_path_matches_the_generic_path():
    """A 1-D int64 index with one float32 priority each takes the fast path; a list index
    and float64 priorities take the generic one: trees, running maximum and errors agree."""
    gen = torch.Generator().manual_seed(2)
    fast = PrioritizedSampler(100, 0.6, 0.4)
    generic = PrioritizedSampler(100, 0.6, 0.4)
    for sampler in (fast, generic):
        sampler.extend(torch.arange(100))
    for _ in range(5):
        index = torch.randint(0, 100, (40,), generator=gen)  # repeats: last write wins
        priority = torch.rand(40, generator=gen) * 3
        fast.update_priority(index, priority)
        generic.update_priority(index.tolist(), priority.double())
        assert torch.equal(fast._tree, generic._tree)
        assert torch.equal(fast._min_tree, generic._min_tree)
        assert fast.default_priority == generic.default_priority
    for index, priority in ([[3, 100], [1.0, 1.0]], [[3, -1], [1.0, 1.0]]):
        with pytest.raises(IndexError, match="expected indices in") as fast_error:
            fast.update_priority(torch.tensor(index), torch.tensor(priority))
        with pytest.raises(IndexError, match="expected indices in") as generic_error:
            generic.update_priority(index, torch.tensor(priority, dtype=torch.float64))
        assert str(fast_error.value) == str(generic_error.value)
    for bad, message in (
        (-0.5, "expected priorities >= 0"),
        (float("nan"), "expected priorities >= 0"),
        (float("inf"), "expected finite priorities, got inf"),
    ):
        with pytest.raises(ValueError, match=message) as fast_error:
            fast.update_priority(torch.tensor([1, 2]), torch.tensor([1.0, bad]))
        with pytest.raises(ValueError, match=message) as generic_error:
            generic.update_priority([1, 2], torch.tensor([1.0, bad], dtype=torch.float64))
        assert str(fast_error.value) == str(generic_error.value)
    assert torch.equal(fast._tree, generic._tree)  # nothing written by a rejected update


def test_sample_draws_through_the_fused_op_as_the_separate_ops_do():
    storage, sampler = setup(torch.rand(50, generator=torch.Generator().manual_seed(4)))
    torch.manual_seed(7)
    index, info = sampler.sample(storage, 300)
    torch.manual_seed(7)
    tree = sampler._tree
    expected = torch.ops.rl_core.sum_tree_find_prefixsum(tree, torch.rand(300) * tree[1])
    assert torch.equal(index, expected)
    assert torch.equal(info["priority_weight"], sampler.weights(index, 50))


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[pytest.mark.gpu, CUDA])])
def test_trees_on_a_device(device, chi_square):
    # The trees, the draws, the indices and the weights live on `device`; indices and
    # priorities from the CPU are moved there; the state moves between devices.
    priorities = torch.tensor([0.1, 1.0, 2.0, 0.0, 5.0, 3.0, 0.5, 1.5, 4.0, 2.5])
    storage = LazyTensorStorage(64)
    storage.set(torch.arange(10), torch.zeros(10, 1))
    sampler = PrioritizedSampler(64, 0.7, 0.5, device=device)
    assert f"device={device}" in repr(sampler)
    sampler.extend(torch.arange(10))
    sampler.update_priority(torch.arange(10), priorities)  # CPU input
    index, info = sampler.sample(storage, 30_000)
    assert index.device.type == info["priority_weight"].device.type == device
    assert chi_square(torch.bincount(index.cpu(), minlength=10), (priorities + 1e-8) ** 0.7)
    sampler.update_priority(index[:256], torch.rand(256, device=device))  # the fast path
    on_cpu = PrioritizedSampler(64, 0.7, 0.5)
    on_cpu.load_state_dict(sampler.state_dict())
    assert torch.equal(on_cpu._tree, sampler._tree.cpu())
    sampler.load_state_dict(on_cpu.state_dict())
    assert torch.equal(on_cpu._min_tree, sampler._min_tree.cpu())


def test_prioritized_buffers_put_the_trees_on_a_cuda_storage_only():
    from rl_buffers import PrioritizedReplayBuffer, TensorDictPrioritizedReplayBuffer
    from rl_buffers.samplers.prioritized import _cuda_device

    for storage in (LazyTensorStorage(8), LazyTensorStorage(8, device="cpu")):
        assert _cuda_device(storage) is None
        buffer = TensorDictPrioritizedReplayBuffer(alpha=0.7, beta=0.5, storage=storage)
        assert buffer.sampler._tree.device.type == "cpu"
    assert PrioritizedReplayBuffer(alpha=0.7, beta=0.5).sampler._tree.device.type == "cpu"
    cuda_kernels = torch._C._dispatch_has_kernel_for_dispatch_key(
        "rl_core::sum_min_tree_priority_update_", "CUDA"
    )  # rl-kernels built with CUDA; without them CUDA trees would be slower than CPU ones
    expected = torch.device("cuda:0") if cuda_kernels else None
    assert _cuda_device(LazyTensorStorage(8, device="cuda:0")) == expected


@pytest.mark.parametrize("within", [False, True])
def test_max_priority_within_buffer(within):
    # alpha=1, eps=1e-8: a stored value is the priority. Rows 0-2 come in at the default
    # 1.0, then get 10, 5 and 3; row 3 comes in at the max, 10. Rows 0 and 3 are then
    # lowered to 2 and 1: within the buffer the largest stored value is now row 1's 5,
    # the largest ever set stays 10.
    sampler = PrioritizedSampler(8, 1.0, 1.0, max_priority_within_buffer=within)
    assert sampler.max_priority_within_buffer is within
    sampler.extend(torch.arange(3))
    sampler.update_priority(torch.arange(3), torch.tensor([10.0, 5.0, 3.0]))
    sampler.add(3)
    assert sampler._leaves(4)[3].item() == pytest.approx(10.0)
    sampler.update_priority(torch.tensor([0, 3]), torch.tensor([2.0, 1.0]))
    sampler.add(4)
    assert sampler._leaves(5)[4].item() == pytest.approx(5.0 if within else 10.0)
    assert sampler.default_priority == pytest.approx(5.0 if within else 10.0)
    # lowering an item that does not hold the max changes nothing
    sampler.update_priority(torch.tensor([2]), torch.tensor([0.5]))
    assert sampler.default_priority == pytest.approx(5.0 if within else 10.0)
    restored = PrioritizedSampler(8, 1.0, 1.0, max_priority_within_buffer=within)
    restored.load_state_dict(sampler.state_dict())
    assert restored.default_priority == pytest.approx(5.0 if within else 10.0)
    sampler._empty()
    assert sampler.default_priority == 1.0
    with pytest.raises(TypeError, match="expected max_priority_within_buffer to be a bool"):
        PrioritizedSampler(8, 1.0, 1.0, max_priority_within_buffer=1)
