import torch
from tensordict import LazyStackedTensorDict, TensorDict

from rl_collectors._writer import CHUNK, BatchWriter


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
        td["big"] = torch.full((4, 5000), float(t))  # past MAX_BLOCK_NUMEL: written directly
    if extra:
        td["extra"] = torch.ones(4)
    return td


def test_batches_hold_every_step_batch_first_and_are_reused():
    steps = 3 * CHUNK + 5
    writer = BatchWriter(steps)
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
    writer = BatchWriter(steps)
    writer.start()
    for t in range(steps):
        writer.append(_step(t, extra=t == CHUNK + 3))
    batch = writer.result()
    assert isinstance(batch, LazyStackedTensorDict)
    assert batch.batch_size == (4, steps)
    assert torch.equal(batch.get("obs")[2, :, 1], torch.arange(steps, dtype=torch.float32))
    assert (batch[:, CHUNK + 3]["extra"] == 1).all()


def test_an_unbatched_env_writes_straight_into_the_buffer():
    writer = BatchWriter(CHUNK + 1)
    writer.start()
    for t in range(CHUNK + 1):
        writer.append(TensorDict(obs=torch.full((2,), float(t)), batch_size=[]))
    batch = writer.result()
    assert torch.equal(batch["obs"][:, 0], torch.arange(CHUNK + 1, dtype=torch.float32))
