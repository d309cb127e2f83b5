import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import Trainer, ValueEstimatorHook


def test_runs_once_per_epoch_without_grad_on_the_whole_batch(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    seen = []

    def estimator(batch):
        seen.append((tuple(batch.shape), torch.is_grad_enabled()))
        return batch.set("advantage", batch["next", "reward"] * 2)

    trainer = Trainer(
        collector,
        16,
        loss,
        torch.optim.SGD(loss.parameters(), lr=0.01),
        num_epochs=3,
        optim_steps_per_batch=2,
        progress_bar=False,
    )
    ValueEstimatorHook(estimator).register(trainer)
    advantages = []
    trainer.register_op("process_optim_batch", lambda b: advantages.append(b["advantage"]))
    trainer.train()
    assert seen == [((2, 4), False)] * 6  # 2 batches x 3 epochs, the whole [2, 4] batch
    assert len(advantages) == 2 * 3 * 2


def test_errors():
    with pytest.raises(TypeError, match="value_estimator must be callable"):
        ValueEstimatorHook(3)
    with pytest.raises(TypeError, match="must return a TensorDict, got int"):
        ValueEstimatorHook(lambda td: 1)(TensorDict(batch_size=[]))
