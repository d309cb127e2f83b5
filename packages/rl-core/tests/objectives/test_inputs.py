"""LossModule's inputs: in_keys, calls with keyword tensors, and the error a call raises when
the batch lacks an entry the loss reads or holds an action of the wrong shape."""

import re
from dataclasses import dataclass

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_core.keys import NestedKey
from rl_core.objectives import LossModule


class ActorCriticLoss(LossModule):
    """``loss_actor = -Q(s, mu(s))``, ``loss_value = (Q(s, a) - target) ** 2``, both means."""

    @dataclass
    class _AcceptedKeys:
        action: NestedKey = "action"
        value_target: NestedKey = ("next", "target")

    def __init__(self, actor, critic, *, declare=True):
        super().__init__()
        self.convert_to_functional(actor, "actor_network")
        self.convert_to_functional(critic, "value_network")
        self.declare = declare

    def _in_keys(self, tensordict):
        if not self.declare:
            return []
        return [
            *self._network_in_keys("actor_network"),
            *self._network_in_keys("value_network"),
            self.tensor_keys.value_target,
        ]

    def forward(self, tensordict):
        with self.use_network("actor_network") as actor:
            acted = actor(tensordict.copy())
        with self.use_network("value_network") as critic:
            q_actor = critic(acted).get("q")
            q_data = critic(tensordict.copy()).get("q")
        target = tensordict.get(self.tensor_keys.value_target)
        return TensorDict(loss_actor=-q_actor.mean(), loss_value=(q_data - target).pow(2).mean())


class Concat(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(5, 1)

    def forward(self, obs, action):
        return self.linear(torch.cat([obs, action], -1))


def make(declare=True):
    torch.manual_seed(0)
    actor = TensorDictModule(nn.Linear(3, 2), ["observation"], ["action"])
    critic = TensorDictModule(Concat(), ["observation", "action"], ["q"])
    return ActorCriticLoss(actor, critic, declare=declare), actor, critic


def batch():
    g = torch.Generator().manual_seed(1)
    return TensorDict(
        observation=torch.randn(4, 3, generator=g),
        action=torch.randn(4, 2, generator=g),
        next=TensorDict(target=torch.randn(4, 1, generator=g), batch_size=[4]),
        batch_size=[4],
    )


def test_in_keys_are_the_declared_entries_once_each():
    loss, _, _ = make()
    assert loss.in_keys == ["observation", "action", ("next", "target")]
    assert make(declare=False)[0].in_keys == []


@pytest.mark.parametrize("key", ["observation", "action", ("next", "target")])
def test_missing_entry_raises_key_error_naming_it(key):
    loss, _, _ = make()
    td = batch()
    del td[key]
    pattern = rf"ActorCriticLoss: the batch has no entry {re.escape(repr(key))}"
    with pytest.raises(KeyError, match=pattern):
        loss(td)


def test_missing_entry_names_the_set_keys_field():
    loss, _, _ = make()
    td = batch()
    del td["next", "target"]
    with pytest.raises(KeyError, match=r"set_keys\(value_target=\.\.\.\)") as info:
        loss(td)
    assert info.value.__cause__ is not None  # the original failure is kept as the cause


def test_without_declared_keys_the_original_error_propagates():
    loss, _, _ = make(declare=False)
    td = batch()
    del td["next", "target"]
    with pytest.raises(TypeError, match="NoneType"):
        loss(td)


def test_action_of_wrong_width_raises_value_error_naming_expected_and_got():
    loss, _, _ = make()
    td = batch()
    td["action"] = torch.randn(4, 3)
    with pytest.raises(
        ValueError,
        match=r"the action \(entry 'action'\) has shape \(3,\) per sample, expected \(2,\) "
        r"\(what actor_network writes\)",
    ):
        loss(td)


def test_other_failures_and_the_loss_own_errors_propagate_unchanged():
    loss, _, _ = make()
    td = batch()
    td["observation"] = torch.randn(4, 4)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        loss(td)

    class Strict(ActorCriticLoss):
        def forward(self, tensordict):
            raise KeyError("Strict: a message of the loss itself")

    strict = Strict(*make()[1:])
    with pytest.raises(KeyError, match="Strict: a message of the loss itself"):
        strict(batch())


def test_keyword_tensors_give_the_outputs_of_a_tensordict_call():
    loss, actor, critic = make()
    td = batch()
    expected = loss(td.clone())
    loss_actor, loss_value = loss(
        observation=td["observation"], action=td["action"], next_target=td["next", "target"]
    )
    torch.testing.assert_close(loss_actor, expected["loss_actor"])
    torch.testing.assert_close(loss_value, expected["loss_value"])
    # by hand, in float64
    obs, act, tgt = (t.double() for t in (td["observation"], td["action"], td["next", "target"]))
    w_a, b_a = actor.module.weight.double(), actor.module.bias.double()
    w_q, b_q = critic.module.linear.weight.double(), critic.module.linear.bias.double()
    q = lambda a: torch.cat([obs, a], -1) @ w_q.T + b_q  # noqa: E731
    expected_actor, expected_value = -q(obs @ w_a.T + b_a).mean(), (q(act) - tgt).pow(2).mean()
    torch.testing.assert_close(loss_actor.double(), expected_actor, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(loss_value.double(), expected_value, rtol=1e-6, atol=1e-6)


def test_keyword_call_rejects_unknown_names():
    loss, _, _ = make()
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['obs'\]"):
        loss(obs=torch.zeros(4, 3))


class PlainLoss(ActorCriticLoss):
    """The same loss with both networks kept as they are (``functional=False``)."""

    def __init__(self, actor, critic):
        LossModule.__init__(self)
        self.convert_to_functional(actor, "actor_network", functional=False)
        self.convert_to_functional(critic, "value_network", functional=False)
        self.declare = True


def test_functional_false_keeps_the_module_and_its_parameters():
    _, actor, critic = make()
    loss = PlainLoss(actor, critic)
    assert loss.actor_network is actor
    assert loss.value_network is critic
    assert [id(p) for p in loss.parameters()] == [
        id(p) for p in [*actor.parameters(), *critic.parameters()]
    ]
    assert sorted(loss.state_dict()) == [
        "actor_network.module.bias",
        "actor_network.module.weight",
        "value_network.module.linear.bias",
        "value_network.module.linear.weight",
    ]
    with loss.use_network("actor_network") as net:
        assert net is actor
    # the same values as the functional loss, and gradients reach the modules themselves
    td = batch()
    functional, _, _ = make()
    expected = functional(td.clone())
    out = loss(td.clone())
    torch.testing.assert_close(out["loss_value"], expected["loss_value"])
    out["loss_value"].backward()
    assert critic.module.linear.weight.grad is not None
    # other parameters can still be loaded for one call (a detached copy, no gradient)
    with loss.use_network("value_network", params=loss.value_network_params.detach()) as net:
        assert not net(td.copy())["q"].requires_grad


def test_functional_false_has_no_target_copy():
    _, actor, _ = make()
    loss = ActorCriticLoss.__new__(ActorCriticLoss)
    LossModule.__init__(loss)
    with pytest.raises(ValueError, match="functional=False has no target copy"):
        loss.convert_to_functional(
            actor, "actor_network", create_target_params=True, functional=False
        )
