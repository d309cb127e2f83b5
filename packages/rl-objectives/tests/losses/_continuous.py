"""Continuous-action actors and critics for the SAC/TD3 tests."""

from __future__ import annotations

import math

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule

from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator

OBS, ACT = 3, 2


def tanh_actor(seed=0):
    torch.manual_seed(seed)
    params = torch.nn.Sequential(MLP(OBS, 2 * ACT, depth=1, num_cells=16), NormalParamExtractor())
    module = TensorDictModule(params, ["observation"], ["loc", "scale"])
    return ProbabilisticActor(module, ["loc", "scale"], distribution_class=TanhNormal), params


def q_critic(seed=1):
    torch.manual_seed(seed)
    return ValueOperator(MLP(OBS + ACT, 1, depth=1, num_cells=16), ["observation", "action"])


def q_with(loss, i, target, td, action):
    """Q_i of the loss's ensemble (online or target params) on ``(obs, action)``."""
    params = loss.target_qvalue_network_params if target else loss.qvalue_network_params
    net = loss.qvalue_network.nets[i]
    sub = td.copy().set("action", action)
    with params["nets", str(i)].to_module(net):
        return net(sub)["state_action_value"]


def tanh_sample(param_net, obs, sample_shape=()):
    """Reparameterised TanhNormal sample and its log-prob, written out by hand."""
    loc, scale = param_net(obs)
    x = torch.distributions.Normal(loc, scale).rsample(sample_shape)
    normal_lp = -((x - loc) ** 2) / (2 * scale**2) - scale.log() - 0.5 * math.log(2 * math.pi)
    log_det = 2 * (math.log(2) - x - torch.nn.functional.softplus(-2 * x))
    return torch.tanh(x), (normal_lp - log_det).sum(-1)
