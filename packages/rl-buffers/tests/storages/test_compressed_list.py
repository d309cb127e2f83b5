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
