import pytest
import torch

from rl_objectives.trainers import A2CTrainer, OnPolicyTrainer, PPOTrainer, ReinforceTrainer


def make(tiny, cls=OnPolicyTrainer, total=16, **kwargs):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)  # [2, 4] batches
    loss = tiny.Loss(tiny.value_network(0))
    trainer = cls(
        collector, total, loss, torch.optim.SGD(loss.parameters(), lr=0.01),
        progress_bar=False, **kwargs,
    )  # fmt: skip
    return trainer, loss


def test_each_epoch_visits_every_valid_step_once_in_minibatches(tiny):
    trainer, _ = make(tiny, num_epochs=2, batch_size=3, value_estimator=None)
    trainer.register_op(
        "batch_process", lambda b: b.set("uid", torch.arange(b.numel()).reshape(b.shape))
    )
    seen = []
    trainer.register_op("post_loss", lambda sub: seen.append(sub["uid"].tolist()))
    trainer.train()
    # 2 batches x 2 epochs x ceil(8 / 3) = 3 mini-batches of sizes 3, 3, 2.
    assert trainer.optim_count == 12
    assert [len(s) for s in seen] == [3, 3, 2] * 4
    for epoch in range(4):
        steps = [uid for s in seen[3 * epoch : 3 * epoch + 3] for uid in s]
        assert sorted(steps) == list(range(8))


def test_the_loss_value_estimator_runs_before_each_epoch(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    calls = []
    loss.value_estimator = lambda td: (
        calls.append(td.shape) or td.set("advantage", td["next", "reward"])
    )
    trainer = PPOTrainer(
        collector, 8, loss, torch.optim.SGD(loss.parameters(), lr=0.01), progress_bar=False
    )
    trainer.register_op("post_loss", lambda sub: calls.append("advantage" in sub.keys()))
    trainer.train()
    # PPO default: 4 epochs, each: the estimator on the [2, 4] batch, then one whole-batch step.
    assert calls == [torch.Size([2, 4]), True] * 4


def test_default_epochs_and_errors(tiny):
    assert make(tiny, A2CTrainer)[0].num_epochs == 1
    assert make(tiny, ReinforceTrainer)[0].num_epochs == 1
    assert make(tiny, PPOTrainer, num_epochs=2)[0].num_epochs == 2
    with pytest.raises(TypeError, match="optim_steps_per_batch is set by batch_size"):
        make(tiny, PPOTrainer, optim_steps_per_batch=3)
    with pytest.raises(ValueError, match="PPOTrainer: batch_size must be a positive int, got 0"):
        make(tiny, PPOTrainer, batch_size=0)
    with pytest.raises(
        ValueError, match="value_estimator must be a callable, None or 'loss', got 'gae'"
    ):
        make(tiny, PPOTrainer, value_estimator="gae")
