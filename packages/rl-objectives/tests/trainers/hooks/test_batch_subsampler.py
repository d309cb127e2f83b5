import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import BatchSubSampler


def trajectories(lengths, T=10):
    """Rows r of T steps with value 100 * r + t, a prefix of lengths[r] valid steps."""
    rows = len(lengths)
    t = torch.arange(rows * T).reshape(rows, T)
    value = 100 * (t // T) + t % T
    mask = torch.arange(T).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return TensorDict({"v": value, ("collector", "mask"): mask}, batch_size=[rows, T])


def test_windows_are_contiguous_valid_slices_of_one_row():
    torch.manual_seed(0)
    batch = trajectories([10, 6, 2])
    sampler = BatchSubSampler(batch_size=40, sub_traj_len=4, min_sub_traj_len=3)
    seen_rows = set()
    for _ in range(50):
        out = sampler(batch)
        assert out.batch_size == torch.Size([10, 4])
        for v, real in zip(out["v"].tolist(), out["collector", "mask"].tolist()):
            row, start = divmod(v[0], 100)
            seen_rows.add(row)
            assert row != 2  # length 2 < min_sub_traj_len
            assert v == [100 * row + start + k for k in range(4)]  # hand reference
            assert real == [True] * 4
            assert start + 4 <= (10, 6)[row]  # inside the valid prefix
    assert seen_rows == {0, 1}


def test_short_rows_are_padded_and_masked():
    torch.manual_seed(0)
    out = BatchSubSampler(batch_size=8, sub_traj_len=4, min_sub_traj_len=1)(trajectories([2]))
    assert out["v"].tolist() == [[0, 1, 1, 1]] * 2
    assert out["collector", "mask"].tolist() == [[True, True, False, False]] * 2


def test_single_steps_without_replacement_from_valid_steps():
    torch.manual_seed(0)
    out = BatchSubSampler(batch_size=5)(trajectories([3, 2]))
    assert out.batch_size == torch.Size([5])
    assert sorted(out["v"].tolist()) == [0, 1, 2, 100, 101]  # all valid steps, once each


def test_errors():
    with pytest.raises(ValueError, match=r"sub_traj_len \(8\) exceeds batch_size \(4\)"):
        BatchSubSampler(4, sub_traj_len=8)
    with pytest.raises(ValueError, match="min_sub_traj_len must be an int >= 0, got -1"):
        BatchSubSampler(4, min_sub_traj_len=-1)
    with pytest.raises(ValueError, match="no trajectory has at least 5 valid steps"):
        BatchSubSampler(8, sub_traj_len=4, min_sub_traj_len=5)(trajectories([3, 4]))
