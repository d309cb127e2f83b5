import threading
from concurrent.futures import Future

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    PrioritizedReplayBuffer,
    TensorDictPrioritizedReplayBuffer,
)


def stored_priorities(buffer, n):
    """The sampler's leaves: (priority + eps) ** alpha per item."""
    sampler = buffer.sampler
    return sampler.state_dict()["tree"][sampler._capacity : sampler._capacity + n].double()


def test_sampling_goes_on_while_an_update_is_in_flight_and_the_final_priorities_are_right():
    alpha, eps = 0.7, 1e-8
    buffer = PrioritizedReplayBuffer(
        alpha=alpha,
        beta=0.5,
        eps=eps,
        storage=LazyTensorStorage(8),
        batch_size=16,
        generator=torch.Generator().manual_seed(0),  # (a fixed draw: the last check is exact)
    )
    buffer.extend(torch.arange(8))
    gate = Future()  # the new priorities are still being computed (another thread, a GPU)
    done = buffer.update_priority_async(torch.arange(8), gate)
    # the update is queued and waiting: the buffer samples as before, without waiting
    seen = set()
    for _ in range(50):
        seen.update(buffer.sample().tolist())
    assert not done.done()
    assert seen == set(range(8))  # every item still drawn: the old priorities (all 1)
    new = torch.tensor([0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 1.0, 0.0])
    gate.set_result(new)
    assert done.result(timeout=30) is None
    # float64 reference from the definition: p_i = (priority_i + eps) ** alpha
    expected = (new.double() + eps) ** alpha
    torch.testing.assert_close(stored_priorities(buffer, 8), expected, rtol=1e-6, atol=0)
    assert set(buffer.sample(64).tolist()) <= {3, 6}  # others have p = 1e-8 ** 0.7 ~ 2.5e-6


def test_updates_apply_in_queue_order_from_copies_taken_at_the_call():
    buffer = TensorDictPrioritizedReplayBuffer(
        alpha=1.0, beta=1.0, storage=LazyTensorStorage(6), batch_size=6
    )
    buffer.extend(TensorDict({"x": torch.arange(6.0)}, [6]))
    batch = buffer.sample()
    batch["td_error"] = torch.full((6,), 2.0)
    first = buffer.update_tensordict_priority_async(batch)
    batch["td_error"].fill_(50.0)  # changed after the call: the queued update kept 2.0
    second = buffer.update_priority_async(torch.tensor([4]), 5.0)
    later = [buffer.update_priority_async(torch.tensor([i]), float(i)) for i in (1, 2)]
    buffer.wait_priorities()
    assert all(f.done() for f in [first, second, *later])
    # items the batch did not draw keep their initial priority 1; then the queued updates
    # in order: the batch's items 2.0, item 4 5.0, item 1 1.0, item 2 2.0 (alpha 1, eps 1e-8)
    expected = torch.ones(6, dtype=torch.float64)
    expected[torch.unique(batch["index"])] = 2.0
    expected[4], expected[1], expected[2] = 5.0, 1.0, 2.0
    torch.testing.assert_close(stored_priorities(buffer, 6), expected + 1e-8, rtol=1e-6, atol=0)


def test_a_bad_update_raises_from_its_future_and_empty_waits_for_the_queue():
    buffer = PrioritizedReplayBuffer(alpha=1.0, beta=1.0, storage=LazyTensorStorage(4))
    buffer.extend(torch.arange(4))
    bad = buffer.update_priority_async(torch.tensor([9]), 1.0)
    with pytest.raises(IndexError, match=r"\[0, 4\)"):
        bad.result(timeout=30)
    negative = buffer.update_priority_async(torch.tensor([0]), -1.0)
    with pytest.raises(ValueError, match="expected priorities >= 0"):
        negative.result(timeout=30)
    gate = Future()
    pending = buffer.update_priority_async(torch.tensor([1]), gate)
    threading.Timer(0.2, gate.set_result, args=(torch.tensor([4.0]),)).start()
    buffer.empty()  # waits for the queued update (applied to the items it was meant for)
    assert pending.done()
    assert len(buffer) == 0
