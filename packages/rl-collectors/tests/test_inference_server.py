import threading

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn

from rl_collectors.inference_server import InferenceServer, ThreadingTransport


def linear_policy():
    linear = nn.Linear(3, 2)
    with torch.no_grad():
        linear.weight.copy_(torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]))
        linear.bias.copy_(torch.tensor([0.25, -0.5]))
    return TensorDictModule(linear, ["observation"], ["action"])


def request(i):
    return TensorDict({"observation": torch.tensor([float(i), 1.0, -2.0])}, [])


def test_concurrent_clients_get_their_own_rows_from_batched_calls():
    server = InferenceServer(linear_policy(), max_batch_size=8, min_batch_size=4, timeout=0.2)
    server.start()
    results = {}

    def actor(i):
        results[i] = server.client(timeout=10)(request(i))["action"]

    threads = [threading.Thread(target=actor, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    server.shutdown()
    assert not server.is_alive()
    # By hand: W @ [i, 1, -2] + b = [i + 2 - 6 + 0.25, -i + 0.5 - 0.5].
    for i in range(12):
        assert torch.equal(results[i], torch.tensor([i - 3.75, -float(i)])), i
    assert sum(server.batch_sizes) == 12
    assert max(server.batch_sizes) <= 8
    assert len(server.batch_sizes) < 12  # requests were served together


def test_a_failing_model_fails_the_requests_of_its_batch_and_the_server_goes_on():
    calls = []

    def model(td):
        calls.append(td.batch_size)
        if len(calls) == 1:
            raise ValueError("the policy broke")
        return td.set("action", td["observation"] * 2)

    server = InferenceServer(model).start()
    client = server.client(timeout=10)
    with pytest.raises(ValueError, match="the policy broke"):
        client(request(1))
    assert client(request(1))["action"].tolist() == [2.0, 2.0, -4.0]
    server.update_model(lambda m: None)
    assert server.policy_version == 1
    server.shutdown()
    with pytest.raises(RuntimeError, match="the transport is closed"):
        client(request(1))


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="expected a callable model, got int"):
        InferenceServer(3)
    with pytest.raises(ValueError, match="min_batch_size=5 is above max_batch_size=4"):
        InferenceServer(linear_policy(), max_batch_size=4, min_batch_size=5)
    with pytest.raises(ValueError, match="expected timeout as seconds > 0, got 0"):
        InferenceServer(linear_policy(), timeout=0)
    with pytest.raises(TypeError, match="expected a TensorDict request, got Tensor"):
        ThreadingTransport().submit(torch.zeros(3))
