import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyMemmapStorage, TensorDictReplayBuffer


def batch(n, start=0):
    step = torch.arange(start, start + n)
    return TensorDict({"step": step, "obs": step.float().unsqueeze(-1).expand(n, 3).clone()}, [n])


def test_files_live_in_scratch_dir_and_reload(tmp_path):
    storage = LazyMemmapStorage(10, scratch_dir=tmp_path)
    storage.set(torch.arange(4), batch(4))
    assert storage._data.is_memmap()
    assert (tmp_path / "rl_buffers_storage.json").exists()
    reopened = LazyMemmapStorage.load(tmp_path)
    assert len(reopened) == 4
    assert reopened.get(torch.arange(4))["step"].tolist() == [0, 1, 2, 3]
    assert reopened.next_row == 4


def test_the_length_word_follows_every_write_and_a_damaged_one_is_refused(tmp_path):
    storage = LazyMemmapStorage(10, scratch_dir=tmp_path)
    storage.set(slice(0, 4), batch(4))
    storage.set(slice(4, 10), batch(6, start=4))
    storage.set(slice(0, 3), batch(3, start=10))  # wraps: 10 items, cursor at 3
    word = tmp_path / "rl_buffers_length.memmap"
    # one little-endian int64: len_rows * 2**32 + next_row, written in place (no rename)
    assert int.from_bytes(word.read_bytes(), "little") == 10 * 2**32 + 3
    reopened = LazyMemmapStorage.load(tmp_path)
    assert (len(reopened), reopened.next_row) == (10, 3)
    word.write_bytes(word.read_bytes()[:5])  # truncated
    with pytest.raises(
        ValueError, match=r"rl_buffers_length\.memmap is damaged or missing \(5 bytes"
    ):
        LazyMemmapStorage.load(tmp_path)


def test_existsok(tmp_path):
    LazyMemmapStorage(10, scratch_dir=tmp_path).set(torch.arange(2), batch(2))
    with pytest.raises(FileExistsError, match=r"already holds a storage\. Pass existsok=True"):
        LazyMemmapStorage(10, scratch_dir=tmp_path).set(torch.arange(2), batch(2))
    storage = LazyMemmapStorage(10, scratch_dir=tmp_path, existsok=True)
    storage.set(torch.arange(1), batch(1, start=7))
    assert len(LazyMemmapStorage.load(tmp_path)) == 1


def test_dumps_elsewhere_and_loads_copy(tmp_path):
    storage = LazyMemmapStorage(10, scratch_dir=tmp_path / "a")
    storage.set(torch.arange(3), batch(3))
    storage.dumps(tmp_path / "b")
    other = LazyMemmapStorage(10, scratch_dir=tmp_path / "c")
    other.loads(tmp_path / "b")
    assert len(other) == 3
    assert other.scratch_dir == tmp_path / "c"
    assert other.get(torch.arange(3))["step"].tolist() == [0, 1, 2]


def test_bad_input(tmp_path):
    with pytest.raises(ValueError, match="expected device='cpu'"):
        LazyMemmapStorage(3, device="meta")
    with pytest.raises(FileNotFoundError, match="holds no storage"):
        LazyMemmapStorage.load(tmp_path)


_CHILD = textwrap.dedent(
    """
    import sys, torch
    from tensordict import TensorDict
    from rl_buffers import LazyMemmapStorage, TensorDictReplayBuffer
    scratch, checkpoint = sys.argv[1], sys.argv[2]
    buffer = TensorDictReplayBuffer(storage=LazyMemmapStorage(100_000, scratch_dir=scratch))
    i = 0
    while True:
        step = torch.arange(5 * i, 5 * i + 5)
        buffer.extend(TensorDict({"step": step, "obs": step.float().unsqueeze(-1).expand(5, 3)}, [5]))
        if i == 9:
            buffer.dumps(checkpoint)
        print(i, flush=True)
        i += 1
    """
)


def test_killed_writer_keeps_every_returned_item(tmp_path):
    """A process extending a memmap buffer is killed by SIGKILL; a new one reloads its data."""
    scratch, checkpoint = tmp_path / "scratch", tmp_path / "checkpoint"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(scratch), str(checkpoint)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    returned = []
    try:
        for line in child.stdout:
            returned.append(int(line))
            if len(returned) >= 40:
                break
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr.read()
    returned += [int(line) for line in child.stdout.read().split()]  # printed before the kill
    assert len(returned) >= 40

    storage = LazyMemmapStorage.load(scratch)
    done = 5 * (returned[-1] + 1)
    assert len(storage) >= done
    data = storage.get(torch.arange(done))
    assert data["step"].tolist() == list(range(done))
    assert (data["obs"] == data["step"].float().unsqueeze(-1)).all()

    # The buffer goes on writing after the recovered items.
    buffer = TensorDictReplayBuffer(storage=storage, batch_size=8)
    index = buffer.extend(batch(2, start=-2))
    assert index.tolist() == [len(storage) - 2, len(storage) - 1]

    # The checkpoint taken after the tenth extend holds exactly its 50 items.
    restored = TensorDictReplayBuffer(
        storage=LazyMemmapStorage(100_000, scratch_dir=tmp_path / "r")
    )
    restored.loads(checkpoint)
    assert len(restored) == 50
    assert restored.storage.get(torch.arange(50))["step"].tolist() == list(range(50))
    assert restored.writer.state_dict()["cursor"] == 50


def test_loads_without_scratch_dir_copies_and_leaves_the_source_alone(tmp_path):
    source = LazyMemmapStorage(10, scratch_dir=tmp_path / "a")
    source.set(torch.arange(3), batch(3))
    copy = LazyMemmapStorage(10)
    copy.loads(tmp_path / "a")
    assert copy.scratch_dir != tmp_path / "a"
    copy.set(torch.arange(1), batch(1, start=50))
    assert LazyMemmapStorage.load(tmp_path / "a").get(torch.arange(1))["step"].tolist() == [0]


def test_reopened_wrapped_storage_keeps_the_write_position(tmp_path):
    buffer = TensorDictReplayBuffer(storage=LazyMemmapStorage(4, scratch_dir=tmp_path))
    buffer.extend(batch(6))  # wraps: the next write goes to row 2
    reopened = LazyMemmapStorage.load(tmp_path)
    assert reopened.next_row == 2
    again = TensorDictReplayBuffer(storage=reopened)
    assert again.extend(batch(1, start=9)).tolist() == [2]


# Two entries of 8 MiB each: one overwrite of every row takes milliseconds, so a kill at a
# random moment of the write loop lands inside a write (between its first and second entry,
# or inside one) far more often than between two writes.
_ROWS, _WIDTH = 2048, 1024


def _generation(value, rows=_ROWS):
    full = torch.full((rows, _WIDTH), float(value))
    return TensorDict({"first": full, "second": full.clone()}, [rows])


def _overwrite_forever(folder, running):
    # the child: overwrites every row of the full storage with generation 1, 2, 1, 2, ...
    # until it is killed
    torch.set_num_threads(1)
    storage = LazyMemmapStorage.load(folder)
    batches = [_generation(2), _generation(1)]
    storage.set(slice(0, _ROWS), batches[1])
    running.set()
    generation = 2
    while True:
        storage.set(slice(0, _ROWS), batches[generation % 2])
        generation += 1


def _pending_rows(folder):
    count = folder / "rl_buffers_undo" / "count.memmap"
    return int(np.fromfile(count, dtype=np.int64)[0]) if count.exists() else 0


def test_an_overwrite_killed_midway_is_never_served_torn(tmp_path):
    """A child process overwriting a full memmap storage is SIGKILLed at spread moments;
    each reopening serves whole items only (both entries of every item from one write), never
    the new first entry beside the old second one that main served."""
    storage = LazyMemmapStorage(_ROWS, scratch_dir=tmp_path)
    storage.set(slice(0, _ROWS), _generation(0))
    del storage
    context = multiprocessing.get_context("fork")
    interrupted = 0
    for attempt in range(10):
        running = context.Event()
        child = context.Process(target=_overwrite_forever, args=(tmp_path, running), daemon=True)
        child.start()
        try:
            assert running.wait(60), "the writer did not start"
            if attempt % 2:
                time.sleep(0.001 + 0.004 * attempt)  # kill moments spread over a few writes
            else:
                # kill as soon as an overwrite is under way (its journal pending); where no
                # journal exists (main), after a second of writes
                deadline = time.monotonic() + 1.0
                while not _pending_rows(tmp_path) and time.monotonic() < deadline:
                    pass
        finally:
            os.kill(child.pid, signal.SIGKILL)  # (only the child this test started)
            child.join(60)
        assert child.exitcode == -signal.SIGKILL
        interrupted += _pending_rows(tmp_path) > 0  # the kill landed inside an overwrite
        reopened = LazyMemmapStorage.load(tmp_path)
        assert len(reopened) == _ROWS
        first, second = reopened.column("first"), reopened.column("second")
        generation = first[:, :1]
        assert bool((first == generation).all()), f"attempt {attempt}: a torn first entry"
        assert bool((second == generation).all()), f"attempt {attempt}: a torn item"
        # the interrupted write is undone as a whole: one generation in every row
        assert generation.unique().numel() == 1
        assert _pending_rows(tmp_path) == 0  # recovered once; the next load reads as is
        del reopened
    # the kills did land mid-write (else this test would have shown nothing)
    assert interrupted >= 2


def test_a_completed_overwrite_is_kept_and_dumps_never_leaves_half_a_copy(tmp_path):
    scratch = tmp_path / "scratch"
    storage = LazyMemmapStorage(8, scratch_dir=scratch)
    storage.set(slice(0, 8), _generation(0, rows=8))
    storage.set(slice(2, 6), _generation(5, rows=4))  # an overwrite that returned
    assert _pending_rows(scratch) == 0
    reopened = LazyMemmapStorage.load(scratch)
    assert reopened.column("first")[:, 0].tolist() == [0, 0, 5, 5, 5, 5, 0, 0]
    # a dump over an older dump: until the new length record lands, the target holds no
    # storage (a killed dump is refused by load, not read as old records over new rows)
    target = tmp_path / "dump"
    reopened.dumps(target)
    assert (target / "rl_buffers_storage.json").exists()
    assert not (target / "rl_buffers_undo").exists()


def episodes(n_episodes, steps, start=0):
    """``[episodes, steps]`` items: obs = 100 * episode + step, a nested reward beside it."""
    episode = torch.arange(start, start + n_episodes).unsqueeze(-1)
    obs = (100 * episode + torch.arange(steps)).float()
    return TensorDict(
        {"obs": obs.unsqueeze(-1).expand(n_episodes, steps, 2).clone(), "next": {"reward": obs}},
        [n_episodes, steps],
    )


def test_episode_batches_are_items_of_a_1d_storage_and_survive_a_reload(tmp_path):
    # TorchRL: a [E, T] batch in a 1-D storage is E items of batch [T]; reads keep [.., T].
    storage = LazyMemmapStorage(4, scratch_dir=tmp_path)
    buffer = TensorDictReplayBuffer(storage=storage, batch_size=3)
    assert buffer.extend(episodes(3, 5)).tolist() == [0, 1, 2]
    assert buffer.extend(episodes(2, 5, start=3)).tolist() == [3, 0]  # wraps
    assert len(buffer) == 4
    assert storage._data.batch_size == (4, 5)
    batch = buffer.sample()
    assert batch.batch_size == (3, 5)
    assert batch["index"].shape == (3, 5)
    assert (batch["index"] == batch["index"][:, :1]).all()
    row_episode = {0: 4, 1: 1, 2: 2, 3: 3}  # slot -> episode held
    for index, obs, reward in zip(batch["index"][:, 0], batch["obs"], batch["next", "reward"]):
        expected = 100.0 * row_episode[int(index)] + torch.arange(5.0)
        assert torch.equal(reward, expected)
        assert torch.equal(obs, expected.unsqueeze(-1).expand(5, 2))
    reopened = LazyMemmapStorage.load(tmp_path)
    assert len(reopened) == 4
    assert reopened.next_row == 1
    items = reopened.get(torch.arange(4))
    assert items.batch_size == (4, 5)
    assert items["next", "reward"][:, 0].tolist() == [400.0, 100.0, 200.0, 300.0]


def test_episode_batch_of_other_length_is_refused(tmp_path):
    buffer = TensorDictReplayBuffer(storage=LazyMemmapStorage(4, scratch_dir=tmp_path))
    buffer.extend(episodes(2, 5))
    with pytest.raises(ValueError, match="shape"):
        buffer.extend(episodes(2, 6))


def test_a_dump_lists_its_files_and_a_changed_byte_is_refused(tmp_path):
    # a dump's memory-mapped file with one byte changed loaded as it was
    storage = LazyMemmapStorage(10, scratch_dir=tmp_path / "scratch")
    storage.set(torch.arange(6), batch(6))
    storage.dumps(tmp_path / "dump")
    leaf = tmp_path / "dump" / "obs.memmap"
    raw = leaf.read_bytes()
    middle = len(raw) // 2
    leaf.write_bytes(raw[:middle] + bytes([raw[middle] ^ 0x5A]) + raw[middle + 1 :])
    target = LazyMemmapStorage(10, scratch_dir=tmp_path / "target")
    target.set(torch.arange(2), batch(2, start=50))
    with pytest.raises(ValueError, match=r"obs\.memmap is damaged: expected CRC-32"):
        target.loads(tmp_path / "dump")
    assert target[:]["step"].tolist() == [50, 51]
    with pytest.raises(ValueError, match=r"obs\.memmap is damaged"):
        LazyMemmapStorage.load(tmp_path / "dump")
    leaf.write_bytes(raw)
    # reopened in place, the dump becomes a scratch dir: its file list goes, writes follow
    reopened = LazyMemmapStorage.load(tmp_path / "dump")
    reopened.set(torch.arange(6, 8), batch(2, start=6))
    assert LazyMemmapStorage.load(tmp_path / "dump")[:]["step"].tolist() == list(range(8))


def test_a_dump_of_another_size_is_refused(tmp_path):
    source = LazyMemmapStorage(20, scratch_dir=tmp_path / "scratch")
    source.set(torch.arange(20), batch(20))
    source.dumps(tmp_path / "dump")
    target = LazyMemmapStorage(10, scratch_dir=tmp_path / "target")
    with pytest.raises(ValueError, match=r"max_size=20, ndim=1; this one has max_size=10"):
        target.loads(tmp_path / "dump")
    assert len(target) == 0
    assert target.max_size == 10
