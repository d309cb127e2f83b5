import pytest
import torch

from rl_objectives.trainers import ReplayBufferTrainer, Trainer, UTDRHook


def test_ratio_of_trained_samples_to_collected_frames(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)  # 8 frames per batch
    loss = tiny.Loss(tiny.value_network(0))
    trainer = Trainer(
        collector,
        32,
        loss,
        torch.optim.SGD(loss.parameters(), lr=0.01),
        optim_steps_per_batch=3,
        progress_bar=False,
    )
    ReplayBufferTrainer(tiny.Buffer(), 16, flatten_tensordicts=True).register(trainer)
    hook = UTDRHook(trainer)
    hook.register(trainer)
    trainer.train()
    # Hand-computed: 3 samples of 16 per 8 collected frames -> 6.0.
    assert trainer.latest_logs["utd_ratio"] == pytest.approx(6.0)
    assert hook.state_dict() == {"trained_samples": 4 * 3 * 16}


def test_needs_a_trainer():
    with pytest.raises(TypeError, match="trainer must be a Trainer"):
        UTDRHook(object())
