import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import ReplayBufferTrainer, Trainer


class PrioritizedBuffer:
    """Records what the hook passes it."""

    def __init__(self):
        self.extended, self.priority_updates = [], []

    def extend(self, batch):
        self.extended.append(batch)

    def sample(self):
        return TensorDict(x=torch.arange(4.0), batch_size=[4])

    def update_tensordict_priority(self, batch):
        self.priority_updates.append(batch)


def test_extends_with_valid_steps_samples_and_updates_priorities():
    buffer = PrioritizedBuffer()
    hook = ReplayBufferTrainer(buffer, flatten_tensordicts=True)
    mask = torch.tensor([[True, False, True], [False, False, True]])
    batch = TensorDict({"x": torch.arange(6.0).reshape(2, 3), ("collector", "mask"): mask}, [2, 3])
    hook.extend(batch)
    assert buffer.extended[0]["x"].tolist() == [0.0, 2.0, 5.0]
    sample = hook.sample(batch)
    assert sample.batch_size == torch.Size([4])
    hook.update_priority(sample)
    assert buffer.priority_updates == [sample]
    ReplayBufferTrainer(buffer).extend(batch)
    assert buffer.extended[1].batch_size == torch.Size([2, 3])


def test_trainer_trains_on_buffer_samples_and_saves_the_buffer(tiny):
    buffer = tiny.Buffer()
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 8)
    loss = tiny.Loss(tiny.value_network(0))
    trainer = Trainer(
        collector,
        48,
        loss,
        torch.optim.Adam(loss.parameters()),
        optim_steps_per_batch=2,
        progress_bar=False,
    )
    sizes = []
    ReplayBufferTrainer(buffer, batch_size=5, flatten_tensordicts=True).register(trainer)
    trainer.register_op("post_loss", lambda batch: sizes.append(batch.batch_size))
    trainer.train()
    assert len(buffer.storage) == 48
    assert sizes == [torch.Size([5])] * 6
    saved = trainer.state_dict()["hooks"]["replay_buffer"]["replay_buffer"]["storage"]
    assert saved.batch_size == torch.Size([48])


def test_bad_buffer():
    with pytest.raises(TypeError, match=r"must have an sample\(\) method, got list"):
        ReplayBufferTrainer([])
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        ReplayBufferTrainer(PrioritizedBuffer(), 0)
