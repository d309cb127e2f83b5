import pytest
import torch
from tensordict import TensorDict

from rl_objectives import hold_out_net, hold_out_params


def test_hold_out_net_lets_gradients_through_but_not_onto_its_parameters():
    critic = torch.nn.Linear(2, 1)
    critic.bias.requires_grad_(False)  # restored as it was, not to True
    x = torch.ones(1, 2, requires_grad=True)
    with hold_out_net(critic):
        critic(x).sum().backward()
        assert not critic.weight.requires_grad
    assert critic.weight.grad is None
    torch.testing.assert_close(x.grad, critic.weight.detach())
    assert critic.weight.requires_grad
    assert not critic.bias.requires_grad


def test_hold_out_net_as_a_decorator_restores_on_error():
    net = torch.nn.Linear(1, 1)

    @hold_out_net(net)
    def fails():
        assert not net.weight.requires_grad
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fails()
    assert net.weight.requires_grad


def test_hold_out_params_gives_detached_views():
    net = torch.nn.Linear(2, 1)
    with hold_out_params(net.parameters()) as frozen:
        assert all(not p.requires_grad for p in frozen)
        assert frozen[0].data_ptr() == net.weight.data_ptr()
    params = TensorDict.from_module(net)
    with hold_out_params(params) as frozen_td:
        assert not frozen_td["weight"].requires_grad


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match=r"network to be an nn.Module, got list"):
        hold_out_net([])
    with pytest.raises(TypeError, match="a TensorDict or an iterable of tensors, got int"):
        hold_out_params(3)
    with pytest.raises(TypeError, match=r"expected tensors, got \['str'\]"):
        hold_out_params(["w"])
