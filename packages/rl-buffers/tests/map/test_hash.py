import pytest
import torch

from rl_buffers.map import BinaryToDecimal, RandomProjectionHash, SipHash, siphash24

# SipHash-2-4 reference outputs (Aumasson & Bernstein, vectors.h): key 00..0f, message
# 00 01 .. (n-1), as little-endian 64-bit values.
VECTORS = {
    0: "310e0edd47db6f72",
    1: "fd67dc93c539f874",
    7: "37d1018bf50002ab",
    8: "6224939a79f5f593",
    15: "e545be4961ca29a1",
}


@pytest.mark.parametrize("length", sorted(VECTORS))
def test_siphash24_matches_the_reference_vectors(length):
    msg = torch.arange(length, dtype=torch.uint8)[None]
    got = siphash24(msg).item() & (2**64 - 1)
    assert got.to_bytes(8, "little").hex() == VECTORS[length]


def test_siphash_rows_are_stable_and_distinct():
    x = torch.tensor([[0.1, 0.2], [0.3, 0.4], [0.1, 0.2]])
    h = SipHash()(x)
    assert h.dtype == torch.int64
    assert h.shape == (3,)
    assert h[0] == h[2]
    assert h[0] != h[1]
    assert torch.equal(h, SipHash()(x.clone()))  # no per-process salt
    assert SipHash(key=bytes(16))(x)[0] != h[0]
    assert SipHash(as_tensor=False)(x)[0] == x[0].numpy().tobytes()
    assert SipHash()(x.reshape(3, 1, 2)).shape == (3, 1)


def test_siphash_refuses_bad_input():
    with pytest.raises(ValueError, match="SipHash: expected key to be 16 bytes"):
        SipHash(key=b"short")
    with pytest.raises(ValueError, match="expected a tensor with a feature dim"):
        SipHash()(torch.tensor(1.0))
    with pytest.raises(TypeError, match="siphash24: expected data to be a \\(B, L\\) uint8"):
        siphash24(torch.zeros(2, 3))


def test_random_projection_hash_saves_its_projection():
    torch.manual_seed(0)
    h = RandomProjectionHash(n_components=8)
    x = torch.randn(5, 64)
    keys = h(x)
    assert h.transform.shape == (64, 8)
    assert h.transform.dtype == torch.bfloat16
    restored = RandomProjectionHash(n_components=8)
    restored.load_state_dict(h.state_dict())
    assert torch.equal(restored(x), keys)
    with pytest.raises(ValueError, match="fitted on 64 features, got 3"):
        h(torch.randn(2, 3))
    with pytest.raises(ValueError, match="n_components to be a positive int, got 0"):
        RandomProjectionHash(n_components=0)


def test_binary_to_decimal_by_hand():
    b2d = BinaryToDecimal(num_bits=3, device="cpu", dtype=torch.int64)
    # 101 = 5, 011 = 3 -> 8 ; 111 = 7, 000 = 0 -> 7
    x = torch.tensor([[1, 0, 1, 0, 1, 1], [1, 1, 1, 0, 0, 0]])
    assert b2d(x).tolist() == [8, 7]
    with pytest.raises(ValueError, match="multiple of num_bits=3, got 4"):
        b2d(torch.zeros(2, 4))
