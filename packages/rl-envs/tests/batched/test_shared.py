import torch

from rl_envs.batched._shared import RowCopies, SharedBuffers


def _shared():
    templates = {
        "out": [
            torch.zeros(2, 3, 5),
            torch.zeros(2, 3, 1, dtype=torch.bool),
            torch.zeros(2, 3, dtype=torch.int64),
        ]
    }
    return SharedBuffers(templates, {"out": [("a",), ("b",), ("c", "d")]})


def test_shared_buffers_cut_one_block_into_entries():
    shared = _shared()
    a, b, c = shared.leaves("out")
    assert (a.shape, b.dtype, c.shape) == ((2, 3, 5), torch.bool, (2, 3))
    assert all(leaf.is_shared() and leaf.is_contiguous() for leaf in (a, b, c))
    a.fill_(1.5)
    b.fill_(True)
    c.fill_(-7)
    row = shared.leaves("out", 1)
    assert row[0].shape == (3, 5)
    assert row[0].sum().item() == 22.5
    assert bool(row[1].all())
    assert row[2].sum().item() == -21
    # The entries do not overlap.
    assert a.sum().item() == 45.0


def test_row_copies_hand_out_fresh_entries():
    shared = _shared()
    copies = RowCopies(shared.blocks["out"], shared.layouts["out"])
    taken = []
    for step in range(copies.rows + 3):  # past the first block of rows
        for leaf in shared.leaves("out"):
            leaf.fill_(step % 2 if leaf.dtype is torch.bool else step)
        taken.append(copies.take())
    for step, (a, b, c) in enumerate(taken):
        assert torch.equal(a, torch.full((2, 3, 5), float(step)))
        assert torch.equal(b, torch.full((2, 3, 1), bool(step % 2)))
        assert torch.equal(c, torch.full((2, 3), step))
