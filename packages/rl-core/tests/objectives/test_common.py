import copy
from dataclasses import dataclass

import pytest
import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import TensorDictModule
from torch import nn

from rl_core.keys import (
    DONE,
    NEXT,
    OBSERVATION,
    REWARD,
    STATE_VALUE,
    VALUE_TARGET,
    NestedKey,
)
from rl_core.objectives import LossModule


class TD0Estimator:
    """A real one-step TD target, ``r + gamma * (1 - done) * V_target(s')``."""

    def __init__(self, loss: "ValueLoss", gamma: float) -> None:
        self.loss, self.gamma = loss, gamma
        self.keys = {"value": STATE_VALUE, "reward": REWARD, "done": DONE}

    def set_keys(self, **keys: NestedKey) -> None:
        self.keys.update(keys)

    @torch.no_grad()
    def value_target(self, tensordict: TensorDictBase) -> torch.Tensor:
        next_td = tensordict.get(NEXT).copy()
        with self.loss.use_network("value_network", target=True) as net:
            next_value = net(next_td).get(self.keys["value"])
        not_done = (~next_td.get(self.keys["done"])).float()
        return next_td.get(self.keys["reward"]) + self.gamma * not_done * next_value


class ValueLoss(LossModule):
    """A one-network mean-squared value loss with a TD(0) target from a target network."""

    @dataclass
    class _AcceptedKeys:
        value: NestedKey = STATE_VALUE
        reward: NestedKey = REWARD
        done: NestedKey = DONE
        value_target: NestedKey = VALUE_TARGET

    default_value_estimator = "td0"

    def __init__(self, value_network: nn.Module) -> None:
        super().__init__()
        self.convert_to_functional(value_network, "value_network", create_target_params=True)

    def _make_value_estimator(self, value_type, **hyperparams):
        if value_type != "td0":
            raise ValueError(f"ValueLoss: unknown value_type {value_type!r}")
        return TD0Estimator(self, **hyperparams)

    def _forward_value_estimator_keys(self, **kwargs):
        if self.value_estimator is not None:
            self.value_estimator.set_keys(
                **{k: v for k, v in kwargs.items() if k in ("value", "reward", "done")}
            )

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        if self.value_estimator is None:
            self.make_value_estimator(gamma=0.9)
        target = self.value_estimator.value_target(tensordict)
        with self.use_network("value_network") as net:
            value = net(tensordict.copy()).get(self.tensor_keys.value)
        return TensorDict(
            loss_value=(value - target).pow(2).mean(),
            target_mean=target.mean(),
        )


def _network(*, batch_norm: bool = False, dropout: bool = False) -> TensorDictModule:
    layers = [nn.Linear(3, 8)]
    if batch_norm:
        layers.append(nn.BatchNorm1d(8))
    if dropout:
        layers.append(nn.Dropout(0.5))
    layers += [nn.Tanh(), nn.Linear(8, 1)]
    return TensorDictModule(nn.Sequential(*layers), [OBSERVATION], [STATE_VALUE])


def _batch(n: int = 16, dtype: torch.dtype = torch.float32) -> TensorDict:
    return TensorDict(
        {
            OBSERVATION: torch.randn(n, 3, dtype=dtype),
            NEXT: {
                OBSERVATION: torch.randn(n, 3, dtype=dtype),
                REWARD: torch.randn(n, 1, dtype=dtype),
                DONE: torch.rand(n, 1) < 0.2,
            },
        },
        [n],
    )


@pytest.fixture
def seeded():
    torch.manual_seed(0)


@pytest.mark.usefixtures("seeded")
class TestNetworks:
    def test_parameters_are_the_callers_and_exclude_the_targets(self):
        network = _network()
        loss = ValueLoss(network)
        names = [name for name, _ in loss.named_parameters()]
        assert names == [
            "value_network_params.module.0.weight",
            "value_network_params.module.0.bias",
            "value_network_params.module.2.weight",
            "value_network_params.module.2.bias",
        ]
        assert all(a is b for a, b in zip(loss.parameters(), network.parameters()))
        target_ids = {id(t) for t in loss.target_parameters()}
        assert len(target_ids) == 4
        assert target_ids.isdisjoint(id(p) for p in loss.parameters())
        assert not any(t.requires_grad for t in loss.target_parameters())

    def test_targets_start_as_equal_but_separate_copies(self):
        loss = ValueLoss(_network())
        online, target = loss.value_network_params, loss.target_value_network_params
        assert (online.data == target).all()
        with torch.no_grad():
            online["module", "0", "weight"].add_(1.0)
        assert not (online.data == target).all()

    def test_the_stored_network_is_structure_only(self):
        loss = ValueLoss(_network())
        assert next(loss.value_network.parameters()).device.type == "meta"
        assert "value_network" not in dict(loss.named_children())
        assert loss.network_names == ("value_network",)
        assert loss.target_network_names == ("value_network",)

    def test_backward_reaches_the_online_parameters_only(self):
        network = _network()
        loss = ValueLoss(network)
        loss(_batch())["loss_value"].backward()
        assert all(p.grad is not None for p in network.parameters())
        assert all(t.grad is None for t in loss.target_parameters())

    def test_use_network_runs_online_or_target_parameters(self):
        network = _network()
        loss = ValueLoss(network)
        td = _batch()
        with torch.no_grad():
            loss.target_value_network_params.zero_()
            with loss.use_network("value_network") as net:
                online = net(td.copy())[STATE_VALUE]
            with loss.use_network("value_network", target=True) as net:
                target = net(td.copy())[STATE_VALUE]
            torch.testing.assert_close(online, network(td.copy())[STATE_VALUE])
            torch.testing.assert_close(target, torch.zeros_like(target))

    def test_use_network_rejects_unknown_names(self):
        loss = ValueLoss(_network())
        with (
            pytest.raises(KeyError, match=r"ValueLoss.use_network: no target networks named 'q'"),
            loss.use_network("q", target=True),
        ):
            pass

    def test_shared_trunk_parameters_are_listed_once(self):
        class TwoHeads(LossModule):
            def __init__(self, actor, critic):
                super().__init__()
                self.convert_to_functional(actor, "actor_network")
                self.convert_to_functional(critic, "critic_network", create_target_params=True)

            def forward(self, tensordict):
                return TensorDict()

        trunk = nn.Linear(3, 4)
        actor, critic = nn.Sequential(trunk, nn.Linear(4, 2)), nn.Sequential(trunk, nn.Linear(4, 1))
        loss = TwoHeads(actor, critic)
        assert len(list(loss.parameters())) == 6
        assert loss.target_network_names == ("critic_network",)

    def test_convert_to_functional_rejects_bad_arguments(self):
        loss = ValueLoss(_network())
        with pytest.raises(ValueError, match=r"already has an attribute 'value_network'"):
            loss.convert_to_functional(_network(), "value_network")
        with pytest.raises(ValueError, match=r"name must be a Python identifier .* got 'a-b'"):
            loss.convert_to_functional(_network(), "a-b")
        with pytest.raises(TypeError, match=r"convert_to_functional: expected an nn.Module, got"):
            loss.convert_to_functional(lambda td: td, "policy")
        with pytest.raises(ValueError, match=r"already has an attribute 'forward'"):
            loss.convert_to_functional(_network(), "forward")

    def test_train_and_eval_reach_the_converted_networks(self):
        loss = ValueLoss(_network(dropout=True))
        assert loss.value_network.training
        loss.eval()
        assert not loss.value_network.training
        assert not any(m.training for m in loss.value_network.modules())
        loss.train()
        assert loss.value_network.training

    def test_batch_norm_buffers_are_buffers_and_update_in_place(self):
        network = _network(batch_norm=True)
        loss = ValueLoss(network)
        buffers = dict(loss.named_buffers())
        assert "value_network_params.module.1.running_mean" in buffers
        assert "target_value_network_params.module.1.running_mean" in buffers
        before = network.module[1].running_mean.clone()
        loss(_batch())
        assert not torch.equal(network.module[1].running_mean, before)


@pytest.mark.usefixtures("seeded")
class TestStateAndDevices:
    def test_state_dict_round_trip_includes_the_targets(self):
        source = ValueLoss(_network())
        with torch.no_grad():
            source.target_value_network_params.apply_(lambda t: t.add_(0.5))
        state = source.state_dict()
        assert "target_value_network_params.module.0.weight" in state
        assert "value_network_params.module.0.weight" in state
        restored = ValueLoss(_network())
        restored.load_state_dict(state)
        assert (restored.value_network_params.data == source.value_network_params.data).all()
        assert (restored.target_value_network_params == source.target_value_network_params).all()

    def test_to_dtype_moves_parameters_and_targets(self):
        loss = ValueLoss(_network(batch_norm=True)).to(torch.float64)
        assert all(p.dtype == torch.float64 for p in loss.parameters())
        floats = [t for t in loss.target_parameters() if t.is_floating_point()]
        assert floats
        assert all(t.dtype == torch.float64 for t in floats)
        first_name, _ = next(iter(loss.named_parameters()))
        assert first_name == "value_network_params.module.0.weight"
        out = loss(_batch(dtype=torch.float64))
        assert out["loss_value"].dtype == torch.float64
        out["loss_value"].backward()
        assert all(p.grad is not None for p in loss.parameters())

    def test_deepcopy_gives_an_independent_loss(self):
        loss = ValueLoss(_network())
        clone = copy.deepcopy(loss)
        with torch.no_grad():
            clone.value_network_params.zero_()
        assert not (loss.value_network_params.data == 0).all()
        assert clone(_batch())["loss_value"].isfinite()

    def test_an_optimizer_over_parameters_trains_the_callers_network(self):
        network = _network()
        loss = ValueLoss(network)
        optimizer = torch.optim.SGD(loss.parameters(), lr=0.1)
        before = network.module[0].weight.detach().clone()
        loss(_batch())["loss_value"].backward()
        optimizer.step()
        assert not torch.equal(network.module[0].weight, before)


class TestKeys:
    def test_set_keys_renames_and_reaches_the_estimator(self):
        loss = ValueLoss(_network()).make_value_estimator(gamma=0.5)
        assert loss.set_keys(reward=("next", "bonus"), value="v") is loss
        assert loss.tensor_keys.reward == ("next", "bonus")
        assert loss.tensor_keys.value == "v"
        assert loss.value_estimator.keys["reward"] == ("next", "bonus")
        assert loss.value_estimator.keys["value"] == "v"

    def test_each_loss_has_its_own_keys(self):
        first, second = ValueLoss(_network()), ValueLoss(_network())
        first.set_keys(value="v")
        assert second.tensor_keys.value == STATE_VALUE

    def test_set_keys_rejects_unknown_names_listing_the_accepted_ones(self):
        with pytest.raises(
            KeyError,
            match=r"ValueLoss.set_keys: unknown key name\(s\) \['actions'\]; this loss accepts "
            r"\['value', 'reward', 'done', 'value_target'\]",
        ):
            ValueLoss(_network()).set_keys(actions="a")

    def test_set_keys_rejects_values_that_are_not_keys(self):
        with pytest.raises(TypeError, match=r"ValueLoss.set_keys: value must be a string or"):
            ValueLoss(_network()).set_keys(value=3)
        with pytest.raises(TypeError, match=r"reward must be a string or a non-empty tuple"):
            ValueLoss(_network()).set_keys(reward=())

    def test_accepted_keys_must_be_a_dataclass(self):
        class Broken(LossModule):
            class _AcceptedKeys:
                value = "v"

            def forward(self, tensordict):
                return TensorDict()

        with pytest.raises(TypeError, match=r"Broken._AcceptedKeys must be a dataclass"):
            Broken()


@pytest.mark.usefixtures("seeded")
class TestValueEstimator:
    def test_default_estimator_and_hyperparameters(self):
        loss = ValueLoss(_network())
        assert loss.value_estimator is None
        assert loss.make_value_estimator(gamma=0.25) is loss
        assert loss.value_type == "td0"
        assert loss.value_estimator.gamma == 0.25

    def test_forward_uses_the_estimator_and_the_target_network(self):
        loss = ValueLoss(_network()).make_value_estimator(gamma=0.0)
        td = _batch()
        out = loss(td)
        torch.testing.assert_close(out["target_mean"], td[NEXT, REWARD].mean())
        assert out["loss_value"].requires_grad

    def test_losses_without_an_estimator_say_so(self):
        class NoEstimator(LossModule):
            default_value_estimator = "gae"

            def forward(self, tensordict):
                return TensorDict()

        with pytest.raises(
            NotImplementedError, match=r"NoEstimator does not build value estimators"
        ):
            NoEstimator().make_value_estimator()

    def test_no_value_type_and_no_default(self):
        class NoDefault(LossModule):
            def forward(self, tensordict):
                return TensorDict()

        with pytest.raises(ValueError, match=r"NoDefault.make_value_estimator: no value_type"):
            NoDefault().make_value_estimator()

    def test_the_base_builds_and_its_forward_raises_as_torchrl(self):
        with pytest.raises(NotImplementedError, match=r"LossModule.forward: a loss computes"):
            LossModule()(TensorDict())


def test_target_params_without_a_target_copy_are_the_online_ones_detached():
    class NoTarget(LossModule):
        def __init__(self, net):
            super().__init__()
            self.convert_to_functional(net, "value_network")

        def forward(self, tensordict):
            return TensorDict()

    loss = NoTarget(_network())
    assert "value_network" not in loss.target_network_names
    online, target = loss.value_network_params, loss.target_value_network_params
    keys = list(online.keys(True, True))
    for key in keys:
        assert target[key].data_ptr() == online[key].data_ptr()
        assert not target[key].requires_grad
    with torch.no_grad():
        online[keys[0]].add_(1.0)
    torch.testing.assert_close(target[keys[0]], online[keys[0]])
    with pytest.raises(AttributeError):
        _ = loss.target_other_params


# use_network's planned loading against TensorDict.to_module (the generic path)


class TwoNetLoss(LossModule):
    """A critic with a target copy and a BatchNorm'd trunk, so buffers are loaded too."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.convert_to_functional(net, "value_network", create_target_params=True)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        with self.use_network("value_network") as net:
            value = net(tensordict.copy()).get(STATE_VALUE)
        with torch.no_grad(), self.use_network("value_network", target=True) as net:
            target = net(tensordict.get(NEXT).copy()).get(STATE_VALUE)
        detached = self.value_network_params.detach()
        with self.use_network("value_network", params=detached) as net:
            frozen = net(tensordict.copy()).get(STATE_VALUE)
        error = (value - target).pow(2).mean() + frozen.mean()
        return TensorDict(loss_value=error)


def _generic_use_network(self, name, *, target=False, params=None):
    """What use_network computes, written with to_module only."""
    if params is None:
        params = getattr(self, f"target_{name}_params" if target else f"{name}_params")
    module = self.__dict__[name]
    return _swapped(params, module)


class _swapped:
    def __init__(self, params, module):
        self.ctx = params.to_module(module, preserve_module_state=False)
        self.module = module

    def __enter__(self):
        self.ctx.__enter__()
        return self.module

    def __exit__(self, *exc):
        return self.ctx.__exit__(*exc)


def _two_net_loss():
    torch.manual_seed(0)
    trunk = nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
    loss = TwoNetLoss(TensorDictModule(trunk, [OBSERVATION], [STATE_VALUE]))
    with torch.no_grad():
        loss.target_value_network_params.apply_(
            lambda x: x.mul_(0.5) if x.is_floating_point() else x
        )
    return loss


def _two_net_batch(seed):
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        {
            OBSERVATION: torch.randn(6, 3, generator=g),
            NEXT: {OBSERVATION: torch.randn(6, 3, generator=g)},
        },
        batch_size=[6],
    )


def _value_and_grads(loss, td, generic, monkeypatch):
    with monkeypatch.context() as m:
        if generic:
            m.setattr(LossModule, "use_network", _generic_use_network)
        value = loss(td.clone())["loss_value"]
    grads = torch.autograd.grad(value, list(loss.parameters()))
    state = {k: v.clone() for k, v in loss.state_dict().items()}
    return value.detach(), grads, state


def _assert_paths_agree(loss, td, monkeypatch):
    before = {k: v.clone() for k, v in loss.state_dict().items()}
    fast = _value_and_grads(loss, td, False, monkeypatch)
    loss.load_state_dict(before)  # in place: both paths start from the same running stats
    slow = _value_and_grads(loss, td, True, monkeypatch)
    assert fast[0] == slow[0]
    for a, b in zip(fast[1], slow[1], strict=True):
        assert torch.equal(a, b)
    for key in fast[2]:  # running statistics of the BatchNorm moved the same way
        assert torch.equal(fast[2][key], slow[2][key]), key


def _polyak_(loss, tau):
    """target <- (1 - tau) * target + tau * online, written out (rl-objectives' SoftUpdate)."""
    with torch.no_grad():
        for name in loss.target_network_names:
            online = getattr(loss, f"{name}_params")
            target = getattr(loss, f"target_{name}_params")
            for key, leaf in target.items(include_nested=True, leaves_only=True):
                if leaf.is_floating_point():
                    leaf.mul_(1 - tau).add_(online.get(key).data, alpha=tau)


def test_use_network_plan_matches_to_module_through_training(monkeypatch):
    loss = _two_net_loss()
    loss.train()
    optim = torch.optim.Adam(loss.parameters(), lr=0.05)
    for step in range(3):
        td = _two_net_batch(step)
        _assert_paths_agree(loss, td, monkeypatch)
        optim.zero_grad()
        loss(td)["loss_value"].backward()
        optim.step()
        _polyak_(loss, 0.3)
    loss.eval()
    _assert_paths_agree(loss, _two_net_batch(9), monkeypatch)


def test_use_network_plan_follows_replaced_tensors(monkeypatch):
    loss = _two_net_loss()
    td = _two_net_batch(0)
    loss(td.clone())  # plans made
    loss.double()  # new tensors in the parameter TensorDicts
    _assert_paths_agree(loss, td.double(), monkeypatch)
    state = {k: v * 2 if v.is_floating_point() else v for k, v in loss.state_dict().items()}
    loss.load_state_dict(state, assign=True)
    _assert_paths_agree(loss, td.double(), monkeypatch)
    copied = copy.deepcopy(loss)
    with torch.no_grad():
        for p in copied.parameters():
            p.add_(1.0)
    _assert_paths_agree(copied, td.double(), monkeypatch)
    _assert_paths_agree(loss, td.double(), monkeypatch)


def test_use_network_restores_the_structure_and_nests():
    loss = _two_net_loss()
    structure = loss.value_network
    weight = structure.module[0].weight
    assert weight.device.type == "meta"
    with loss.use_network("value_network") as outer:
        assert outer.module[0].weight is loss.value_network_params["module", "0", "weight"]
        with loss.use_network("value_network", target=True) as inner:
            target_weight = loss.target_value_network_params["module", "0", "weight"]
            assert inner.module[0].weight is target_weight
        assert outer.module[0].weight is loss.value_network_params["module", "0", "weight"]
    assert structure.module[0].weight is weight
    params = loss.value_network_params
    with (
        pytest.raises(KeyError, match="no networks named 'critic'"),
        loss.use_network("critic", params=params),
    ):
        pass


def test_use_network_falls_back_when_params_do_not_fill_the_network():
    # no plan covers every slot, so to_module runs, which leaves layer 3 on the meta device
    loss = _two_net_loss()
    partial = loss.value_network_params.detach().exclude(("module", "3"))
    with (
        pytest.raises(RuntimeError, match="meta"),
        loss.use_network("value_network", params=partial) as net,
    ):
        net(_two_net_batch(0))
    with loss.use_network("value_network") as net:  # the full set still runs
        assert net(_two_net_batch(0)).get(STATE_VALUE).shape == (6, 1)


def test_an_unknown_key_name_is_a_key_error_and_torchrls_value_error():
    loss = ValueLoss(_network())
    for error in (KeyError, ValueError):
        with pytest.raises(error, match=r"ValueLoss.set_keys: unknown key name\(s\) \['nope'\]"):
            loss.set_keys(nope="x")
