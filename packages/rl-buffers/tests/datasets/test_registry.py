"""load_dataset / register_dataset."""

from __future__ import annotations

import numpy as np
import pytest

from rl_buffers.datasets import D4RLExperienceReplay, load_dataset, register_dataset, registry


@pytest.fixture(autouse=True)
def _restore_registry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def test_builtin_source_builds_the_dataset(tmp_path):
    h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')
    with h5py.File(tmp_path / "toy-v0.hdf5", "w") as handle:
        handle["observations"] = np.zeros((4, 2), np.float32)
        handle["actions"] = np.zeros((4, 1), np.float32)
        handle["rewards"] = np.zeros(4, np.float32)
        handle["terminals"] = np.zeros(4, bool)
    data = load_dataset("D4RL:toy-v0", root=tmp_path, download=False, batch_size=2)
    assert isinstance(data, D4RLExperienceReplay)
    assert len(data) == 3


def test_registration_and_errors():
    register_dataset("mine", "builtins:list")  # resolved at first use
    assert load_dataset("mine:ab") == ["a", "b"]
    with pytest.raises(KeyError, match="'mine' is registered already"):
        register_dataset("mine", dict)
    register_dataset("mine", lambda name, **kw: (name, kw), replace=True)
    assert load_dataset("mine:a:b", k=1) == ("a:b", {"k": 1})
    with pytest.raises(ValueError, match=r"unknown dataset source 'nope'.*known: \['atari_dqn'"):
        load_dataset("nope:x")
    with pytest.raises(ValueError, match="expected '<source>:<dataset id>'"):
        load_dataset("hopper-medium-v2")
    with pytest.raises(ValueError, match="expected a 'module:attribute' string"):
        register_dataset("bad", "nomodule")
    with pytest.raises(TypeError, match="expected dataset to be callable"):
        register_dataset("bad", 3)
