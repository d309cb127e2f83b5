import pytest
import torch

from rl_objectives import HardUpdate
from rl_objectives.trainers import DQNTrainer, OfflineToOnlineTrainer, SACTrainer


def test_stores_samples_and_updates_targets(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    buffer = tiny.Buffer()
    sampled = []
    trainer = DQNTrainer(
        collector, 24, loss, torch.optim.SGD(loss.parameters(), lr=0.01),
        replay_buffer=buffer, batch_size=5, optim_steps_per_batch=2,
        target_net_updater=HardUpdate(loss, value_network_update_interval=4), progress_bar=False,
    )  # fmt: skip
    trainer.register_op("post_loss", lambda sub: sampled.append(sub.shape))
    trainer.train()
    assert len(buffer.storage) == 24  # every collected step, flattened
    assert sampled == [torch.Size([5])] * 6
    state = trainer.state_dict()["hooks"]
    assert state["target_net_updater"]["counter"] == 2  # 6 steps: updated at the 4th, 2 since
    assert state["replay_buffer"]["replay_buffer"]["storage"].shape == torch.Size([24])


def test_needs_a_buffer(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    with pytest.raises(
        TypeError, match=r"the replay buffer must have an sample\(\) method, got list"
    ):
        SACTrainer(collector, 8, loss, torch.optim.SGD(loss.parameters(), lr=0.1), replay_buffer=[])


def make_offline(tiny, offline):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    trainer = OfflineToOnlineTrainer(
        collector, 16, loss, torch.optim.SGD(loss.parameters(), lr=0.01),
        offline_buffer=offline, offline_steps=5, replay_buffer=tiny.Buffer(), batch_size=4,
        progress_bar=False,
    )  # fmt: skip
    return trainer, collector


def test_offline_steps_first_and_not_repeated_on_resume(tiny):
    offline = tiny.Buffer()
    source = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    offline.extend(next(iter(source)).reshape(-1))
    trainer, _ = make_offline(tiny, offline)
    trainer.train()
    assert trainer.offline_done == 5
    assert trainer.optim_count == 5 + 2  # then one step per collected batch
    assert "offline/loss_value" in trainer.latest_logs
    resumed, _ = make_offline(tiny, offline)
    resumed.load_state_dict(trainer.state_dict())
    resumed.total_frames = 32
    resumed.train()
    assert resumed.offline_done == 5
    assert resumed.optim_count == 7 + 2


def test_offline_buffer_needs_sample(tiny):
    with pytest.raises(TypeError, match="offline_buffer must have a sample"):
        make_offline(tiny, object())
