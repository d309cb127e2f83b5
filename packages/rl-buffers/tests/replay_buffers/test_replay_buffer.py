import itertools
import threading

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    PrioritizedSampler,
    ReplayBuffer,
    SamplerWithoutReplacement,
)
from rl_core.transforms import Transform


class Scale(Transform):
    """Doubles ``x`` on samples and halves it on writes."""

    def __init__(self):
        super().__init__(in_keys=["x"], in_keys_inv=["x"])

    def _apply_transform(self, value):
        return value * 2

    def _inv_apply_transform(self, value):
        return value / 2


def td(n, start=0):
    x = torch.arange(start, start + n, dtype=torch.float32)
    return TensorDict({"x": x, "twice": 2 * x}, [n])


def test_default_list_storage_holds_any_object():
    buffer = ReplayBuffer(batch_size=3)
    buffer.add("a")
    buffer.extend(["b", "c"])
    assert len(buffer) == 3
    assert set(buffer.sample()) <= {"a", "b", "c"}
    tensors = ReplayBuffer(storage=ListStorage(10))
    tensors.extend([torch.zeros(2), torch.ones(2)])
    assert tensors.sample(5).shape == (5, 2)


def test_extend_sample_len_and_empty():
    buffer = ReplayBuffer(storage=LazyTensorStorage(10))
    assert buffer.extend(torch.arange(4.0)).tolist() == [0, 1, 2, 3]
    assert buffer.add(torch.tensor(4.0)) == 4
    data, info = buffer.sample(6, return_info=True)
    assert data.shape == (6,)
    assert torch.equal(data, info["index"].float())
    buffer.empty()
    assert len(buffer) == 0
    with pytest.raises(
        RuntimeError, match=r"ReplayBuffer\.sample: Cannot sample from an empty storage"
    ):
        buffer.sample(2)
    with pytest.raises(ValueError, match="no batch_size; pass sample"):
        buffer.sample()
    assert buffer.extend(torch.ones(1)).tolist() == [0]


def test_iter_is_one_epoch_without_replacement():
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(20), sampler=SamplerWithoutReplacement(), batch_size=4
    )
    buffer.extend(torch.arange(10))
    batches = list(buffer)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert sorted(torch.cat(batches).tolist()) == list(range(10))
    endless = ReplayBuffer(storage=LazyTensorStorage(5), batch_size=2)
    endless.extend(torch.arange(5))
    assert len(list(itertools.islice(endless, 7))) == 7


def test_transforms_on_samples_and_inverse_on_writes(rename):
    buffer = ReplayBuffer(storage=LazyTensorStorage(10), transform=Scale())
    buffer.extend(td(4))
    stored = buffer.storage.get(torch.arange(4))
    assert stored["x"].tolist() == [0.0, 0.5, 1.0, 1.5]  # inverse ran on the write
    buffer.append_transform(rename(in_keys=["twice"], out_keys=["double"]))
    batch = buffer.sample(8)
    assert torch.equal(batch["x"], batch["double"] / 2)
    buffer.insert_transform(0, rename(in_keys=["x"], out_keys=["y"]))
    assert [type(t).__name__ for t in buffer.transform] == ["Rename", "Scale", "Rename"]
    with pytest.raises(TypeError, match="expected an rl-core Transform or a function of the"):
        buffer.append_transform(3)


def test_a_function_is_a_transform_of_the_samples_as_in_torchrl():
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(10), transform=lambda batch: batch.set("y", batch["x"] * 3)
    )
    buffer.extend(td(4))
    assert buffer.storage.get(torch.arange(4))["x"].tolist() == [0.0, 1.0, 2.0, 3.0]
    batch = buffer.sample(6)
    assert torch.equal(batch["y"], batch["x"] * 3)


def test_state_dict_round_trip():
    buffer = ReplayBuffer(storage=LazyTensorStorage(8), sampler=PrioritizedSampler(8, 0.6, 0.4))
    index = buffer.extend(td(5))
    buffer.update_priority(index, torch.arange(5.0))
    other = ReplayBuffer(storage=LazyTensorStorage(8), sampler=PrioritizedSampler(8, 0.6, 0.4))
    other.load_state_dict(buffer.state_dict())
    assert len(other) == 5
    assert torch.equal(other.sampler._tree, buffer.sampler._tree)
    assert other.extend(td(1)).tolist() == [5]


@pytest.mark.parametrize("memmap", [False, True])
def test_dumps_loads_round_trip(tmp_path, memmap):
    def make(folder):
        storage = LazyMemmapStorage(6, scratch_dir=folder) if memmap else LazyTensorStorage(6)
        return ReplayBuffer(storage=storage, sampler=PrioritizedSampler(6, 0.6, 0.4))

    buffer = make(tmp_path / "a")
    buffer.extend(td(8))  # wraps: rows 0 and 1 hold items 6 and 7
    buffer.update_priority(torch.tensor([1, 3]), torch.tensor([5.0, 0.1]))
    buffer.dumps(tmp_path / "ckpt")
    other = make(tmp_path / "b")
    other.loads(tmp_path / "ckpt")
    assert torch.equal(
        other.storage.get(torch.arange(6))["x"], buffer.storage.get(torch.arange(6))["x"]
    )
    assert torch.equal(other.sampler._tree, buffer.sampler._tree)
    assert other.writer.state_dict() == {"cursor": 2}
    with pytest.raises(FileNotFoundError, match="holds no complete checkpoint"):
        other.loads(tmp_path / "nothing")


def test_prefetch_samples_ahead():
    buffer = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8, prefetch=3)
    buffer.extend(td(50))
    for _ in range(10):
        batch = buffer.sample()
        assert batch.batch_size == torch.Size([8])
        assert torch.equal(batch["twice"], 2 * batch["x"])
    with pytest.raises(ValueError, match="batch_size=4 differs from the prefetched batch_size=8"):
        buffer.sample(4)
    buffer.empty()
    with pytest.raises(RuntimeError, match="Cannot sample from an empty storage"):
        buffer.sample()
    with pytest.raises(ValueError, match="prefetch=2 needs a batch_size"):
        ReplayBuffer(prefetch=2)


def test_reset_and_reload_while_batches_are_in_flight_do_not_deadlock(tmp_path):
    # A prefetched batch in flight needs the buffer lock to finish; empty(), loads() and
    # load_state_dict() used to wait for it while holding that lock.
    buffer = ReplayBuffer(storage=LazyTensorStorage(100), batch_size=8, prefetch=3)
    buffer.extend(td(50))
    buffer.dumps(tmp_path / "ckpt")
    state = buffer.state_dict()

    def churn():
        for _ in range(100):
            buffer.sample()
            buffer.empty()
            buffer.extend(td(50))
            buffer.sample()
            buffer.load_state_dict(state)
            buffer.sample()
            buffer.loads(tmp_path / "ckpt")

    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "a reset or reload deadlocked with a prefetched batch"


def test_extend_from_a_thread_while_sampling():
    buffer = ReplayBuffer(storage=LazyTensorStorage(500), batch_size=32, prefetch=2)
    buffer.extend(td(10))
    errors = []

    def collect():
        try:
            for i in range(100):
                buffer.extend(td(10, start=10 * (i + 1)))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    thread = threading.Thread(target=collect)
    thread.start()
    while thread.is_alive():
        batch = buffer.sample()
        # Items are written whole under the buffer's lock: no half-written item is read.
        assert torch.equal(batch["twice"], 2 * batch["x"])
    thread.join()
    assert not errors
    assert len(buffer) == 500
    assert sorted(buffer.storage.get(torch.arange(500))["x"].tolist()) == list(range(510, 1010))


def test_bad_construction():
    with pytest.raises(ValueError, match="expected batch_size to be a positive int, got -1"):
        ReplayBuffer(batch_size=-1)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match=r"expected prefetch to be an int >= 0 or None"):
            ReplayBuffer(batch_size=2, prefetch=bad)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="pin_memory=True needs a CUDA device"):
            ReplayBuffer(pin_memory=True)
    with pytest.raises(RuntimeError, match="RandomSampler has no priorities"):
        ReplayBuffer().update_priority(torch.tensor([0]), 1.0)


@pytest.mark.parametrize("storage", [LazyTensorStorage, LazyMemmapStorage])
@pytest.mark.parametrize("allocated", [False, True])
def test_extend_with_a_tuple_names_the_batch_sizes(storage, allocated):
    # (obs[5], act[4]) used to end in "'tuple' object has no attribute 'shape'"
    buffer = ReplayBuffer(storage=storage(10), batch_size=2)
    if allocated:
        buffer.extend(torch.zeros(3, 3))
    before = len(buffer)
    obs, act = torch.zeros(5, 3), torch.zeros(4, 2)
    with pytest.raises(ValueError, match=r"tuple of 2 tensors whose batch sizes .* \[5, 4\]"):
        buffer.extend((obs, act))
    with pytest.raises(ValueError, match=r"list of 2 tensors whose batch sizes .* \[5, 4\]"):
        buffer.extend([obs, act])
    # one batch size: still not a tensor storage's item; the error says what to pass
    with pytest.raises(TypeError, match=r"got a tuple of 2 tensors \(batch size 5\)"):
        buffer.extend((obs, torch.zeros(5, 2)))
    assert len(buffer) == before


@pytest.mark.parametrize("prefetch", [None, 0])
def test_prefetch_none_or_zero_means_no_prefetching(prefetch):
    # TorchRL accepts prefetch=0 (no prefetching); it used to be refused here
    buffer = ReplayBuffer(storage=LazyTensorStorage(10), prefetch=prefetch)  # no batch_size
    buffer.extend(torch.arange(10.0))
    assert buffer.sample(4).shape == (4,)
    assert buffer.sample(3).shape == (3,)  # any batch size: nothing was sampled ahead
    assert buffer._prefetch is None


@pytest.mark.parametrize("storage", [LazyTensorStorage, ListStorage])
def test_getitem_reads_stored_items_with_the_transforms(storage):
    # buffer[index] (int, slice, index tensor, key) as TorchRL's: the stored items, through
    # collate_fn for a list storage, then the buffer's transforms; it used to be a TypeError
    buffer = ReplayBuffer(storage=storage(10), transform=Scale(), batch_size=2)
    if storage is ListStorage:
        for i in range(6):
            buffer.add(TensorDict({"x": torch.tensor(float(i)), "twice": torch.tensor(2.0 * i)}))
    else:
        buffer.extend(td(6))
    # stored x is halved by the inverse on write; reads double it back
    assert buffer[1:4]["x"].tolist() == [1.0, 2.0, 3.0]
    assert buffer[1:4]["twice"].tolist() == [2.0, 4.0, 6.0]
    assert buffer[torch.tensor([5, 0])]["x"].tolist() == [5.0, 0.0]
    assert buffer[[2, -1]]["x"].tolist() == [2.0, 5.0]
    assert float(buffer[-2]["x"]) == 4.0
    assert buffer[:]["x"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert buffer["x"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(IndexError, match="out of range for 6 items"):
        buffer[6]
    assert buffer.writer.state_dict()["cursor"] == 6  # reading wrote nothing


def test_getitem_of_a_plain_tensor_buffer():
    buffer = ReplayBuffer(storage=LazyTensorStorage(10))
    buffer.extend(torch.arange(5.0))
    assert buffer[1:3].tolist() == [1.0, 2.0]
    assert buffer[-1].item() == 4.0


def _snapshot(buffer):
    n = len(buffer)
    return (
        n,
        buffer.storage.get(torch.arange(n))["x"].clone() if n else None,
        buffer.writer.state_dict(),
        buffer.sampler._tree.clone(),
    )


def _same(a, b):
    return a[0] == b[0] and torch.equal(a[1], b[1]) and a[2] == b[2] and torch.equal(a[3], b[3])


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
@pytest.mark.parametrize("memmap", [False, True])
def test_loads_of_a_damaged_checkpoint_restores_nothing(tmp_path, memmap, damage):
    # loads used to raise a bare UnpicklingError with the storage already replaced and the
    # cursor not: now every file is read before anything is restored. A byte changed in the
    # middle of a file loaded as it was: buffer.json and the storage list every data file
    # with its size and CRC-32
    def make(folder):
        storage = LazyMemmapStorage(6, scratch_dir=folder) if memmap else LazyTensorStorage(6)
        return ReplayBuffer(storage=storage, sampler=PrioritizedSampler(6, 0.6, 0.4))

    source = make(tmp_path / "a")
    source.extend(td(5, start=10))
    source.update_priority(torch.tensor([1, 3]), torch.tensor([5.0, 0.1]))
    source.dumps(tmp_path / "ckpt")
    target = make(tmp_path / "b")
    target.extend(td(3))
    target.update_priority(torch.tensor([0]), torch.tensor([2.0]))
    before = _snapshot(target)

    storage_files = (
        ["storage/rl_buffers_storage.json", "storage/x.memmap"]
        if memmap
        else ["storage/storage.pt"]
    )
    for name in ["sampler.pt", "writer.pt", "transform.pt", "buffer.json", *storage_files]:
        file = tmp_path / "ckpt" / name
        intact = file.read_bytes()
        middle = len(intact) // 2
        if damage == "truncated":
            file.write_bytes(intact[:middle])  # as a full disk leaves it
        elif file.suffix == ".json":
            continue  # (the records that hold the file lists: a changed byte is not caught)
        else:
            file.write_bytes(
                intact[:middle] + bytes([intact[middle] ^ 0x5A]) + intact[middle + 1 :]
            )
        with pytest.raises(ValueError, match=rf"{file.name}.*(damaged|cannot be read)") as error:
            target.loads(tmp_path / "ckpt")
        assert "Nothing was restored" in str(error.value)
        assert _same(_snapshot(target), before), name
        file.write_bytes(intact)
    target.loads(tmp_path / "ckpt")  # intact again: restored whole
    assert _same(_snapshot(target), _snapshot(source))


def test_loads_of_a_checkpoint_that_does_not_fit_restores_nothing(tmp_path):
    # the storage refuses the saved data (another item layout) while loads reads the
    # checkpoint, before the sampler and the writer are touched
    source = ReplayBuffer(storage=LazyTensorStorage(6), sampler=PrioritizedSampler(6, 0.6, 0.4))
    source.extend(TensorDict({"x": torch.zeros(4, 2)}, [4]))
    source.dumps(tmp_path / "ckpt")
    target = ReplayBuffer(storage=LazyTensorStorage(6), sampler=PrioritizedSampler(6, 0.6, 0.4))
    target.extend(td(3))
    target.update_priority(torch.tensor([0]), torch.tensor([2.0]))
    before = _snapshot(target)
    with pytest.raises(
        ValueError, match=r"keys differ .*missing \['twice'\].*Nothing was restored"
    ):
        target.loads(tmp_path / "ckpt")
    assert _same(_snapshot(target), before)


def _generator_buffers():
    from rl_buffers import SliceSampler

    def trajectories(n):
        return TensorDict({"x": torch.arange(float(n)), "episode": torch.arange(n) // 10}, [n])

    return {
        "random": lambda g: ReplayBuffer(storage=LazyTensorStorage(50), generator=g),
        "without_replacement": lambda g: ReplayBuffer(
            storage=LazyTensorStorage(50), sampler=SamplerWithoutReplacement(), generator=g
        ),
        "prioritized": lambda g: ReplayBuffer(
            storage=LazyTensorStorage(50), sampler=PrioritizedSampler(50, 0.7, 0.5), generator=g
        ),
        "slice": lambda g: ReplayBuffer(
            storage=LazyTensorStorage(50),
            sampler=SliceSampler(slice_len=4, traj_key="episode"),
            generator=g,
        ),
    }, trajectories


@pytest.mark.parametrize("kind", ["random", "without_replacement", "prioritized", "slice"])
def test_generator_makes_draws_reproducible_and_leaves_the_global_generator_alone(kind):
    # TorchRL's ReplayBuffer(generator=): a seeded generator reproduces the draws whatever
    # happens to torch's global generator in between; the global state is not consumed
    makers, trajectories = _generator_buffers()
    draws = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        buffer = makers[kind](torch.Generator().manual_seed(7))
        buffer.extend(trajectories(50))
        global_state = torch.get_rng_state()
        draws.append([buffer.sample(8)["x"] for _ in range(3)])
        assert torch.equal(torch.get_rng_state(), global_state)
    for first, second in zip(*draws):
        assert torch.equal(first, second)
    other = makers[kind](torch.Generator().manual_seed(8))
    other.extend(trajectories(50))
    assert not all(torch.equal(a, other.sample(8)["x"]) for a in draws[0])


def test_set_rng_and_the_generator_state_in_state_dict_and_checkpoints(tmp_path):
    buffer = ReplayBuffer(storage=LazyTensorStorage(50))
    buffer.extend(td(50))
    buffer.set_rng(torch.Generator().manual_seed(3))
    buffer.sample(4)
    state = buffer.state_dict()
    buffer.dumps(tmp_path / "ckpt")
    expected = [buffer.sample(4)["x"] for _ in range(3)]
    for restore in ("state_dict", "loads"):
        other = ReplayBuffer(storage=LazyTensorStorage(50))
        if restore == "state_dict":
            other.load_state_dict(state)
        else:
            other.loads(tmp_path / "ckpt")
        for batch in expected:  # the saved generator state goes on where it was
            assert torch.equal(other.sample(4)["x"], batch)
    with pytest.raises(TypeError, match=r"expected generator to be a torch\.Generator, got int"):
        ReplayBuffer(generator=3)


@pytest.mark.parametrize("storage", ["tensor", "memmap", "ndim2"])
@pytest.mark.parametrize(
    "index", [[], torch.tensor([]), torch.tensor([], dtype=torch.long)], ids=str
)
def test_an_empty_index_gives_an_empty_batch(tmp_path, storage, index):
    # rb[[]] raised "TypeError: expected integer positions, got torch.float32"
    if storage == "ndim2":
        buffer = ReplayBuffer(storage=LazyTensorStorage(12, ndim=2))
        buffer.extend(TensorDict({"x": torch.ones(2, 3, 4), "y": torch.zeros(2, 3)}, [2, 3]))
    else:
        made = (
            LazyTensorStorage(8)
            if storage == "tensor"
            else LazyMemmapStorage(8, scratch_dir=tmp_path)
        )
        buffer = ReplayBuffer(storage=made)
        buffer.extend(TensorDict({"x": torch.ones(5, 4), "y": torch.zeros(5)}, [5]))
    batch = buffer[index]
    assert batch.batch_size == (0,)
    assert batch["x"].shape == (0, 4)
    assert batch["y"].shape == (0,)
    assert batch["x"].dtype == torch.float32


def test_an_empty_index_of_list_storages_gives_no_item():
    buffer = ReplayBuffer(storage=ListStorage(4))
    buffer.extend(["a", "b"])
    assert buffer[[]] == []
    assert buffer[torch.tensor([])] == []
    with pytest.raises(TypeError, match=r"expected integer positions, got torch\.float32"):
        buffer[[0.0]]


def test_a_drop_last_sampler_needs_the_buffer_batch_size():
    # TorchRL refuses it at construction: an epoch's last batch is dropped by a fixed size.
    with pytest.raises(
        ValueError, match="Samplers with drop_last=True must work with a predictable batch-size"
    ):
        ReplayBuffer(
            storage=LazyTensorStorage(8), sampler=SamplerWithoutReplacement(drop_last=True)
        )
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(8),
        sampler=SamplerWithoutReplacement(drop_last=True),
        batch_size=3,
    )
    buffer.extend(torch.arange(7.0))
    assert buffer.sample().shape == (3,)


@pytest.mark.parametrize(
    ("storage", "collate_fn"),
    [(lambda: LazyTensorStorage(12), None), (lambda: ListStorage(12), torch.stack)],
    ids=["lazy_tensor", "list"],
)
def test_setitem_overwrites_items_in_place(storage, collate_fn):
    buffer = ReplayBuffer(storage=storage(), collate_fn=collate_fn)
    buffer.extend(TensorDict({"a": torch.arange(10)}, [10]))
    buffer[3:5] = TensorDict({"a": torch.tensor([-1, -2])}, [2])
    buffer[torch.tensor([7, 0])] = TensorDict({"a": torch.tensor([-7, -10])}, [2])
    buffer[-1] = TensorDict({"a": torch.tensor(-9)}, [])
    assert buffer[:]["a"].tolist() == [-10, 1, 2, -1, -2, 5, 6, -7, 8, -9]
    assert len(buffer) == 10
    assert buffer.writer._cursor == 10  # the next extend goes on after the last item
    buffer.extend(TensorDict({"a": torch.tensor([10])}, [1]))
    assert buffer[-1]["a"].item() == 10
    with pytest.raises(IndexError):
        buffer[11] = TensorDict({"a": torch.tensor(0)}, [])
    with pytest.raises(TypeError, match="expected positions of whole items, got 'a'"):
        buffer["a"] = torch.zeros(11)
