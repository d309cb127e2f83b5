"""Small networks and fixed batches for the loss tests, plus a gradient-comparison helper."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor, ValueOperator

OBS, N_ACT = 3, 4


def categorical_actor(seed=0):
    torch.manual_seed(seed)
    net = MLP(OBS, N_ACT, depth=1, num_cells=16)
    module = TensorDictModule(net, ["observation"], ["logits"])
    actor = ProbabilisticActor(
        module, ["logits"], distribution_class=OneHotCategorical, return_log_prob=True
    )
    return actor, net


def value_critic(seed=1):
    torch.manual_seed(seed)
    net = MLP(OBS, 1, depth=1, num_cells=16)
    return ValueOperator(net, ["observation"]), net


def onpolicy_batch(batch=(2, 6), seed=0):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(N_ACT, batch, generator=g)
    done = torch.rand(*batch, 1, generator=g) < 0.2
    return TensorDict(
        observation=torch.randn(*batch, OBS, generator=g),
        action=torch.nn.functional.one_hot(idx, N_ACT).bool(),
        action_log_prob=torch.log(torch.rand(batch, generator=g) * 0.5 + 0.2),
        state_value=torch.randn(*batch, 1, generator=g),
        next=TensorDict(
            observation=torch.randn(*batch, OBS, generator=g),
            reward=torch.randn(*batch, 1, generator=g),
            done=done,
            terminated=done & (torch.rand(*batch, 1, generator=g) < 0.5),
            batch_size=batch,
        ),
        batch_size=batch,
    )


def grads(loss_value, params):
    params = list(params)
    return torch.autograd.grad(loss_value, params, allow_unused=True)


def assert_same_grads(a, b, atol=1e-5):
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None or torch.all(x == 0)
            assert y is None or torch.all(y == 0)
            continue
        torch.testing.assert_close(x, y, atol=atol, rtol=1e-4)


def offpolicy_batch(batch=(8,), action=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    done = torch.rand(*batch, 1, generator=g) < 0.3
    td = TensorDict(
        observation=torch.randn(*batch, OBS, generator=g),
        next=TensorDict(
            observation=torch.randn(*batch, OBS, generator=g),
            reward=torch.randn(*batch, 1, generator=g),
            done=done,
            terminated=done & (torch.rand(*batch, 1, generator=g) < 0.5),
            batch_size=batch,
        ),
        batch_size=batch,
    )
    if action is not None:
        td["action"] = action
    return td
