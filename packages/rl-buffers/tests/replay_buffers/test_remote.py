"""RemoteTensorDictReplayBuffer: driven through torch.distributed.rpc with a remote reference,
as TorchRL's; a TensorDictReplayBuffer when used locally."""

import socket

import pytest
import torch
from tensordict import TensorDict
from torch.distributed import rpc

from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer
from rl_buffers.replay_buffers import RemoteTensorDictReplayBuffer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_use_is_a_tensordict_replay_buffer():
    rb = RemoteTensorDictReplayBuffer(storage=LazyTensorStorage(10), batch_size=3)
    assert isinstance(rb, TensorDictReplayBuffer)
    rb.extend(TensorDict(obs=torch.arange(5.0), batch_size=[5]))
    assert len(rb) == 5
    assert rb.sample()["obs"].shape == (3,)


@pytest.mark.skipif(not rpc.is_available(), reason="torch.distributed.rpc is not built in")
def test_extend_and_sample_through_an_rref(tmp_path):
    options = rpc.TensorPipeRpcBackendOptions(
        init_method=f"tcp://127.0.0.1:{_free_port()}", num_worker_threads=4
    )
    rpc.init_rpc("buffer", rank=0, world_size=1, rpc_backend_options=options)
    try:
        rref = rpc.remote(
            "buffer",
            RemoteTensorDictReplayBuffer,
            kwargs={"storage": LazyTensorStorage(10), "batch_size": 4},
        )
        data = TensorDict(obs=torch.arange(6.0), batch_size=[6])
        index = rpc.rpc_sync(rref.owner(), RemoteTensorDictReplayBuffer.extend, args=(rref, data))
        assert index.tolist() == [0, 1, 2, 3, 4, 5]
        batch = rpc.rpc_sync(rref.owner(), RemoteTensorDictReplayBuffer.sample, args=(rref,))
        assert batch["obs"].shape == (4,)
        assert set(batch["obs"].tolist()) <= set(range(6))
        rpc.rpc_sync(rref.owner(), RemoteTensorDictReplayBuffer.empty, args=(rref,))
        assert len(rref.local_value()) == 0
    finally:
        rpc.shutdown()
