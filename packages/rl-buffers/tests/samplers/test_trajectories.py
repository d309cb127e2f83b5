import torch

from rl_buffers.samplers._trajectories import find_trajectories, slice_positions


def test_ids_and_end_flags_split_the_same_way():
    ids = torch.tensor([0, 0, 1, 1, 1, 2])
    ends = torch.tensor([False, True, False, False, True, False])
    for column, is_end in ((ids, False), (ends, True)):
        trajs = find_trajectories(column, is_end_flag=is_end, oldest=0, where="t")
        assert trajs.start.tolist() == [0, 2, 5]
        assert trajs.length.tolist() == [2, 3, 1]


def test_wrapped_storage_in_write_order():
    # Rows 0-1 hold the tail of trajectory 7 (written last), rows 2-4 trajectory 5 (oldest),
    # rows 5-6 the head of trajectory 7.
    ids = torch.tensor([7, 7, 5, 5, 5, 7, 7])
    trajs = find_trajectories(ids, is_end_flag=False, oldest=2, where="t")
    assert trajs.start.tolist() == [0, 3]
    assert trajs.length.tolist() == [3, 4]
    positions = trajs.physical(slice_positions(trajs.start[1:], 4))
    assert positions.tolist() == [5, 6, 0, 1]
    assert trajs.logical(positions).tolist() == [3, 4, 5, 6]
