"""H5Split / H5Combine: a group per trajectory, in memory and in an HDF5 file."""

from __future__ import annotations

import pytest

from rl_buffers import H5Combine, H5Split, Nested2TED, TED2Nested


def test_split_names_one_entry_per_trajectory_and_combines_back(episodes):
    nested = TED2Nested()(episodes)
    split = H5Split()(nested)
    assert sorted(split.keys()) == ["traj_0", "traj_1"]
    assert split["traj_0"].batch_size == (3,)
    assert split["traj_1", "next", "observation"].squeeze(-1).tolist() == [21.0, 22.0]
    assert (Nested2TED()(H5Combine()(split)) == episodes).all()


def test_through_an_hdf5_file(tmp_path, episodes):
    h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')
    path = tmp_path / "episodes.h5"
    H5Split()(TED2Nested()(episodes), path=path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.h5"]  # no temporary left
    with h5py.File(path, "r") as handle:
        assert sorted(handle) == ["traj_0", "traj_1"]
        assert handle["traj_0/next/observation"].shape == (3, 1)
    assert (Nested2TED()(H5Combine()(path)) == episodes).all()


def test_bad_files_and_data_are_named(tmp_path, episodes):
    pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')
    with pytest.raises(FileNotFoundError, match=r"missing\.h5 does not exist"):
        H5Combine()(tmp_path / "missing.h5")
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not an hdf5 file")
    with pytest.raises(ValueError, match=r"junk\.h5 is not a readable HDF5 file"):
        H5Combine()(junk)
    with pytest.raises(ValueError, match="expected H5Split's entries traj_0"):
        H5Combine()(episodes[0])
    with pytest.raises(TypeError, match="expected TED2Nested's output"):
        H5Split()(episodes[0])
