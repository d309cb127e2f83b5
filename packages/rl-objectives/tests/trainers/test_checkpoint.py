import json
import random

import numpy as np
import pytest
import torch

from rl_objectives.trainers import Checkpoint, CheckpointError, CheckpointOptions, GlobalRNGState


class Dumpable:
    """A component saved through dumps/loads (as rl-buffers' replay buffers are)."""

    def __init__(self, items=None):
        self.items = list(items or [])

    def dumps(self, path):
        path.mkdir(parents=True, exist_ok=True)
        (path / "items.json").write_text(json.dumps(self.items))

    def loads(self, path):
        self.items = json.loads((path / "items.json").read_text())


def parts(seed):
    torch.manual_seed(seed)
    net = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(net.parameters(), lr=0.1)
    net(torch.randn(4, 3)).sum().backward()
    opt.step()
    return net, opt


def test_round_trip_of_state_and_dump_components(tmp_path):
    net, opt = parts(0)
    store = Dumpable([1, 2, 3])
    path = Checkpoint(net=net, opt=opt, store=store).save(tmp_path / "ckpt", metadata={"step": 7})
    assert sorted(p.name for p in path.iterdir()) == ["manifest.json", "net.pt", "opt.pt", "store"]
    net2, opt2 = parts(1)
    store2 = Dumpable()
    meta = Checkpoint(net=net2, opt=opt2, store=store2).load(path)
    assert meta == {"step": 7}
    assert torch.equal(net.weight, net2.weight)
    assert opt2.state_dict()["state"][0]["step"] == opt.state_dict()["state"][0]["step"]
    assert store2.items == [1, 2, 3]


def test_a_damaged_file_is_refused_by_name_and_nothing_is_loaded(tmp_path):
    net, _ = parts(0)
    path = Checkpoint(net=net, store=Dumpable([1])).save(tmp_path / "ckpt")
    other, _ = parts(1)
    before = other.weight.detach().clone()
    data = bytearray((path / "net.pt").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (path / "net.pt").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"ckpt/net\.pt is damaged"):
        Checkpoint(net=other, store=Dumpable()).load(path)
    assert torch.equal(other.weight, before)
    path = Checkpoint(net=net, store=Dumpable([1])).save(tmp_path / "ckpt")
    (path / "store" / "items.json").unlink()
    with pytest.raises(CheckpointError, match=r"store/items\.json is missing"):
        Checkpoint.verify(path)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"manifest\.json is damaged \(not JSON"):
        Checkpoint(net=other).load(path)
    (path / "manifest.json").unlink()
    with pytest.raises(CheckpointError, match=r"manifest\.json is missing: .* is not a complete"):
        Checkpoint(net=other).load(path)


def test_a_save_replaces_the_previous_checkpoint_whole(tmp_path):
    net, _ = parts(0)
    Checkpoint(net=net, store=Dumpable([1])).save(tmp_path / "ckpt")
    Checkpoint(net=net).save(tmp_path / "ckpt")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["manifest.json", "net.pt"]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]  # no temporary left


def test_missing_components_and_options(tmp_path):
    net, opt = parts(0)
    path = Checkpoint(net=net).save(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match=r"lists no component \['opt'\]"):
        Checkpoint(net=net, opt=opt).load(path)
    Checkpoint(net=net, opt=opt, options={"opt": CheckpointOptions(optional=True)}).load(path)
    with pytest.raises(KeyError, match=r"unknown components \['x'\]"):
        Checkpoint(net=net).load(path, components=["x"])
    with pytest.raises(TypeError, match=r"component 'bad' \(int\) has neither"):
        Checkpoint(bad=3)
    with pytest.raises(ValueError, match=r"options for unknown components \['other'\]"):
        Checkpoint(net=net, options={"other": CheckpointOptions()})


def test_global_rng_state_restores_torch_numpy_and_python(tmp_path):
    rng = GlobalRNGState()
    path = Checkpoint(rng=rng).save(tmp_path / "ckpt")
    draws = (torch.rand(3), np.random.rand(3), random.random())  # noqa: NPY002
    Checkpoint(rng=rng).load(path)
    again = (torch.rand(3), np.random.rand(3), random.random())  # noqa: NPY002
    assert torch.equal(draws[0], again[0])
    assert np.array_equal(draws[1], again[1])
    assert draws[2] == again[2]
