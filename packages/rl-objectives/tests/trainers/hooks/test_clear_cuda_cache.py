import pytest

from rl_objectives.trainers import ClearCudaCache, Trainer


def test_clears_every_interval_batches_in_a_trainer(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    import torch

    trainer = Trainer(
        collector, 56, loss, torch.optim.SGD(loss.parameters(), lr=0.01), progress_bar=False
    )
    hook = ClearCudaCache(interval=3)
    hook.register(trainer)
    trainer.train()  # 7 batches of 2 x 4 frames -> calls after batches 3 and 6
    assert (hook.count, hook.clears) == (7, 2)
    assert trainer.state_dict()["hooks"]["clear_cuda_cache"] == {"count": 7, "clears": 2}


def test_bad_interval():
    with pytest.raises(ValueError, match="ClearCudaCache: interval must be a positive int, got 0"):
        ClearCudaCache(0)
