import json
import signal
import subprocess
import sys
import textwrap

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    ConsumingSampler,
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    TensorDictMaxValueWriter,
    TensorDictPrioritizedReplayBuffer,
    TensorDictReplayBuffer,
)


def test_each_item_is_returned_max_sample_count_times_until_rewritten():
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(10),
        sampler=ConsumingSampler(max_sample_count=2),
        batch_size=3,
        generator=torch.Generator().manual_seed(0),
    )
    buffer.extend(torch.arange(4))
    drawn = []
    for _ in range(3):
        batch = buffer.sample()
        assert batch.unique().numel() == batch.numel()  # no repeat inside a batch
        drawn += batch.tolist()
    # 4 items x 2 returns = 8: batches of 3, 3, then the 2 left
    assert len(drawn) == 8
    assert sorted(drawn) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert buffer.sampler.num_available == 0
    with pytest.raises(RuntimeError, match="max_sample_count=2 times; write new items"):
        buffer.sample()
    buffer.extend(torch.tensor([40, 50]))  # slots 4, 5: fresh
    assert buffer.sampler.can_sample(buffer.storage, 2)
    assert not buffer.sampler.can_sample(buffer.storage, 3)
    assert sorted(buffer.sample(5).tolist()) == [40, 50]


def test_an_overwritten_slot_is_available_again_and_state_round_trips():
    buffer = ReplayBuffer(storage=ListStorage(2), sampler=ConsumingSampler(), batch_size=2)
    buffer.extend([torch.tensor(0), torch.tensor(1)])
    buffer.sample()
    buffer.add(torch.tensor(7))  # overwrites slot 0
    state = buffer.sampler.state_dict()
    assert buffer.sample().tolist() == [7]
    restored = ConsumingSampler()
    restored.load_state_dict(state)
    assert restored.num_available == 1
    buffer.empty()
    assert buffer.sampler.num_available == 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_sample_count to be a positive int, got 0"):
        ConsumingSampler(0)
    storage = LazyTensorStorage(4, ndim=2)
    storage.set(torch.arange(2), torch.zeros(2, 2))
    with pytest.raises(TypeError, match="expected a 1-D storage, got ndim=2"):
        ConsumingSampler().sample(storage, 1)


def consumed_in_order(buffer, batches):
    """The slots the next ``batches`` samples consume, in the order they were returned."""
    order = []
    for _ in range(batches):
        order += buffer.sample(return_info=True)[1]["index"].tolist()
    return order


@pytest.mark.parametrize("make_storage", [lambda: ListStorage(10), lambda: LazyTensorStorage(10)])
def test_writes_fill_consumed_slots_first_and_len_counts_live_items(make_storage):
    # TorchRL 0.14: consumed slots are reused oldest-consumed first; a write larger than
    # the free list continues at the writer's cursor; len(buffer) counts live items.
    buffer = ReplayBuffer(
        storage=make_storage(),
        sampler=ConsumingSampler(),
        batch_size=3,
        generator=torch.Generator().manual_seed(0),
    )

    def items(*values):
        if isinstance(buffer.storage, ListStorage):
            return [torch.tensor(v) for v in values]
        return torch.tensor(values)

    buffer.extend(items(0, 1, 2, 3, 4, 5))  # slots 0..5, cursor 6
    consumed = consumed_in_order(buffer, 1)
    assert len(buffer) == 3
    assert len(buffer.storage) == 6
    assert buffer.extend(items(10, 11)).tolist() == consumed[:2]
    assert len(buffer) == 5
    index = buffer.extend(items(20, 21, 22))
    assert index.tolist() == [consumed[2], 6, 7]  # the last free slot, then the cursor
    assert len(buffer) == 8
    assert buffer.add(torch.tensor(30)) == 8
    stored = {slot: int(buffer.storage[slot]) for slot in range(9)}
    assert [stored[slot] for slot in consumed] == [10, 11, 20]
    assert [stored[6], stored[7], stored[8]] == [21, 22, 30]
    if isinstance(buffer.storage, LazyTensorStorage):
        assert buffer.storage.next_row == 9


def test_the_cursor_part_skips_the_slots_just_filled():
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(4),
        sampler=ConsumingSampler(),
        batch_size=1,
        generator=torch.Generator().manual_seed(3),
    )
    buffer.extend(torch.arange(4))  # full: the cursor is back at slot 0
    (slot,) = consumed_in_order(buffer, 1)
    cursor_slot = 1 if slot == 0 else 0  # TorchRL's scan skips the slot being filled
    assert buffer.extend(torch.tensor([7, 8])).tolist() == [slot, cursor_slot]
    assert buffer.storage.next_row == cursor_slot + 1
    assert int(buffer.storage[slot]) == 7
    assert int(buffer.storage[cursor_slot]) == 8


def test_tensordict_buffer_reuses_slots_and_sets_index():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(8), sampler=ConsumingSampler(), batch_size=2
    )
    buffer.extend(TensorDict({"obs": torch.arange(4.0)}, [4]))
    consumed = buffer.sample()["index"].tolist()
    data = TensorDict({"obs": torch.tensor([9.0, 9.5])}, [2])
    assert buffer.extend(data).tolist() == consumed
    assert data["index"].tolist() == consumed
    assert buffer.storage.get(torch.tensor(consumed))["obs"].tolist() == [9.0, 9.5]


def test_memmap_storage_keeps_the_cursor_and_the_free_slots_across_a_kill(tmp_path):
    # A child fills a consumed slot, dumps the buffer, then is SIGKILLed: the reopened
    # storage goes on at the writer's cursor (not after the filled slot), and the buffer
    # reloaded from the dump fills the consumed slot left before the cursor.
    script = textwrap.dedent(
        f"""
        import os, signal, torch
        from tensordict import TensorDict
        from rl_buffers import ConsumingSampler, LazyMemmapStorage, TensorDictReplayBuffer
        buffer = TensorDictReplayBuffer(
            storage=LazyMemmapStorage(6, scratch_dir={str(tmp_path / "data")!r}),
            sampler=ConsumingSampler(), batch_size=2,
            generator=torch.Generator().manual_seed(1),
        )
        buffer.extend(TensorDict({{"obs": torch.arange(4.0)}}, [4]))
        consumed = buffer.sample()["index"].tolist()
        buffer.extend(TensorDict({{"obs": torch.tensor([40.0])}}, [1]))
        buffer.dumps({str(tmp_path / "dump")!r})
        print(consumed, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stderr
    first, second = json.loads(done.stdout)
    storage = LazyMemmapStorage.load(tmp_path / "data")
    assert len(storage) == 4
    assert storage.next_row == 4
    assert storage.get(torch.tensor([first]))["obs"].tolist() == [40.0]
    buffer = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(6), sampler=ConsumingSampler(), batch_size=2
    )
    buffer.loads(tmp_path / "dump")
    assert len(buffer) == 3
    assert buffer.extend(TensorDict({"obs": torch.tensor([50.0, 60.0])}, [2])).tolist() == [
        second,
        4,
    ]


def test_settings_torchrl_refuses():
    with pytest.raises(ValueError, match="prefetch=2"):
        ReplayBuffer(
            storage=LazyTensorStorage(4), sampler=ConsumingSampler(), batch_size=2, prefetch=2
        )
    with pytest.raises(ValueError, match="1-D storage, got ndim=2"):
        ReplayBuffer(storage=LazyTensorStorage(4, ndim=2), sampler=ConsumingSampler())
    with pytest.raises(TypeError, match=r"write_at.*TensorDictMaxValueWriter"):
        TensorDictReplayBuffer(
            storage=LazyTensorStorage(4),
            sampler=ConsumingSampler(),
            writer=TensorDictMaxValueWriter(rank_key="r"),
        )


def test_consume_after_n_samples_builds_the_consuming_sampler():
    # TorchRL: ReplayBuffer(consume_after_n_samples=n) is a ConsumingSampler(n) buffer
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(4), batch_size=4, consume_after_n_samples=2
    )
    assert isinstance(buffer.sampler, ConsumingSampler)
    assert buffer.sampler.max_sample_count == 2
    buffer.extend(TensorDict({"obs": torch.arange(3.0)}, [3]))
    assert sorted(buffer.sample()["index"].tolist()) == [0, 1, 2]
    assert len(buffer) == 3
    assert sorted(buffer.sample()["index"].tolist()) == [0, 1, 2]
    assert len(buffer) == 0
    same = ConsumingSampler(2)
    assert ReplayBuffer(sampler=same, consume_after_n_samples=2).sampler is same
    with pytest.raises(ValueError, match="disagrees with the sampler's max_sample_count=1"):
        ReplayBuffer(sampler=ConsumingSampler(), consume_after_n_samples=2)
    with pytest.raises(ValueError, match="got PrioritizedSampler"):
        TensorDictPrioritizedReplayBuffer(
            alpha=0.7, beta=0.5, storage=LazyTensorStorage(4), consume_after_n_samples=1
        )
    with pytest.raises(ValueError, match="positive int or None, got 0"):
        ReplayBuffer(consume_after_n_samples=0)
