import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_core.objectives import LossModule
from rl_objectives.target_updaters import HardUpdate, SoftUpdate, TargetNetUpdater


class TwoNetworkLoss(LossModule):
    """An actor without a target and two critics with targets, for the updaters to find."""

    def __init__(self) -> None:
        super().__init__()
        self.convert_to_functional(nn.Linear(2, 2), "actor_network")
        self.convert_to_functional(
            nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.Linear(3, 1)),
            "qvalue_network",
            create_target_params=True,
        )
        self.convert_to_functional(nn.Linear(2, 1), "value_network", create_target_params=True)

    def forward(self, tensordict):
        return TensorDict()


def _online_and_target(loss):
    online = [loss.qvalue_network_params.data, loss.value_network_params.data]
    target = [loss.target_qvalue_network_params.data, loss.target_value_network_params.data]
    return online, target


def _randomize(loss):
    torch.manual_seed(0)
    with torch.no_grad():
        for online, target in zip(*_online_and_target(loss)):
            for tensors in (online, target):
                for leaf in tensors.values(True, True):
                    if leaf.is_floating_point():
                        leaf.copy_(torch.randn_like(leaf))
                    else:
                        leaf.random_(0, 100)


def _snapshot(tds):
    return [td.clone() for td in tds]


class TestSoftUpdate:
    @pytest.mark.parametrize("kwargs", [{"tau": 0.1}, {"eps": 0.9}])
    def test_step_is_polyak_averaging(self, kwargs):
        loss = TwoNetworkLoss()
        _randomize(loss)
        online, target = _online_and_target(loss)
        old_target, old_online = _snapshot(target), _snapshot(online)
        updater = SoftUpdate(loss, **kwargs)
        assert updater.eps == pytest.approx(0.9)
        assert updater.tau == pytest.approx(0.1)
        updater.step()
        for new, old, source in zip(target, old_target, old_online):
            for key, leaf in new.items(True, True):
                if leaf.is_floating_point():
                    expected = 0.9 * old[key] + 0.1 * source[key]
                    torch.testing.assert_close(leaf, expected)
                else:
                    assert torch.equal(leaf, source[key])
        # The online networks are left alone.
        for now, before in zip(online, old_online):
            assert (now == before).all()

    def test_repeated_steps_converge_geometrically(self):
        loss = TwoNetworkLoss()
        _randomize(loss)
        online, target = _online_and_target(loss)
        gap = (target[1]["weight"] - online[1]["weight"]).clone()
        updater = SoftUpdate(loss, tau=0.5)
        for _ in range(3):
            updater.step()
        torch.testing.assert_close(target[1]["weight"] - online[1]["weight"], gap / 8)

    def test_tau_one_copies_and_eps_one_freezes(self):
        loss = TwoNetworkLoss()
        _randomize(loss)
        online, target = _online_and_target(loss)
        frozen = _snapshot(target)
        SoftUpdate(loss, eps=1.0).step()
        for t, f in zip(target, frozen):
            for key, leaf in t.items(True, True):
                # Integer buffers (BatchNorm's step count) are always copied from online.
                if leaf.is_floating_point():
                    assert torch.equal(leaf, f[key])
        SoftUpdate(loss, tau=1.0).step()
        for t, o in zip(target, online):
            for key, leaf in t.items(True, True):
                torch.testing.assert_close(leaf, o[key])

    def test_the_actor_without_target_is_untouched_and_parameters_stay_online_only(self):
        loss = TwoNetworkLoss()
        actor = loss.actor_network_params.data.clone()
        parameters = list(loss.parameters())
        SoftUpdate(loss, tau=0.3).step()
        assert (loss.actor_network_params.data == actor).all()
        assert all(a is b for a, b in zip(loss.parameters(), parameters))

    def test_works_after_moving_the_loss_to_another_dtype(self):
        loss = TwoNetworkLoss().to(torch.float64)
        _randomize(loss)
        online, target = _online_and_target(loss)
        old = target[1]["weight"].clone()
        SoftUpdate(loss, tau=0.25).step()
        assert target[1]["weight"].dtype == torch.float64
        torch.testing.assert_close(target[1]["weight"], 0.75 * old + 0.25 * online[1]["weight"])

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({}, r"SoftUpdate: pass exactly one of eps and tau \(eps = 1 - tau\), got eps=None"),
            ({"eps": 0.9, "tau": 0.1}, r"SoftUpdate: pass exactly one of eps and tau"),
            ({"tau": 1.5}, r"SoftUpdate: tau must lie in \[0, 1\], got 1.5"),
            ({"eps": -0.1}, r"SoftUpdate: eps must lie in \[0, 1\], got -0.1"),
        ],
    )
    def test_rejects_bad_rates(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            SoftUpdate(TwoNetworkLoss(), **kwargs)


class TestHardUpdate:
    def test_copies_every_n_steps(self):
        loss = TwoNetworkLoss()
        _randomize(loss)
        online, target = _online_and_target(loss)
        before = _snapshot(target)
        updater = HardUpdate(loss, value_network_update_interval=3)
        for _ in range(2):
            updater.step()
            assert all((t == b).all() for t, b in zip(target, before))
        updater.step()
        assert all((t == o).all() for t, o in zip(target, online))
        assert updater.counter == 0
        with torch.no_grad():
            online[1]["weight"].add_(1.0)
        updater.step()
        updater.step()
        assert not (target[1]["weight"] == online[1]["weight"]).all()
        updater.step()
        torch.testing.assert_close(target[1]["weight"], online[1]["weight"])

    def test_init_copies_immediately(self):
        loss = TwoNetworkLoss()
        _randomize(loss)
        updater = HardUpdate(loss)
        assert updater.value_network_update_interval == 1000
        updater.init_()
        online, target = _online_and_target(loss)
        assert all((t == o).all() for t, o in zip(target, online))

    @pytest.mark.parametrize("interval", [0, -3, 2.5, True])
    def test_rejects_bad_intervals(self, interval):
        with pytest.raises(ValueError, match=r"HardUpdate: value_network_update_interval must"):
            HardUpdate(TwoNetworkLoss(), value_network_update_interval=interval)


class TestTargetNetUpdater:
    def test_needs_a_loss_with_targets(self):
        class NoTargets(LossModule):
            def __init__(self):
                super().__init__()
                self.convert_to_functional(nn.Linear(1, 1), "actor_network")

            def forward(self, tensordict):
                return TensorDict()

        with pytest.raises(ValueError, match=r"SoftUpdate: NoTargets has no target networks"):
            SoftUpdate(NoTargets(), tau=0.1)
        with pytest.raises(TypeError, match=r"HardUpdate: expected a LossModule, got Linear"):
            HardUpdate(nn.Linear(1, 1))

    def test_is_abstract(self):
        with pytest.raises(TypeError, match="abstract"):
            TargetNetUpdater(TwoNetworkLoss())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_soft_update_on_cuda():
    loss = TwoNetworkLoss().to("cuda")
    _randomize(loss)
    online, target = _online_and_target(loss)
    old = target[1]["weight"].clone()
    SoftUpdate(loss, tau=0.5).step()
    assert target[1]["weight"].device.type == "cuda"
    torch.testing.assert_close(target[1]["weight"], 0.5 * old + 0.5 * online[1]["weight"])
