"""TanhModule (bounds from arguments or specs, by hand) and VmapModule (vmap and its loop
agree with a slice-by-slice computation)."""

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core import Bounded, Composite, Unbounded
from rl_objectives.modules.tanh_module import TanhModule
from rl_objectives.modules.vmap_module import VmapModule


def test_tanh_module_maps_into_the_spec_bounds_by_hand():
    spec = Bounded(low=torch.tensor([-2.0, 0.0]), high=torch.tensor([2.0, 1.0]), shape=(2,))
    m = TanhModule(["param"], ["action"], spec=spec)
    x = torch.tensor([[0.0, 0.0], [math.atanh(0.5), math.atanh(0.5)]])
    out = m(TensorDict(param=x, batch_size=[2]))["action"]
    # low + (high - low) * (tanh(x) + 1) / 2: tanh 0 -> the middle, tanh 0.5 -> 3/4 of the way
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.5], [1.0, 0.75]]))
    plain = TanhModule(["x"])(TensorDict(x=torch.tensor([0.3])))
    torch.testing.assert_close(plain["x"], torch.tanh(torch.tensor([0.3])))


def test_tanh_module_composite_spec_and_clamp():
    spec = Composite(
        a=Bounded(low=-1.0, high=3.0, shape=(1,)), b=Bounded(low=0.0, high=10.0, shape=(1,))
    )
    m = TanhModule(["x", "y"], ["a", "b"], spec=spec, clamp=True)
    td = m(TensorDict(x=torch.tensor([0.0]), y=torch.tensor([100.0])))
    assert td["a"].item() == pytest.approx(1.0)
    assert 9.99 < td["b"].item() < 10.0  # clamped: the bound itself is never reached
    assert (
        TanhModule(["y"], spec=spec["b"])(TensorDict(y=torch.tensor([100.0])))["y"].item() == 10.0
    )


def test_tanh_module_errors():
    with pytest.raises(
        ValueError, match=r"high must be >= low for 'x', got low=1\.0 and high=0\.0"
    ):
        TanhModule(["x"], low=1.0, high=0.0)
    with pytest.raises(ValueError, match=r"low=\[-3\.0\] does not match the spec of 'x'"):
        TanhModule(["x"], spec=Bounded(low=-1.0, high=1.0, shape=(1,)), low=[-3.0])
    with pytest.raises(TypeError, match="the spec of 'x' must be bounded"):
        TanhModule(["x"], spec=Unbounded(shape=(1,)))
    with pytest.raises(ValueError, match="expected one out_key per in_key"):
        TanhModule(["x", "y"], ["a"])


def test_vmap_module_matches_a_slice_by_slice_loop():
    net = torch.nn.Linear(3, 2)

    def centred(x):  # made for one batch dim: centres over it
        return net(x) - net(x).mean(0)

    inner = TensorDictModule(centred, in_keys=["x"], out_keys=["y"])
    x = torch.randn(4, 5, 3, generator=torch.Generator().manual_seed(0))
    over_last = torch.stack([centred(x[:, j]) for j in range(5)], 1)  # centred over dim 0
    over_first = torch.stack([centred(x[i]) for i in range(4)], 0)  # centred over dim 1
    assert not torch.allclose(over_last, over_first)
    td = VmapModule(inner)(TensorDict(x=x, batch_size=[4, 5]))  # default: the last batch dim
    assert td.batch_size == (4, 5)
    torch.testing.assert_close(td["y"], over_last)
    first = VmapModule(inner, vmap_dim=0)(TensorDict(x=x, batch_size=[4, 5]))
    torch.testing.assert_close(first["y"], over_first)
    looped = VmapModule(inner, vmap_dim=0, mock=True)(TensorDict(x=x, batch_size=[4, 5]))
    torch.testing.assert_close(looped["y"], over_first)
    with pytest.raises(ValueError, match="no batch dim to map over"):
        VmapModule(inner)(TensorDict(x=torch.zeros(3)))
