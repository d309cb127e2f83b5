import pytest
import torch

from rl_objectives.trainers import Trainer, UpdateWeights


def test_updates_the_collector_every_interval(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 8)
    loss = tiny.Loss(tiny.value_network(0))
    trainer = Trainer(collector, 80, loss, torch.optim.Adam(loss.parameters()), progress_bar=False)
    hook = UpdateWeights(collector, update_weights_interval=2)
    hook.register(trainer)
    trainer.train()  # 5 batches
    assert collector.weight_updates == 2
    assert trainer.state_dict()["hooks"]["update_weights"] == {"counter": 5}


def test_bad_collector():
    with pytest.raises(
        TypeError, match=r"must have an update_policy_weights_\(\) method, got list"
    ):
        UpdateWeights([])
