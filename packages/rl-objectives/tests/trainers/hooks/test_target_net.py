import pytest
import torch

from rl_objectives import HardUpdate, SoftUpdate
from rl_objectives.trainers import TargetNetUpdaterHook, Trainer


def test_soft_update_after_every_optim_step(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 8)
    loss = tiny.Loss(tiny.value_network(0))
    trainer = Trainer(
        collector,
        32,
        loss,
        torch.optim.SGD(loss.parameters(), lr=0.1),
        optim_steps_per_batch=3,
        progress_bar=False,
    )
    online, target = loss.value_network_params, loss.target_value_network_params
    expected = target.data.clone()

    def track():  # the reference: one Polyak step per optimisation step
        expected.apply_(lambda t, o: t.lerp_(o, 0.1), online.data)

    trainer.register_op("post_optim", track)
    TargetNetUpdaterHook(SoftUpdate(loss, tau=0.1)).register(trainer)
    trainer.train()
    assert trainer.optim_count == 6
    gap = (target.data - expected).abs().max(reduce=True)
    lag = (target.data - online.data).abs().max(reduce=True)
    assert gap < 1e-6
    assert lag > 1e-4  # the target lags behind the online network


def test_hard_update_counter_is_saved_and_restored(tiny):
    loss = tiny.Loss(tiny.value_network(0))
    hook = TargetNetUpdaterHook(HardUpdate(loss, value_network_update_interval=5))
    for _ in range(3):
        hook()
    other = TargetNetUpdaterHook(HardUpdate(loss, value_network_update_interval=5))
    other.load_state_dict(hook.state_dict())
    assert other.target_params_updater.counter == 3
    with pytest.raises(KeyError, match="the state lacks 'counter'"):
        other.load_state_dict({})
    with pytest.raises(TypeError, match=r"expected an rl_objectives\.TargetNetUpdater"):
        TargetNetUpdaterHook(loss)
