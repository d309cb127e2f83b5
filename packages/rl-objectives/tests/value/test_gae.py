import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from _data import trajectories, value_net

from rl_objectives.value import GAE
from rl_objectives.value import functional as F


def expected(td, net, gamma, lmbda, time_dim):
    with torch.no_grad():
        v = net.module(td["observation"])
        nv = net.module(td["next", "observation"])
    return F.generalized_advantage_estimate(
        gamma,
        lmbda,
        v,
        nv,
        td["next", "reward"],
        td["next", "done"],
        td["next", "terminated"],
        time_dim=time_dim,
    )


@pytest.mark.parametrize("shifted", [False, True])
@pytest.mark.parametrize("vectorized", [False, True])
def test_gae_writes_advantage_and_target(shifted, vectorized):
    net = value_net()
    td = trajectories()
    GAE(0.9, 0.8, net, shifted=shifted, vectorized=vectorized)(td)
    adv, target = expected(td, net, 0.9, 0.8, 1)
    torch.testing.assert_close(td["advantage"], adv)
    torch.testing.assert_close(td["value_target"], target)
    assert not td["advantage"].requires_grad


def test_gae_time_dim_first():
    net = value_net()
    td = trajectories(batch=(9, 2))
    GAE(0.9, 0.8, net, time_dim=0)(td)
    adv, _ = expected(td, net, 0.9, 0.8, 0)
    torch.testing.assert_close(td["advantage"], adv)


def test_gae_average_and_differentiable():
    net = value_net()
    td = trajectories()
    td["observation"].requires_grad_(True)
    td["next", "observation"].requires_grad_(True)
    GAE(0.9, 0.8, net, average_gae=True, differentiable=True)(td)
    assert abs(td["advantage"].mean().item()) < 1e-5
    assert abs(td["advantage"].std().item() - 1) < 1e-4
    # differentiable in the network's inputs, as TorchRL; the network itself is held out
    assert td["value_target"].requires_grad
    obs_grads = torch.autograd.grad(
        td["value_target"].sum(),
        [td["observation"], td["next", "observation"]],
        retain_graph=True,
    )
    assert all(g.abs().sum() > 0 for g in obs_grads)
    param_grads = torch.autograd.grad(
        td["value_target"].sum(), list(net.parameters()), allow_unused=True
    )
    assert all(g is None for g in param_grads)


@pytest.mark.parametrize("given_params", [False, True])
def test_gae_forward_matches_the_reference_when_differentiable(given_params):
    # the same numbers as without gradients, and no gradient to the parameters given either
    net = value_net()
    td = trajectories()
    params = TensorDict.from_module(net).clone() if given_params else None
    kwargs = {"params": params} if given_params else {}
    GAE(0.9, 0.8, net, differentiable=True)(td, **kwargs)
    adv, target = expected(td, net, 0.9, 0.8, 1)
    torch.testing.assert_close(td["advantage"], adv)
    torch.testing.assert_close(td["value_target"], target)
    assert not td["advantage"].requires_grad  # the inputs do not require grad here


def test_gae_params_and_target_params():
    net = value_net()
    params = TensorDict.from_module(net).data.clone()
    target = params.apply(torch.zeros_like)
    td = trajectories()
    GAE(0.9, 0.8, net)(td, params=params, target_params=target)
    torch.testing.assert_close(
        td["next", "state_value"], torch.zeros_like(td["next", "state_value"])
    )


def test_gae_skip_existing_and_set_keys():
    td = trajectories()
    td["v"] = torch.zeros(2, 9, 1)
    td["next", "v"] = torch.zeros(2, 9, 1)
    gae = GAE(1.0, 1.0, None, skip_existing=True).set_keys(value="v", advantage="adv")
    gae(td)
    assert "adv" in td.keys()
    with pytest.raises(KeyError, match=r"unknown key name\(s\) \['bogus'\]"):
        gae.set_keys(bogus="x")


def test_gae_errors():
    with pytest.raises(ValueError, match=r"GAE: expected lmbda in \[0, 1\], got 2.0"):
        GAE(0.9, 2.0, None)
    with pytest.raises(ValueError, match=r"GAE: expected gamma in \[0, 1\]"):
        GAE(1.5, 0.5, None)
    td = trajectories()
    with pytest.raises(
        KeyError, match="has no 'state_value' entry and the estimator has no value_network"
    ):
        GAE(0.9, 0.9, None)(td)
    del td["next", "reward"]
    with pytest.raises(KeyError, match=r"expected an entry \('next', 'reward'\)"):
        GAE(0.9, 0.9, value_net())(td)
