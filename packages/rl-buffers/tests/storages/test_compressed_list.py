"""CompressedListStorage: exact round trips, real zstd frames, buffers on top of it."""

from __future__ import annotations

import sys
import zlib

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import CompressedListStorage, ReplayBuffer, TensorDictReplayBuffer

zstandard = pytest.importorskip(
    "zstandard", reason='needs zstandard: pip install "rl-buffers[compress]"'
)


def _frames(n: int, seed: int = 0) -> torch.Tensor:
    """Atari-like uint8 frames: a flat background, a few moving blocks, a little noise."""
    g = torch.Generator().manual_seed(seed)
    frames = torch.full((n, 84, 84), 40, dtype=torch.uint8)
    for i in range(n):
        x, y = (3 * i) % 70, (5 * i) % 70
        frames[i, y : y + 12, x : x + 6] = 200
        frames[i, 70:74, :] = 120
        spots = torch.randint(0, 84, (2, 20), generator=g)
        frames[i, spots[0], spots[1]] = torch.randint(0, 255, (20,), generator=g).to(torch.uint8)
    return frames


def test_tensor_items_round_trip_and_are_real_zstd_frames():
    frames = _frames(8)
    storage = CompressedListStorage(16)
    storage.set(torch.arange(8), frames)
    assert len(storage) == 8
    assert torch.equal(storage.get(3), frames[3])
    got = storage.get(torch.tensor([5, 0, 5]))
    assert all(torch.equal(a, frames[i]) for a, i in zip(got, [5, 0, 5], strict=True))
    # what is stored decompresses with zstandard itself to the frame's raw bytes
    payload, meta = storage._items[2][1]
    raw = zstandard.ZstdDecompressor().decompress(payload.numpy().tobytes())
    assert raw == frames[2].numpy().tobytes()
    assert meta["shape"] == (84, 84)
    assert meta["dtype"] == torch.uint8
    assert storage.bytes() * 5 < frames.numel()


def test_tensordict_items_keep_every_dtype_and_nesting():
    data = TensorDict(
        {
            "pixels": _frames(4),
            "obs": torch.randn(4, 3, dtype=torch.float64),
            "action": torch.tensor([1, -2, 3, 4]),
            "next": {"done": torch.tensor([[False], [True], [False], [True]])},
        },
        [4],
    )
    storage = CompressedListStorage(4)
    storage.set(torch.arange(4), data)
    for i in range(4):
        item = storage.get(i)
        assert item.batch_size == torch.Size([])
        for key in data.keys(True, True):
            assert item[key].dtype == data[key].dtype
            assert torch.equal(item[key], data[key][i])


def test_replay_buffer_on_compressed_storage_wraps_and_samples():
    frames = _frames(10)
    data = TensorDict({"pixels": frames, "step": torch.arange(10)}, [10])
    buffer = TensorDictReplayBuffer(storage=CompressedListStorage(6), batch_size=5)
    buffer.extend(data[:6])
    buffer.extend(data[6:])  # overwrites slots 0..3
    assert len(buffer) == 6
    batch = buffer.sample()
    assert batch["pixels"].shape == (5, 84, 84)
    for pixels, step in zip(batch["pixels"], batch["step"], strict=True):
        assert torch.equal(pixels, frames[int(step)])
    assert sorted(int(buffer.storage.get(i)["step"]) for i in range(6)) == [4, 5, 6, 7, 8, 9]


def test_plain_tensors_and_objects_in_a_buffer(tmp_path):
    buffer = ReplayBuffer(storage=CompressedListStorage(8), batch_size=4)
    buffer.extend(_frames(5))
    assert buffer.sample().shape == (4, 84, 84)
    buffer.dumps(tmp_path / "rb")
    other = ReplayBuffer(storage=CompressedListStorage(8), batch_size=4)
    other.loads(tmp_path / "rb")
    assert all(torch.equal(other.storage.get(i), _frames(5)[i]) for i in range(5))
    objects = CompressedListStorage(2)
    objects.set(torch.tensor([0]), ["text"])
    assert objects.get(0) == "text"


def test_compression_level_and_custom_functions():
    frames = _frames(6)
    fast = CompressedListStorage(6, compression_level=1)
    strong = CompressedListStorage(6, compression_level=19)
    fast.set(torch.arange(6), frames)
    strong.set(torch.arange(6), frames)
    assert strong.bytes() <= fast.bytes()

    def pack(t):
        return torch.frombuffer(bytearray(zlib.compress(t.numpy().tobytes())), dtype=torch.uint8)

    def unpack(c, meta):
        raw = bytearray(zlib.decompress(c.numpy().tobytes()))
        return torch.frombuffer(raw, dtype=meta["dtype"]).reshape(meta["shape"])

    custom = CompressedListStorage(6, compression_fn=pack, decompression_fn=unpack)
    custom.set(torch.arange(6), frames)
    assert torch.equal(custom.get(4), frames[4])
    assert zlib.decompress(custom._items[4][1][0].numpy().tobytes()) == frames[4].numpy().tobytes()


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"compression_level to be an int in \[1, 22\], got 0"):
        CompressedListStorage(4, compression_level=0)
    with pytest.raises(ValueError, match="both compression_fn and decompression_fn or neither"):
        CompressedListStorage(4, compression_fn=lambda t: t)


def test_missing_zstandard_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)  # makes `import zstandard` fail
    with pytest.raises(ImportError, match=r'pip install "rl-buffers\[compress\]"'):
        CompressedListStorage(4)


def test_a_checkpoint_with_a_byte_flipped_in_the_middle_is_refused(tmp_path):
    # the damaged storage.pt loaded and served altered frames
    buffer = ReplayBuffer(storage=CompressedListStorage(8), batch_size=4)
    buffer.extend(_frames(5))
    buffer.dumps(tmp_path / "rb")
    file = tmp_path / "rb" / "storage" / "storage.pt"
    raw = bytearray(file.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    file.write_bytes(bytes(raw))
    other = ReplayBuffer(storage=CompressedListStorage(8), batch_size=4)
    other.extend(_frames(2, seed=1))
    with pytest.raises(ValueError, match=r"storage\.pt is damaged: expected CRC-32 0x[0-9a-f]{8}"):
        other.loads(tmp_path / "rb")
    assert len(other) == 2
    assert torch.equal(other.storage.get(1), _frames(2, seed=1)[1])


def test_empty_tensors_are_stored_and_never_poison_the_buffer():
    # an item of no elements was accepted, after which every read and sample() failed
    buffer = ReplayBuffer(storage=CompressedListStorage(4), batch_size=3)
    buffer.add(torch.zeros(0, 3))
    item = buffer[0]
    assert item.shape == (0, 3)
    assert item.dtype == torch.float32
    assert buffer.sample().shape == (3, 0, 3)
    td = TensorDictReplayBuffer(storage=CompressedListStorage(4), batch_size=2)
    td.add(TensorDict({"obs": torch.ones(2), "empty": torch.zeros(2, 0, dtype=torch.int16)}, [2]))
    got = td[0]
    assert got["empty"].shape == (2, 0)
    assert got["empty"].dtype == torch.int16
    assert got["obs"].tolist() == [1.0, 1.0]
    assert td.sample()["empty"].shape == (2, 2, 0)


def test_conjugate_and_negative_views_are_stored_with_their_values():
    # a conjugate view failed with "view is not supported for conjugate view tensors"
    storage = CompressedListStorage(3)
    z = torch.tensor([1 + 2j, -3 - 4j], dtype=torch.complex64)
    storage.set(torch.arange(3), [z.conj(), torch.conj_physical(z).imag.neg(), z.conj().neg()])
    assert storage.get(0).tolist() == [1 - 2j, -3 + 4j]
    assert storage.get(1).tolist() == [2.0, -4.0]
    assert storage.get(2).tolist() == [-1 + 2j, 3 - 4j]
    assert not storage.get(0).is_conj()
