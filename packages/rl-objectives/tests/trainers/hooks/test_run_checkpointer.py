import torch

from rl_objectives import HardUpdate
from rl_objectives.trainers import DQNTrainer, RunCheckpointer


def make(tiny, directory, total):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    trainer = DQNTrainer(
        collector, total, loss, torch.optim.Adam(loss.parameters(), lr=1e-2),
        replay_buffer=tiny.Buffer(), batch_size=4, progress_bar=False,
        target_net_updater=HardUpdate(loss, value_network_update_interval=3),
    )  # fmt: skip
    checkpointer = RunCheckpointer(directory, interval=16, keep_last=2)
    checkpointer.register(trainer)
    return trainer, loss, checkpointer


def test_resumes_exactly_from_the_last_checkpoint(tiny, tmp_path):
    straight, straight_loss, _ = make(tiny, tmp_path / "a", 64)
    straight.train()

    first, _, _ = make(tiny, tmp_path / "b", 40)  # stops after 5 batches: saved at 16 and 32
    first.train()
    resumed, resumed_loss, checkpointer = make(tiny, tmp_path / "b", 64)
    assert checkpointer.restore()
    assert resumed.collected_frames == 32  # the last checkpoint, not where the run stopped
    resumed.train()
    for a, b in zip(straight_loss.parameters(), resumed_loss.parameters()):
        assert torch.equal(a, b)  # bitwise: same draws, same order of operations
    kept = [p.name for p in checkpointer.rotation.checkpoints()]
    assert kept == ["checkpoint_000000000048", "checkpoint_000000000064"]


def test_restore_without_checkpoint_is_false(tiny, tmp_path):
    _, _, checkpointer = make(tiny, tmp_path, 16)
    assert checkpointer.restore() is False
