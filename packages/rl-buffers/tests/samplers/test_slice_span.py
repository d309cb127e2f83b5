"""span= of the slice samplers: slices cut at their trajectory's start or end, as TorchRL."""

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    PrioritizedSliceSampler,
    SliceSampler,
    SliceSamplerWithoutReplacement,
)


def _stored(lengths):
    ids = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    step = torch.cat([torch.arange(n) for n in lengths])
    storage = LazyTensorStorage(64)
    storage.set(
        torch.arange(ids.numel()), TensorDict({"episode": ids, "step": step}, [ids.numel()])
    )
    return storage, ids, step


def _pieces(index, info):
    ends = info[("next", "truncated")].squeeze(-1)
    assert ends[-1]
    return torch.tensor_split(index, (ends.nonzero().squeeze(-1) + 1)[:-1].tolist())


def test_left_and_right_span_cut_slices_at_the_trajectory(chi_square):
    # one trajectory of 6 items, slice_len=4, span=(2, 1): the virtual start v is uniform
    # over [-2, 6 - 4 + 1] = [-2, 3] and the slice keeps items [max(v, 0), min(v + 4, 6)):
    # v=-2: 0-1, v=-1: 0-2, v=0: 0-3, v=1: 1-4, v=2: 2-5, v=3: 3-5, each 1/6
    storage, _ids, step = _stored([6])
    sampler = SliceSampler(slice_len=4, traj_key="episode", span=(2, 1))
    assert sampler.span == (2, 1)
    index, info = sampler.sample(storage, 4 * 3000)
    kinds = [(0, 2), (0, 3), (0, 4), (1, 4), (2, 4), (3, 3)]
    counts = torch.zeros(len(kinds))
    for piece in _pieces(index, info):
        steps = step[piece].tolist()
        assert steps == list(range(steps[0], steps[0] + len(steps)))
        counts[kinds.index((steps[0], len(steps)))] += 1
    assert counts.sum() == 3000
    assert chi_square(counts, torch.ones(len(kinds)))


def test_true_span_keeps_at_least_one_item_and_short_trajectories_come_up():
    # episode 0 has 2 items (< slice_len=4): with a right span of True (3) it can be drawn
    # under strict_length; every slice holds 1 to 4 items of one trajectory
    storage, ids, _step = _stored([2, 7])
    sampler = SliceSampler(slice_len=4, traj_key="episode", span=True)
    assert sampler.span == (True, True)
    index, info = sampler.sample(storage, 4 * 500)
    pieces = _pieces(index, info)
    assert len(pieces) == 500
    assert {len(p) for p in pieces} == {1, 2, 3, 4}
    assert {int(ids[p[0]]) for p in pieces} == {0, 1}
    assert all(len(set(ids[p].tolist())) == 1 for p in pieces)
    without = SliceSampler(slice_len=4, traj_key="episode", span=(False, 0))
    full = without.sample(storage, 4 * 50)[0].view(50, 4)
    assert (ids[full] == 1).all()


def test_span_int_must_stay_below_slice_len_and_bad_values():
    storage, _ids, _step = _stored([6])
    with pytest.raises(ValueError, match="the right span 4 must be below slice_len=4"):
        SliceSampler(slice_len=4, traj_key="episode", span=(0, 4)).sample(storage, 8)
    with pytest.raises(ValueError, match=r"expected span to be a bool, a non-negative int"):
        SliceSampler(slice_len=4, span=-1)
    with pytest.raises(ValueError, match=r"pair of them, got \(1, 2, 3\)"):
        SliceSampler(slice_len=4, span=(1, 2, 3))


def test_without_replacement_takes_span():
    storage, ids, _step = _stored([2, 3, 6])
    sampler = SliceSamplerWithoutReplacement(num_slices=3, traj_key="episode", span=(0, 2))
    index, info = sampler.sample(storage, 3 * 4)  # slice_len 4: every trajectory has >= 2
    pieces = _pieces(index, info)
    assert sorted(int(ids[p[0]]) for p in pieces) == [0, 1, 2]
    assert sampler.ran_out


def test_prioritized_right_span_and_left_span_turned_off():
    # episode 0: 3 items, episode 1: 5 items, slice_len=4, right span 2: a drawn item i of
    # episode 1 (items 3-7) starts the slice at min(i, 3 + 5 - 4 + 2 = 6); of episode 0
    # (items 0-2) at min(i, 0 + 3 - 4 + 2 = 1)
    storage, _ids, _step = _stored([3, 5])
    with pytest.warns(UserWarning, match="left span, which a prioritized slice sampler"):
        sampler = PrioritizedSliceSampler(64, 1.0, 1.0, slice_len=4, traj_key="episode", span=2)
    assert sampler.span == (False, 2)
    sampler.extend(torch.arange(8))
    priorities = torch.zeros(8)
    priorities[7] = 1.0  # only item 7 is ever drawn
    sampler.update_priority(torch.arange(8), priorities)
    index, info = sampler.sample(storage, 4 * 20)
    pieces = _pieces(index, info)
    assert len(pieces) == 20
    assert all(p.tolist() == [6, 7] for p in pieces)
    priorities = torch.zeros(8)
    priorities[2] = 1.0
    sampler.update_priority(torch.arange(8), priorities)
    index, info = sampler.sample(storage, 4 * 5)
    assert all(p.tolist() == [1, 2] for p in _pieces(index, info))
    assert (info["priority_weight"] > 0).all()
