"""Checkpointers of list, compressed-list and ensemble storages: a round trip restores the
items written, a damaged or foreign checkpoint is refused before anything changes."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    CompressedListStorage,
    LazyTensorStorage,
    ListStorage,
    ReplayBuffer,
    StorageEnsemble,
    TensorStorageCheckpointer,
)
from rl_buffers.storages import (
    CompressedListStorageCheckpointer,
    ListStorageCheckpointer,
    StorageEnsembleCheckpointer,
)


def with_checkpointer(storage, checkpointer):
    storage.checkpointer = checkpointer
    return storage


def test_list_storage_round_trip_and_buffer(tmp_path):
    source = with_checkpointer(ListStorage(5), ListStorageCheckpointer())
    items = ["text", {"a": 1}, torch.arange(3), ("x", 2.5)]
    for i, item in enumerate(items):
        source.set(i, item)
    source.dumps(tmp_path / "ckpt")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [
        "items.pt",
        "rl_buffers_checkpoint.json",
    ]
    target = with_checkpointer(ListStorage(5), ListStorageCheckpointer())
    target.set(0, "old")
    target.loads(tmp_path / "ckpt")
    assert len(target) == 4
    assert target.get(0) == "text"
    assert target.get(1) == {"a": 1}
    assert torch.equal(target.get(2), torch.arange(3))
    assert target.get(3) == ("x", 2.5)
    buffer = ReplayBuffer(storage=with_checkpointer(ListStorage(5), ListStorageCheckpointer()))
    buffer.extend(["a", "b", "c"])
    buffer.dumps(tmp_path / "buffer")
    restored = ReplayBuffer(storage=with_checkpointer(ListStorage(5), ListStorageCheckpointer()))
    restored.loads(tmp_path / "buffer")
    assert [restored.storage.get(i) for i in range(3)] == ["a", "b", "c"]


def test_compressed_records_are_saved_as_they_are(tmp_path):
    pytest.importorskip("zstandard", reason='pip install "rl-buffers[compress]"')
    frames = torch.arange(2 * 16 * 16).reshape(2, 16, 16).to(torch.uint8)
    source = with_checkpointer(CompressedListStorage(4), CompressedListStorageCheckpointer())
    source.set(torch.tensor([0, 1]), frames)
    source.set(2, TensorDict(obs=frames[0].float(), batch_size=[]))
    source.dumps(tmp_path / "ckpt")
    saved = torch.load(tmp_path / "ckpt" / "items.pt", weights_only=False)
    kind, (compressed, meta) = saved["items"][0]
    assert kind == "tensor"
    assert compressed.dtype == torch.uint8
    assert meta["shape"] == (16, 16)  # stored compressed, with its metadata
    target = with_checkpointer(CompressedListStorage(4), CompressedListStorageCheckpointer())
    target.loads(tmp_path / "ckpt")
    assert torch.equal(target.get(1), frames[1])
    assert torch.equal(target.get(2)["obs"], frames[0].float())
    assert target.bytes() == source.bytes()
    custom = CompressedListStorage(
        4, compression_fn=lambda t: t.view(torch.uint8).flatten(),
        decompression_fn=lambda c, m: c.view(m["dtype"]).reshape(m["shape"]),
    )  # fmt: skip
    custom.checkpointer = CompressedListStorageCheckpointer()
    with pytest.raises(ValueError, match=r"written with decompression_fn=.*this storage has"):
        custom.loads(tmp_path / "ckpt")
    assert len(custom) == 0


def test_ensemble_saves_each_storage_with_its_own_checkpointer(tmp_path):
    def ensemble():
        tensors = with_checkpointer(LazyTensorStorage(4), TensorStorageCheckpointer())
        lists = with_checkpointer(ListStorage(3), ListStorageCheckpointer())
        return with_checkpointer(StorageEnsemble(tensors, lists), StorageEnsembleCheckpointer())

    source = ensemble()
    source[0].set(torch.arange(2), TensorDict(obs=torch.tensor([1.0, 2.0]), batch_size=[2]))
    source[1].set(0, "hello")
    source.dumps(tmp_path / "ckpt")
    assert (tmp_path / "ckpt" / "storage_0" / "rl_buffers_checkpoint.json").exists()
    assert (tmp_path / "ckpt" / "storage_1" / "items.pt").exists()
    target = ensemble()
    target.loads(tmp_path / "ckpt")
    assert target[0][:]["obs"].tolist() == [1.0, 2.0]
    assert target[1].get(0) == "hello"
    # a damaged part is refused before any storage is restored
    (tmp_path / "ckpt" / "storage_1" / "items.pt").write_bytes(b"damaged")
    fresh = ensemble()
    with pytest.raises(ValueError, match=r"storage_1"):
        fresh.loads(tmp_path / "ckpt")
    assert len(fresh[0]) == 0
    other = with_checkpointer(
        StorageEnsemble(with_checkpointer(ListStorage(3), ListStorageCheckpointer())),
        StorageEnsembleCheckpointer(),
    )
    with pytest.raises(ValueError, match=r"holds the storages \['LazyTensorStorage', 'List"):
        other.loads(tmp_path / "ckpt")


def test_bad_input_is_named(tmp_path):
    with pytest.raises(TypeError, match="ListStorageCheckpointer cannot save a LazyTensorStorage"):
        LazyTensorStorage(3).checkpointer = ListStorageCheckpointer()
    with pytest.raises(TypeError, match="ListStorageCheckpointer cannot save a CompressedList"):
        CompressedListStorage(
            3, compression_fn=bytes, decompression_fn=bytes
        ).checkpointer = ListStorageCheckpointer()
    storage = with_checkpointer(ListStorage(2), ListStorageCheckpointer())
    with pytest.raises(FileNotFoundError, match=r"absent holds no complete checkpoint"):
        storage.loads(tmp_path / "absent")
    big = with_checkpointer(ListStorage(5), ListStorageCheckpointer())
    for i in range(3):
        big.set(i, i)
    big.dumps(tmp_path / "big")
    storage.set(0, "kept")
    with pytest.raises(ValueError, match=r"holds 3 items; this storage's max_size is 2"):
        storage.loads(tmp_path / "big")
    assert storage.get(0) == "kept"
    items = tmp_path / "big" / "items.pt"
    items.write_bytes(items.read_bytes()[:20])
    with pytest.raises(ValueError, match=r"items\.pt"):
        with_checkpointer(ListStorage(5), ListStorageCheckpointer()).loads(tmp_path / "big")
    tensor = with_checkpointer(LazyTensorStorage(3), TensorStorageCheckpointer())
    tensor.set(torch.arange(1), torch.zeros(1))
    tensor.dumps(tmp_path / "tensor")
    with pytest.raises(ValueError, match=r"was written by TensorStorageCheckpointer"):
        with_checkpointer(ListStorage(5), ListStorageCheckpointer()).loads(tmp_path / "tensor")
