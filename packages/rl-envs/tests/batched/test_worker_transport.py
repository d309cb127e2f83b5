"""The worker side of ParallelEnv's transports, driven in this process by the parent side."""

import pickle

import pytest
import torch
from tensordict import TensorDict

from rl_core.testing import CountingEnv
from rl_envs.batched import _wire
from rl_envs.batched._shared import SharedBuffers
from rl_envs.batched._transport import PartialReset, PipeTransport, SharedMemoryTransport
from rl_envs.batched._worker_transport import PipeWorker, SharedMemoryWorker, worker_env

FLAGS = [("done",), ("terminated",), ("truncated",)]
PATHS = {
    "sent": [("action",)],
    "step_outputs": [("observation",), ("reward",), *FLAGS],
    "reset_outputs": [("observation",), *FLAGS],
    "masks": [("_reset",)],
}
BATCH = torch.Size([2])


def _shared():
    flag = torch.zeros(2, 1, dtype=torch.bool)
    value = torch.zeros(2, 1)
    templates = {
        "sent": [torch.zeros(2, 1, dtype=torch.int64)],
        "step_outputs": [value, value, flag, flag, flag],
        "reset_outputs": [value, flag, flag, flag],
        "masks": [flag],
    }
    return SharedBuffers(templates, PATHS)


def _pair(kind):
    """The parent side and the workers of one transport, over two CountingEnvs."""
    if kind == "shared":
        shared = _shared()
        parent = SharedMemoryTransport(shared, PATHS, BATCH, None)
    else:
        shared, parent = None, PipeTransport(PATHS, BATCH, None)
    workers = [worker_env(i, CountingEnv(max_count=2 + i), shared, PATHS) for i in range(2)]
    return parent, workers


def _exchange(workers, handler, messages):
    """Each worker handles its message; the replies as the pool gives them (after OK)."""
    if isinstance(messages, bytes):
        messages = [messages] * len(workers)
    return {i: getattr(w, handler)(m[1:]) for i, (w, m) in enumerate(zip(workers, messages))}


def _run(kind):
    parent, workers = _pair(kind)
    out = [parent.outputs("reset_outputs", _exchange(workers, "reset", _reset_message()))]
    action = TensorDict({"action": torch.ones(2, 1, dtype=torch.int64)}, batch_size=BATCH)
    for _ in range(3):
        replies = _exchange(workers, "step_and_reset", parent.inputs(_wire.STEP_AND_RESET, action))
        step, pending = parent.fused_outputs(replies)
        root = TensorDict({"observation": step["observation"]}, batch_size=BATCH)
        for path in FLAGS:
            root.set(path, step.get(path))
        if pending is not None:
            root = parent.merge_reset_rows(root, pending)
        out += [step, root]
    return out


def _reset_message():
    return _wire.RESET + pickle.dumps((False, None, {}))


def test_worker_env_picks_the_workers_transport():
    assert isinstance(_pair("shared")[1][0], SharedMemoryWorker)
    assert isinstance(_pair("pipe")[1][0], PipeWorker)


def test_both_transports_give_the_same_steps_and_resets():
    shared, pipe = _run("shared"), _run("pipe")
    for a, b in zip(shared, pipe):
        assert (a == b.select(*a.keys(True, True))).all()
    # Worker 0 finishes at count 2 (second step) and is reset to 0; worker 1 at count 3.
    observations = [td["observation"].flatten().tolist() for td in shared[1:]]
    assert observations == [[1, 1], [1, 1], [2, 2], [0, 2], [1, 3], [1, 0]]


@pytest.mark.parametrize("kind", ["shared", "pipe"])
def test_a_partial_reset_resets_only_the_masked_worker(kind):
    parent, workers = _pair(kind)
    root = parent.outputs("reset_outputs", _exchange(workers, "reset", _reset_message()))
    action = TensorDict({"action": torch.ones(2, 1, dtype=torch.int64)}, batch_size=BATCH)
    _exchange(workers, "step", parent.inputs(_wire.STEP, action))
    mask = torch.tensor([[False], [True]])
    request = PartialReset(root, [mask], [1], {})

    def send(indices, messages, what):
        chosen = [workers[i] for i in indices]
        if not isinstance(messages, bytes):
            messages = list(messages)
        replies = _exchange(chosen, "reset", messages)
        return {i: replies[k] for k, i in enumerate(indices)}

    out = parent.partial_reset(send, request)
    assert workers[0].root["observation"].item() == 1.0
    assert workers[1].root["observation"].item() == 0.0
    assert out["observation"][1].item() == 0.0


def test_a_step_before_a_reset_names_the_worker():
    _, workers = _pair("pipe")
    with pytest.raises(RuntimeError, match=r"worker 0 \(CountingEnv\): step before reset"):
        workers[0].step(pickle.dumps(TensorDict({"action": torch.ones(1, dtype=torch.int64)})))
