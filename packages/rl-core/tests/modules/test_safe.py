import pytest
import torch
from tensordict import TensorDict

from rl_core.modules import Actor, SafeModule, SafeSequential
from rl_core.specs import Bounded, Composite, OneHot, Unbounded


def test_safe_module_projects_out_of_spec_outputs():
    spec = Bounded(-1.0, 1.0, shape=(3,))
    module = SafeModule(torch.nn.Identity(), ["observation"], ["action"], spec=spec, safe=True)
    td = module(TensorDict(observation=torch.tensor([[2.0, -0.25, -7.0]]), batch_size=[1]))
    assert td["action"].tolist() == [[1.0, -0.25, -1.0]]  # clamp(x, -1, 1) by hand
    unsafe = SafeModule(torch.nn.Identity(), ["observation"], ["action"], spec=spec)
    assert unsafe(TensorDict(observation=torch.tensor([2.0])))["action"].tolist() == [2.0]
    assert isinstance(module.spec, Composite)
    assert module.spec["action"] == spec


def test_safe_module_one_hot_and_partial_specs():
    spec = Composite(action=OneHot(3))
    module = SafeModule(
        lambda x: (x, x.sum(-1, keepdim=True)), ["logits"], ["action", "total"], spec, safe=True
    )
    td = module(TensorDict(logits=torch.tensor([0.2, 0.9, 0.1])))
    assert td["action"].tolist() == [False, True, False]  # the one-hot of the argmax
    assert td["total"].tolist() == pytest.approx([1.2])  # no spec: left as it is
    assert module.spec["total"] is None


def test_safe_module_errors():
    with pytest.raises(ValueError, match=r"SafeModule: safe=True projects .* got spec=None"):
        SafeModule(torch.nn.Identity(), ["x"], ["y"], safe=True)
    with pytest.raises(ValueError, match=r"a single \(leaf\) spec describes one output"):
        SafeModule(torch.nn.Identity(), ["x"], ["y", "z"], spec=Unbounded())
    with pytest.raises(ValueError, match=r"the spec has an entry 'w' that is not an output"):
        SafeModule(torch.nn.Identity(), ["x"], ["y"], spec=Composite(w=Unbounded()))


def test_safe_sequential_gathers_the_specs():
    hidden = SafeModule(torch.nn.Linear(3, 4), ["observation"], ["hidden"])
    head = Actor(lambda h: 10 * h[..., :2], ["hidden"], spec=Bounded(-1.0, 1.0, shape=(2,)))
    projected = SafeModule(
        torch.nn.Identity(),
        ["action"],
        ["action"],
        spec=Bounded(-0.5, 0.5, shape=(2,)),
        safe=True,
    )
    seq = SafeSequential(hidden, head, projected)
    assert seq.spec["hidden"] is None
    assert seq.spec["action"] == Bounded(-0.5, 0.5, shape=(2,))  # the later spec wins
    td = seq(TensorDict(observation=torch.randn(8, 3), batch_size=[8]))
    assert bool((td["action"].abs() <= 0.5).all())
