import pytest
import torch

from rl_objectives.trainers import LRSchedulerHook, Trainer


def make(tiny, total):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    optimizer = torch.optim.SGD(loss.parameters(), lr=0.1)
    trainer = Trainer(
        collector, total, loss, optimizer, optim_steps_per_batch=2, progress_bar=False
    )
    hook = LRSchedulerHook(torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5))
    hook.register(trainer)
    return trainer, optimizer


def test_steps_once_per_optim_step_and_logs_the_rate(tiny):
    trainer, optimizer = make(tiny, 40)  # 5 batches x 2 optim steps = 10 scheduler steps
    trainer.train()
    # Hand-computed StepLR: lr = 0.1 * 0.5 ** (10 // 3) = 0.0125.
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0125)
    assert trainer.latest_logs["lr"] == pytest.approx(0.0125)


def test_state_goes_with_the_trainer(tiny):
    trainer, _ = make(tiny, 24)
    trainer.train()
    other, optimizer = make(tiny, 40)
    other.load_state_dict(trainer.state_dict())
    other.train()  # 6 steps restored + 4 more = 10
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0125)


def test_rejects_a_non_scheduler():
    with pytest.raises(
        TypeError, match=r"lr_scheduler must be a torch\.optim\.lr_scheduler\.LRScheduler, got str"
    ):
        LRSchedulerHook("cosine")
