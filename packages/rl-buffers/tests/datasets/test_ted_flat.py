"""TED2Flat / Flat2TED: the compact flat layout and its exact inverse."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import Flat2TED, TED2Flat


def test_flat_keeps_only_the_next_rows_that_no_root_row_repeats(episodes):
    flat = TED2Flat()(episodes)
    assert flat.batch_size == torch.Size([])
    # rows 2 (terminal 13 vs reset 20) and 4 (the last row) are not repeated at the root
    assert flat["kept"].tolist() == [False, False, True, False, True]
    assert flat["next_kept", "next", "observation"].squeeze(-1).tolist() == [13.0, 22.0]
    assert flat["next_kept", "next", "pixels", "a"][:, 0].tolist() == [13, 22]
    # done and reward rows are never compacted
    assert flat["next", "reward"].shape == (5, 1)
    assert ("next", "observation") not in flat.keys(include_nested=True)


def test_round_trip_is_exact(tmp_path, episodes):
    ted = episodes
    flat = TED2Flat()(ted, path=tmp_path / "flat")
    assert (Flat2TED()(flat) == ted).all()
    on_disk = TensorDict.load_memmap(tmp_path / "flat")
    assert (Flat2TED()(on_disk) == ted).all()


def test_shift_flattens_a_wrapped_storage_oldest_first_and_rolls_back(episodes):
    ted = episodes
    stored = ted.roll(2, 0)  # a full circular storage whose oldest row is at 2
    to_flat = TED2Flat()
    to_flat.shift, to_flat.is_full = 2, True
    flat = to_flat(stored)
    assert flat["kept"].tolist() == [False, False, True, False, True]  # oldest first
    assert flat["shift"].item() == 2
    assert flat["is_full"].item() is True
    out = stored.clone().zero_()
    assert (Flat2TED()(flat, out=out) == stored).all()


def test_bad_input_names_what_is_missing(episodes):
    with pytest.raises(KeyError, match=r"expected a done entry at \('next', 'done'\)"):
        TED2Flat()(TensorDict({"observation": torch.zeros(3)}, [3]))
    with pytest.raises(TypeError, match="expected TED rows, a TensorDict with one batch dim"):
        TED2Flat()(torch.zeros(3))
    with pytest.raises(KeyError, match=r"expected TED2Flat's layout.*missing \['next_kept'"):
        Flat2TED()(episodes)
