import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from rl_core.envs import TrajectoryWriter

CHUNK = TrajectoryWriter.chunk


def _step(t: int, *, big: bool = True, extra: bool = False) -> TensorDict:
    td = TensorDict(
        {
            "obs": torch.full((4, 3), float(t)),
            "next": {
                "obs": torch.full((4, 3), t + 1.0),
                "done": torch.zeros(4, 1, dtype=torch.bool),
            },
        },
        batch_size=[4],
    )
    if big:
        td["big"] = torch.full(
            (4, 5000), float(t)
        )  # past TrajectoryWriter.max_block_numel: written directly
    if extra:
        td["extra"] = torch.ones(4)
    return td


def test_batches_hold_every_step_batch_first_and_are_reused():
    steps = 3 * CHUNK + 5
    writer = TrajectoryWriter(steps)
    for offset in (0, 1000):
        writer.start()
        for t in range(steps):
            writer.append(_step(offset + t))
        batch = writer.result()
        assert batch.batch_size == (4, steps)
        expected = torch.arange(offset, offset + steps, dtype=torch.float32)
        for row in range(4):
            assert torch.equal(batch["obs"][row, :, 0], expected)
            assert torch.equal(batch["next", "obs"][row, :, 2], expected + 1)
            assert torch.equal(batch["big"][row, :, -1], expected)
        assert batch["obs"].is_contiguous()
        assert batch["next", "obs"].is_contiguous()


def test_a_step_with_another_structure_switches_to_a_stack_losing_nothing():
    steps = 2 * CHUNK
    writer = TrajectoryWriter(steps)
    writer.start()
    for t in range(steps):
        writer.append(_step(t, extra=t == CHUNK + 3))
    batch = writer.result()
    assert isinstance(batch, LazyStackedTensorDict)
    assert batch.batch_size == (4, steps)
    assert torch.equal(batch.get("obs")[2, :, 1], torch.arange(steps, dtype=torch.float32))
    assert (batch[:, CHUNK + 3]["extra"] == 1).all()


def test_an_unbatched_env_writes_straight_into_the_buffer():
    writer = TrajectoryWriter(CHUNK + 1)
    writer.start()
    for t in range(CHUNK + 1):
        writer.append(TensorDict(obs=torch.full((2,), float(t)), batch_size=[]))
    batch = writer.result()
    assert torch.equal(batch["obs"][:, 0], torch.arange(CHUNK + 1, dtype=torch.float32))


def test_a_shorter_trajectory_is_a_view_of_its_first_steps():
    writer = TrajectoryWriter(10)
    for t in range(4):
        writer.append(_step(t, big=False))
    batch = writer.result()
    assert batch.batch_size == (4, 4)
    assert torch.equal(batch["obs"][0, :, 0], torch.arange(4, dtype=torch.float32))


def test_more_steps_than_declared_are_refused():
    writer = TrajectoryWriter(2)
    writer.append(_step(0, big=False))
    writer.append(_step(1, big=False))
    with pytest.raises(ValueError, match="expected at most 2 steps, got one more"):
        writer.append(_step(2, big=False))
    writer.start()
    writer.append(_step(3, big=False))  # a new trajectory starts counting again


def test_steps_must_be_a_positive_int():
    with pytest.raises(ValueError, match="expected steps >= 1, got 0"):
        TrajectoryWriter(0)


def test_a_lazy_stacked_first_step_keeps_every_step_in_a_stack():
    first = LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(2), b=torch.ones(1))], 0
    )
    writer = TrajectoryWriter(3)
    for _ in range(3):
        writer.append(first.clone())
    batch = writer.result()
    assert batch.batch_size == (2, 3)
    assert (batch.unbind(1)[2].unbind(0)[1]["b"] == 1).all()
