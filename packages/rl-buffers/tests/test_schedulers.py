"""Parameter schedulers of a sampler (TorchRL's replay_buffers.scheduler): values written out
by hand for each step."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    LazyTensorStorage,
    PrioritizedSampler,
    RandomSampler,
    ReplayBuffer,
    TensorDictReplayBuffer,
)
from rl_buffers.schedulers import (
    LambdaScheduler,
    LinearScheduler,
    ParameterScheduler,
    SchedulerList,
    StepScheduler,
)


def betas(scheduler, steps):
    out = []
    for _ in range(steps):
        scheduler.step()
        out.append(round(float(scheduler.value), 6))
    return out


def test_linear_reaches_the_final_value_and_holds_it():
    sampler = PrioritizedSampler(8, alpha=0.7, beta=0.4)
    scheduler = LinearScheduler(sampler, "beta", final_value=1.0, num_steps=3)
    # 0.4 + 0.6 * n / 3 for n = 1, 2, 3, then 1.0
    assert betas(scheduler, 5) == [0.6, 0.8, 1.0, 1.0, 1.0]
    decreasing = LinearScheduler(PrioritizedSampler(8, 0.7, 1.0), "alpha", 0.5, num_steps=2)
    assert betas(decreasing, 3) == [0.6, 0.5, 0.5]


def test_step_scheduler_multiplies_or_adds_every_n_steps():
    sampler = PrioritizedSampler(8, alpha=0.8, beta=0.5)
    halving = StepScheduler(sampler, "alpha", gamma=0.5, n_steps=2, min_value=0.15)
    # changes at steps 2, 4, 6: 0.8 -> 0.4 -> 0.2 -> 0.1 clipped to 0.15
    assert betas(halving, 7) == [0.8, 0.4, 0.4, 0.2, 0.2, 0.15, 0.15]
    adding = StepScheduler(sampler, "beta", gamma=0.2, mode="additive", max_value=1.0)
    assert betas(adding, 4) == [0.7, 0.9, 1.0, 1.0]


def test_lambda_scales_the_initial_value():
    sampler = PrioritizedSampler(8, alpha=0.7, beta=0.5)
    scheduler = LambdaScheduler(sampler, "beta", lambda n: 0.5 + 0.25 * n, min_value=0.3)
    # 0.5 * (0.5 + 0.25 n): 0.375, 0.5, 0.625; the initial value stays 0.5
    assert betas(scheduler, 3) == [0.375, 0.5, 0.625]
    shrinking = LambdaScheduler(PrioritizedSampler(8, 0.7, 0.8), "beta", lambda n: 1 / (1 + n),
                                min_value=0.3)  # fmt: skip
    assert betas(shrinking, 3) == [0.4, 0.3, 0.3]  # 0.8 / 2, 0.8 / 3 -> 0.3, 0.8 / 4 -> 0.3


def test_a_buffers_sampler_is_scheduled_and_its_weights_follow():
    buffer = TensorDictReplayBuffer(
        storage=LazyTensorStorage(4), sampler=PrioritizedSampler(4, alpha=1.0, beta=0.0),
        batch_size=4,
    )  # fmt: skip
    buffer.extend(TensorDict(x=torch.arange(4.0), batch_size=[4]))
    buffer.update_priority(torch.arange(4), torch.tensor([1.0, 2.0, 4.0, 8.0]))
    scheduler = LinearScheduler(buffer, "beta", final_value=1.0, num_steps=2)
    torch.manual_seed(0)
    assert (buffer.sample()["priority_weight"] == 1).all()  # beta = 0: all weights 1
    scheduler.step()
    scheduler.step()
    assert buffer.sampler.beta == 1.0
    sample = buffer.sample()
    # beta = 1: w_i = (p_i / min p) ** -1 = 1 / p_i (eps is tiny)
    expected = 1.0 / torch.tensor([1.0, 2.0, 4.0, 8.0])[sample["index"]]
    torch.testing.assert_close(sample["priority_weight"], expected, rtol=1e-4, atol=1e-6)


def test_tensor_parameters_and_scheduler_lists():
    sampler = RandomSampler()
    sampler.temperature = torch.tensor([1.0, 2.0])
    linear = LinearScheduler(sampler, "temperature", final_value=0.0, num_steps=4)
    other = PrioritizedSampler(8, alpha=0.7, beta=0.4)
    both = SchedulerList([linear, StepScheduler(other, "beta", 0.1, mode="additive")])
    both.step()
    both.step()
    assert sampler.temperature.tolist() == [0.5, 1.0]
    assert round(other.beta, 6) == 0.6
    state = both.state_dict()
    both.step()
    both.load_state_dict(state)
    assert linear.step_count == 2
    assert len(SchedulerList(linear)) == 1


def test_state_dict_round_trip_resumes_the_schedule():
    sampler = PrioritizedSampler(8, alpha=0.7, beta=0.2)
    first = LinearScheduler(sampler, "beta", final_value=1.0, num_steps=4)
    first.step()
    state = first.state_dict()
    assert "sampler" not in state
    resumed = LinearScheduler(PrioritizedSampler(8, 0.7, 0.9), "beta", 1.0, num_steps=4)
    resumed.load_state_dict(state)
    assert betas(resumed, 3) == [0.6, 0.8, 1.0]  # from the first scheduler's initial 0.2


def test_bad_input_is_named():
    sampler = PrioritizedSampler(8, alpha=0.7, beta=0.4)
    with pytest.raises(TypeError, match="expected obj to be a ReplayBuffer or a Sampler, got int"):
        LinearScheduler(3, "beta", 1.0, 4)
    with pytest.raises(ValueError, match="PrioritizedSampler has no attribute 'gamma'"):
        LinearScheduler(sampler, "gamma", 1.0, 4)
    with pytest.raises(ValueError, match="expected num_steps to be a positive int, got 0"):
        LinearScheduler(sampler, "beta", 1.0, 0)
    with pytest.raises(ValueError, match="expected mode 'multiplicative' or 'additive', got 'x'"):
        StepScheduler(sampler, "beta", mode="x")
    with pytest.raises(ValueError, match=r"expected min_value <= max_value, got 1 > 0\.5"):
        StepScheduler(sampler, "beta", min_value=1, max_value=0.5)
    with pytest.raises(TypeError, match="expected lambda_fn to be callable"):
        LambdaScheduler(sampler, "beta", 2.0)
    sampler.max_capacity = "8"
    with pytest.raises(TypeError, match=r"PrioritizedSampler\.max_capacity to be a number"):
        LinearScheduler(sampler, "max_capacity", 1, 2)
    with pytest.raises(TypeError, match="expected ParameterScheduler items, got str"):
        SchedulerList(["beta"])
    with pytest.raises(TypeError, match="abstract"):
        ParameterScheduler(sampler, "beta")
    buffer = ReplayBuffer(storage=LazyTensorStorage(2))
    with pytest.raises(ValueError, match="RandomSampler has no attribute 'beta'"):
        LinearScheduler(buffer, "beta", 1.0, 2)
