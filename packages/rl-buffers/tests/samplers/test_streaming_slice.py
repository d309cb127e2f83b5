import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    StreamingSliceSampler,
    TensorDictReplayBuffer,
)

TRUNC = ("next", "truncated")


def stream(n, *, done_at=(), start=0, **entries):
    """``n`` items with ``value`` start..start+n-1 and ("next", "done") True at ``done_at``."""
    done = torch.zeros(n, 1, dtype=torch.bool)
    done[list(done_at)] = True
    data = {"value": torch.arange(start, start + n), ("next", "done"): done}
    data.update(entries)
    return TensorDict(data, [n])


def buffer(size, sampler, seed=0):
    return TensorDictReplayBuffer(
        storage=LazyTensorStorage(size),
        sampler=sampler,
        generator=torch.Generator().manual_seed(seed),
    )


def test_one_write_is_cut_into_windows_returned_once_in_write_order():
    rb = buffer(16, StreamingSliceSampler(slice_len=3))
    rb.extend(stream(6))
    batch = rb.sample(6)
    assert batch["value"].tolist() == [0, 1, 2, 3, 4, 5]
    assert batch[TRUNC].view(-1).tolist() == [False, False, True] * 2
    assert rb.sampler.num_queued == 0


def test_windows_are_returned_oldest_first_across_batches():
    rb = buffer(16, StreamingSliceSampler(slice_len=2))
    rb.extend(stream(6))
    assert rb.sample(2)["value"].tolist() == [0, 1]
    assert rb.sample(2)["value"].tolist() == [2, 3]
    assert rb.sample(2)["value"].tolist() == [4, 5]


def test_a_window_left_open_is_completed_by_the_next_write():
    rb = buffer(16, StreamingSliceSampler(slice_len=3))
    rb.extend(stream(2))  # rows 0, 1: no window yet
    assert rb.sampler.num_queued == 0
    rb.extend(stream(4, start=2))  # rows 2..5 continue the trajectory
    assert rb.sampler.num_queued == 2
    assert rb.sample(6)["value"].tolist() == [0, 1, 2, 3, 4, 5]


def test_single_adds_make_windows():
    rb = buffer(16, StreamingSliceSampler(slice_len=2))
    for i in range(5):
        rb.add(stream(1, start=i)[0])
    assert rb.sampler.num_queued == 2  # [0, 1], [2, 3]; row 4 waits
    assert rb.sample(4)["value"].tolist() == [0, 1, 2, 3]


def test_windows_never_cross_a_done_and_short_leftovers_are_dropped():
    # Trajectory A: rows 0..4 (done at 4); B: rows 5..8 (done at 8); C: rows 9..10 running.
    # slice_len 2: A gives [0,1], [2,3] (row 4 left over, dropped), B gives [5,6], [7,8].
    rb = buffer(32, StreamingSliceSampler(slice_len=2))
    rb.extend(stream(11, done_at=(4, 8)))
    assert rb.sampler.num_queued == 5  # ... and C gives [9, 10]
    assert rb.sample(10)["value"].tolist() == [0, 1, 2, 3, 5, 6, 7, 8, 9, 10]


def test_a_done_at_the_end_of_a_write_closes_the_open_window():
    rb = buffer(32, StreamingSliceSampler(slice_len=3))
    rb.extend(stream(4, done_at=(3,)))  # [0,1,2]; row 3 ends its trajectory: dropped
    rb.extend(stream(3, start=4))  # a new trajectory: rows 4..6
    assert rb.sample(6)["value"].tolist() == [0, 1, 2, 4, 5, 6]


def test_trajectory_ids_and_is_init_split_windows():
    episode = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2, 2, 2])
    is_init = torch.zeros(10, 1, dtype=torch.bool)
    is_init[5] = True  # a reset inside episode 1: rows 3, 4 | 5, 6
    data = stream(10, episode=episode, is_init=is_init)
    for keys in ({}, {"traj_key": "episode"}):
        rb = buffer(32, StreamingSliceSampler(slice_len=2, **keys))
        rb.extend(data)
        # episode 0: [0,1] (2 dropped); [3,4]; [5,6]; episode 2: [7,8] (9 kept open)
        assert rb.sample(8)["value"].tolist() == [0, 1, 3, 4, 5, 6, 7, 8]
        assert rb.sampler.num_queued == 0
    # A new id at the start of the next write also closes the open window.
    rb = buffer(32, StreamingSliceSampler(slice_len=2, traj_key="episode"))
    rb.extend(stream(3, episode=torch.tensor([0, 0, 0])))
    rb.extend(stream(2, start=3, episode=torch.tensor([1, 1])))
    assert rb.sample(4)["value"].tolist() == [0, 1, 3, 4]


def test_end_keys_are_combined_with_or():
    trunc = torch.zeros(8, 1, dtype=torch.bool)
    trunc[2] = True
    data = stream(8, done_at=(5,), stop=trunc)
    rb = buffer(32, StreamingSliceSampler(slice_len=2, end_keys=[("next", "done"), "stop"]))
    rb.extend(data)
    # trajectories: rows 0..2 | 3..5 | 6..7 -> [0,1], [3,4], [6,7]
    assert rb.sample(6)["value"].tolist() == [0, 1, 3, 4, 6, 7]
    # The uniform fallback splits trajectories the same way: only rows 0-1, 1-2, 3-4, 4-5,
    # 6-7 are slices inside one trajectory.
    values = rb.sample(400)["value"].view(-1, 2)
    assert set(map(tuple, values.tolist())) == {(0, 1), (1, 2), (3, 4), (4, 5), (6, 7)}


def test_a_trajectory_crossing_the_storage_end():
    rb = buffer(10, StreamingSliceSampler(slice_len=3))
    rb.extend(stream(7))  # rows 0..6: [0,1,2], [3,4,5]; row 6 open
    assert rb.sample(6)["value"].tolist() == [0, 1, 2, 3, 4, 5]
    rb.extend(stream(5, start=7))  # values 7..11 in rows 7, 8, 9, 0, 1
    batch = rb.sample(6)
    assert batch["value"].tolist() == [6, 7, 8, 9, 10, 11]
    assert batch["index"].tolist() == [6, 7, 8, 9, 0, 1]


def test_a_window_overwritten_before_it_was_sampled_is_dropped():
    rb = buffer(7, StreamingSliceSampler(slice_len=3))
    rb.extend(stream(6))  # windows rows [0,1,2], [3,4,5]
    rb.extend(stream(2, start=6))  # rows 6, 0: row 0 rewritten, [0,1,2] now mixes writes
    assert rb.sample(3)["value"].tolist() == [3, 4, 5]
    # The queue is empty: the fallback draws a uniform slice of the stored trajectory
    # (oldest item row 1, value 1; values 1..7 in write order), never crossing the seam.
    values = rb.sample(300)["value"].view(-1, 3)
    assert (values.diff(dim=1) == 1).all()
    assert set(values[:, 0].tolist()) == {1, 2, 3, 4, 5}


def test_an_open_window_overwritten_before_completion_is_dropped():
    rb = buffer(4, StreamingSliceSampler(slice_len=3))
    rb.extend(stream(4))  # [0,1,2] queued; row 3 open
    rb.extend(stream(4, start=4))  # rows 0..3 rewritten: the open row 3 is gone
    # Queue bound 4 // 3 = 1: only the newest window [4, 5, 6] (rows 0, 1, 2) is left.
    assert rb.sampler.num_queued == 1
    assert rb.sample(3)["value"].tolist() == [4, 5, 6]


def test_fresh_windows_then_uniform_slices_fill_the_batch():
    rb = buffer(32, StreamingSliceSampler(slice_len=2), seed=3)
    rb.extend(stream(7, done_at=(6,)))  # windows [0,1], [2,3], [4,5]; row 6 dropped
    rb.sample(4)  # takes [0,1], [2,3]
    batch = rb.sample(6)
    values = batch["value"].view(3, 2)
    assert values[0].tolist() == [4, 5]
    assert (values[1:].diff(dim=1) == 1).all()
    assert int(values[1:].max()) <= 6
    assert batch[TRUNC].view(3, 2).tolist() == [[False, True]] * 3


def test_too_short_trajectories_queue_nothing_and_the_fallback_decides():
    data = stream(4, done_at=(1, 3))  # two trajectories of 2 items
    strict = buffer(32, StreamingSliceSampler(slice_len=3))
    strict.extend(data)
    assert strict.sampler.num_queued == 0
    with pytest.raises(RuntimeError, match="no stored trajectory has slice_len=3 items"):
        strict.sample(3)
    loose = buffer(32, StreamingSliceSampler(slice_len=3, strict_length=False))
    loose.extend(data)
    values = loose.sample(3)["value"].tolist()
    assert values in ([0, 1], [2, 3])  # a short trajectory whole


def test_state_dict_round_trip_and_empty():
    rb = buffer(16, StreamingSliceSampler(slice_len=2))
    rb.extend(stream(5))  # [0,1], [2,3]; row 4 open
    state = rb.sampler.state_dict()
    assert rb.sample(2)["value"].tolist() == [0, 1]
    restored = buffer(16, StreamingSliceSampler(slice_len=2))
    restored.extend(stream(5))
    restored.sampler.load_state_dict(state)
    restored.extend(stream(1, start=5))  # completes [4, 5] after the restored open row
    assert restored.sample(6)["value"].tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(
        ValueError, match="expected a state saved with slice_len=3, got slice_len=2"
    ):
        StreamingSliceSampler(slice_len=3).load_state_dict(state)
    rb.empty()
    assert rb.sampler.num_queued == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"slice_len": "3"},
            TypeError,
            r"expected slice_len to be a positive int, got '3' \(str\)",
        ),
        ({"slice_len": True}, TypeError, "expected slice_len to be a positive int, got True"),
        ({"slice_len": 0}, ValueError, "expected slice_len to be a positive int, got 0"),
        (
            {"slice_len": 2, "end_key": "a", "end_keys": ["b"]},
            ValueError,
            "expected end_key or end_keys, not both",
        ),
        ({"slice_len": 2, "end_keys": []}, ValueError, "non-empty list of keys, got \\[\\]"),
        ({"slice_len": 2, "end_keys": "done"}, ValueError, "non-empty list of keys, got 'done'"),
        ({"slice_len": 2, "end_key": "a", "traj_key": "b"}, ValueError, "not both"),
        ({"slice_len": 2, "pad_output": True}, NotImplementedError, "expected pad_output=False"),
        ({"slice_len": 2, "compile": True}, NotImplementedError, "expected compile=False"),
        ({"slice_len": 2, "span": 1}, NotImplementedError, "expected span=False, got 1"),
        ({"slice_len": 2, "use_gpu": True}, NotImplementedError, "expected use_gpu=False"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        StreamingSliceSampler(**kwargs)


def test_slice_len_is_keyword_only():
    with pytest.raises(TypeError):
        StreamingSliceSampler(3)


def test_bad_storages_batches_and_missing_keys():
    rb = buffer(16, StreamingSliceSampler(slice_len=2))
    rb.extend(stream(4))
    with pytest.raises(ValueError, match="batch_size=3 is not a multiple of slice_len=2"):
        rb.sample(3)
    small = buffer(2, StreamingSliceSampler(slice_len=3))
    with pytest.raises(ValueError, match="at least slice_len=3 items, got max_size=2"):
        small.extend(stream(2))
    listed = ReplayBuffer(storage=ListStorage(8), sampler=StreamingSliceSampler(slice_len=2))
    with pytest.raises(
        TypeError, match="expected a 1-D tensor storage of TensorDicts, got ListStorage"
    ):
        listed.extend([torch.tensor(0), torch.tensor(1)])
    keyed = buffer(8, StreamingSliceSampler(slice_len=2, end_key="stop"))
    with pytest.raises(KeyError, match="expected the written items to hold the entry 'stop'"):
        keyed.extend(stream(2))


def test_a_two_dimensional_storage_is_refused_at_the_first_write():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(8, ndim=2), sampler=StreamingSliceSampler(slice_len=2)
    )
    data = TensorDict({"value": torch.arange(6).view(2, 3)}, [2, 3])
    with pytest.raises(TypeError, match=r"expected a 1-D tensor storage of TensorDicts, got "):
        rb.extend(data)
