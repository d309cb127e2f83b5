import pickle

import torch
from tensordict import TensorDict

from rl_envs.batched import _wire
from rl_envs.batched._shared import SharedBuffers
from rl_envs.batched._transport import PipeTransport, SharedMemoryTransport

PATHS = {
    "sent": [("action",), ("state",)],
    "step_outputs": [("obs",)],
    "reset_outputs": [("obs",)],
    "masks": [("_reset",)],
}
BATCH = torch.Size([2])


def _shared():
    templates = {
        "sent": [torch.zeros(2, 1), torch.zeros(2, 3)],
        "step_outputs": [torch.zeros(2, 4)],
        "reset_outputs": [torch.zeros(2, 4)],
        "masks": [torch.zeros(2, 1, dtype=torch.bool)],
    }
    return SharedBuffers(templates, PATHS)


def test_shared_memory_inputs_go_to_the_buffers_with_a_presence_byte_per_entry():
    transport = SharedMemoryTransport(_shared(), PATHS, BATCH, None)
    td = TensorDict({"action": torch.ones(2, 1)}, batch_size=BATCH)
    message = transport.inputs(_wire.STEP, td)
    assert message == _wire.STEP + bytes([1, 0])
    assert torch.equal(transport.leaves["sent"][0], torch.ones(2, 1))
    transport.leaves["step_outputs"][0].fill_(3.0)
    out = transport.outputs("step_outputs", {})
    assert torch.equal(out["obs"], torch.full((2, 4), 3.0))
    transport.leaves["step_outputs"][0].fill_(4.0)
    assert out["obs"][0, 0] == 3.0  # outputs are copies, not views of the buffers


def test_pipe_inputs_carry_each_workers_row():
    transport = PipeTransport(PATHS, BATCH, None)
    td = TensorDict({"action": torch.tensor([[1.0], [2.0]])}, batch_size=BATCH)
    messages = transport.inputs(_wire.STEP, td)
    rows = [pickle.loads(m[len(_wire.STEP) :]) for m in messages]
    assert [row["action"].item() for row in rows] == [1.0, 2.0]
    replies = {i: pickle.dumps(TensorDict({"obs": torch.full((4,), float(i))})) for i in (0, 1)}
    assert transport.outputs("step_outputs", replies)["obs"][:, 0].tolist() == [0.0, 1.0]


def test_merge_reset_rows_puts_reset_rows_in_place():
    transport = PipeTransport(PATHS, BATCH, None)
    next_root = TensorDict({"obs": torch.zeros(2, 4)}, batch_size=BATCH)
    pending = {1: TensorDict({"obs": torch.ones(4)})}
    merged = transport.merge_reset_rows(next_root, pending)
    assert merged["obs"].sum(-1).tolist() == [0.0, 4.0]
