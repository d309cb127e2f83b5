"""rl-objectives' OfflineToOnlineReplayBufferHook and OfflineToOnlineAnnealHook drive a real
rl_buffers.OfflineToOnlineReplayBuffer in a Trainer: collected batches go online, each
optimisation step trains on a mixed sample, and the offline fraction falls linearly to 0 over
anneal_frames collected frames (hand-computed)."""

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    OfflineToOnlineReplayBuffer,
    ReplayBuffer,
    TensorDictReplayBuffer,
)
from rl_objectives.trainers import (
    OfflineToOnlineAnnealHook,
    OfflineToOnlineReplayBufferHook,
    Trainer,
)


class _CountOffline(torch.nn.Module):
    """A loss that records how many items of each sample came from the offline dataset."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.offline_counts = []

    def forward(self, batch):
        self.offline_counts.append(int(batch["offline"].sum()))
        return TensorDict(loss=(self.w - batch["x"].mean()).pow(2))


def test_hooks_route_batches_online_and_anneal_the_offline_share():
    offline = TensorDictReplayBuffer(storage=LazyTensorStorage(64))
    offline.extend(TensorDict(x=torch.ones(64), offline=torch.ones(64), batch_size=[64]))
    buffer = OfflineToOnlineReplayBuffer(offline, online_capacity=128, offline_fraction=0.5)
    batches = [
        TensorDict(x=torch.zeros(2, 4), offline=torch.zeros(2, 4), batch_size=[2, 4])
        for _ in range(4)
    ]
    loss = _CountOffline()
    trainer = Trainer(batches, 32, loss, torch.optim.SGD(loss.parameters(), lr=0.1),
                      progress_bar=False, optim_steps_per_batch=2)  # fmt: skip
    anneal = OfflineToOnlineAnnealHook(buffer, anneal_frames=32)
    anneal.register(trainer)
    OfflineToOnlineReplayBufferHook(buffer, batch_size=8).register(trainer)
    trainer.train()
    # After 8, 16, 24, 32 frames the fraction is 0.5 * (1 - f / 32): 0.375, 0.25, 0.125, 0;
    # a sample of 8 draws round(fraction * 8) offline items: 3, 2, 1, 0 (two steps per batch).
    assert loss.offline_counts == [3, 3, 2, 2, 1, 1, 0, 0]
    assert buffer.offline_fraction == 0.0
    assert trainer.state_dict()["hooks"]["offline_to_online_anneal"]["frames"] == 32


def test_a_buffer_without_an_offline_fraction_is_refused():
    with pytest.raises(TypeError, match=r"OfflineToOnlineAnnealHook: buffer must be an offline"):
        OfflineToOnlineAnnealHook(ReplayBuffer(storage=LazyTensorStorage(4)), anneal_frames=8)
    with pytest.raises(ValueError, match=r"anneal_frames"):
        OfflineToOnlineAnnealHook(
            OfflineToOnlineReplayBuffer(ReplayBuffer(storage=LazyTensorStorage(4))),
            anneal_frames=0,
        )
