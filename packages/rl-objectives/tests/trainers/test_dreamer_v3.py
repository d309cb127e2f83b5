"""DreamerV3Optimizer, DreamerV3UpdateRatio and DreamerV3OptimizationStepper against
hand-written references."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from tensordict import TensorDict

from rl_objectives import SoftUpdate
from rl_objectives.trainers import (
    DreamerV3OptimizationStepper,
    DreamerV3Optimizer,
    DreamerV3UpdateRatio,
    Trainer,
)

# -- the optimizer -----------------------------------------------------------------------------


def _reference_updates(params, grads_per_step, *, lr, agc, pmin, beta1, beta2, eps, warmup):
    """DreamerV3's AGC -> RMS -> momentum -> warm-up, in plain Python floats per element."""
    params = [list(p) for p in params]
    rms = [[0.0] * len(p) for p in params]
    mom = [[0.0] * len(p) for p in params]
    for t, grads in enumerate(grads_per_step, start=1):
        lr_t = lr * (min(1.0, (t - 1) / warmup) if warmup else 1.0)
        for i, (p, g) in enumerate(zip(params, grads)):
            g = list(g)
            if agc:
                limit = agc * max(math.sqrt(sum(x * x for x in p)), pmin)
                gnorm = math.sqrt(sum(x * x for x in g))
                g = [x * limit / max(gnorm, limit) for x in g]
            for j, x in enumerate(g):
                rms[i][j] = beta2 * rms[i][j] + (1 - beta2) * x * x
                u = x / (math.sqrt(rms[i][j] / (1 - beta2**t)) + eps)
                mom[i][j] = beta1 * mom[i][j] + (1 - beta1) * u
                p[j] -= lr_t * mom[i][j] / (1 - beta1**t)
    return params


def test_optimizer_matches_the_hand_written_reference():
    settings = {"lr": 0.1, "agc": 0.3, "parameter_norm_min": 1e-3, "beta1": 0.9,
                "beta2": 0.99, "eps": 1e-8, "warmup_steps": 2}  # fmt: skip
    a = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64))
    b = torch.nn.Parameter(torch.tensor([[0.001, 0.0]], dtype=torch.float64))  # norm < pmin
    idle = torch.nn.Parameter(torch.tensor([3.0], dtype=torch.float64))  # never has a grad
    opt = DreamerV3Optimizer([a, b, idle], **settings)
    grads = [
        ([0.5, 4.0, -1.0], [2.0, -1.0]),  # clipped: |g| > 0.3 |a|
        ([0.01, 0.02, -0.03], [0.0, 1e-5]),  # a's grad under the limit: unclipped
        ([-1.0, 0.0, 2.0], [0.5, 0.5]),
    ]
    for ga, gb in grads:
        a.grad = torch.tensor(ga, dtype=torch.float64)
        b.grad = torch.tensor([gb], dtype=torch.float64)
        opt.step()
    ref_a, ref_b = _reference_updates(
        [[1.0, -2.0, 0.5], [0.001, 0.0]], grads, lr=0.1, agc=0.3, pmin=1e-3, beta1=0.9,
        beta2=0.99, eps=1e-8, warmup=2,
    )  # fmt: skip
    torch.testing.assert_close(a.detach(), torch.tensor(ref_a, dtype=torch.float64))
    torch.testing.assert_close(b.detach(), torch.tensor([ref_b], dtype=torch.float64))
    assert idle.item() == 3.0
    assert opt.param_groups[0]["step"] == 3


def test_first_warmup_update_has_zero_learning_rate_and_state_resumes():
    w = torch.nn.Parameter(torch.tensor([1.0, -1.0]))
    opt = DreamerV3Optimizer([w], lr=0.5, warmup_steps=4)
    w.grad = torch.tensor([1.0, 1.0])
    opt.step()
    assert w.detach().tolist() == [1.0, -1.0]  # lr * (1 - 1) / 4 = 0
    saved = copy.deepcopy(opt.state_dict())  # torch's state_dict shares the moment tensors
    w2 = torch.nn.Parameter(w.detach().clone())
    opt2 = DreamerV3Optimizer([w2], lr=0.5, warmup_steps=4)
    opt2.load_state_dict(saved)
    for p, o in ((w, opt), (w2, opt2)):
        p.grad = torch.tensor([0.2, -0.4])
        o.step()
    torch.testing.assert_close(w2, w, rtol=0, atol=0)


def test_parameter_groups_override_and_count_their_own_steps():
    a = torch.nn.Parameter(torch.ones(2))
    b = torch.nn.Parameter(torch.ones(2))
    opt = DreamerV3Optimizer([{"params": [a], "lr": 1.0}, {"params": [b]}], lr=0.0,
                             warmup_steps=0, agc=0.0)  # fmt: skip
    a.grad = torch.ones(2)
    b.grad = torch.ones(2)
    opt.step()
    a.grad = torch.ones(2)
    b.grad = None
    opt.step()
    assert b.detach().tolist() == [1.0, 1.0]  # lr 0
    assert [g["step"] for g in opt.param_groups] == [2, 1]
    torch.testing.assert_close(a.detach(), torch.full((2,), -1.0))  # two normalised unit steps


def test_optimizer_refuses_bad_settings_and_missing_gradients():
    w = torch.nn.Parameter(torch.ones(1))
    with pytest.raises(ValueError, match=r"beta1 must be a number in \[0, 1\), got 1.0"):
        DreamerV3Optimizer([w], beta1=1.0)
    with pytest.raises(ValueError, match="lr must be a number >= 0, got -1"):
        DreamerV3Optimizer([w], lr=-1)
    with pytest.raises(ValueError, match=r"warmup_steps must be an int >= 0, got 1\.5"):
        DreamerV3Optimizer([w], warmup_steps=1.5)
    with pytest.raises(RuntimeError, match="no parameter has a gradient"):
        DreamerV3Optimizer([w]).step()


# -- the update ratio --------------------------------------------------------------------------


def _reference_ratio(ratio, counts):
    """One update at the first call, then floor(ratio * records) with the remainder carried."""
    out, owed_from = [], None
    for count in counts:
        if owed_from is None:
            out.append(1)
            owed_from = count
            continue
        n = math.floor((count - owed_from) * ratio)
        owed_from += n / ratio
        out.append(n)
    return out


@pytest.mark.parametrize(
    ("ratio", "counts", "expected"),
    [
        (0.25, [4, 6, 8, 9, 13, 20], [1, 0, 1, 0, 1, 2]),
        (2.0, [1, 2, 5], [1, 2, 6]),
        (0.5, [0, 1, 3, 4], [1, 0, 1, 1]),
    ],
)
def test_update_ratio_matches_hand_counts(ratio, counts, expected):
    assert _reference_ratio(ratio, counts) == expected
    schedule = DreamerV3UpdateRatio(ratio)
    assert [schedule(c) for c in counts] == expected
    # over the run: floor((last - first) * ratio) updates after the first
    assert sum(expected) - 1 == math.floor((counts[-1] - counts[0]) * ratio)


def test_update_ratio_resumes_reset_and_disables():
    schedule = DreamerV3UpdateRatio(0.25)
    assert (schedule(4), schedule(6)) == (1, 0)
    saved = schedule.state_dict()
    expected = schedule(8)
    schedule.load_state_dict(saved)
    assert schedule(8) == expected == 1
    fresh = DreamerV3UpdateRatio(1.0)
    fresh.load_state_dict(saved)
    assert fresh.ratio == 0.25
    schedule.reset(100)
    assert schedule(104) == 1  # counted from 100: no burst for the records before
    assert DreamerV3UpdateRatio(0.0)(10) == 0
    assert DreamerV3UpdateRatio(-1)(10) == 0
    with pytest.raises(TypeError, match=r"ratio must be a number, got '0\.5'"):
        DreamerV3UpdateRatio("0.5")
    with pytest.raises(ValueError, match="record_count must be an int >= 0"):
        DreamerV3UpdateRatio(1.0)(-1)
    with pytest.raises(KeyError, match=r"missing \['counted'\]"):
        DreamerV3UpdateRatio(1.0).load_state_dict({"ratio": 1.0})


# -- the stepper -------------------------------------------------------------------------------


def _batch(seed: int) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    return TensorDict(
        observation=torch.rand(8, 1, generator=g),
        next=TensorDict(observation=torch.rand(8, 1, generator=g), reward=torch.rand(8, 1,
                        generator=g), terminated=torch.zeros(8, 1, dtype=torch.bool),
                        batch_size=[8]),
        batch_size=[8],
    )  # fmt: skip


def _parts(tiny):
    loss = tiny.Loss(tiny.value_network(0))
    opt = DreamerV3Optimizer(loss.parameters(), lr=1e-2, warmup_steps=0)
    return loss, opt, SoftUpdate(loss, eps=0.9)


def test_stepper_step_is_forward_backward_optimizer_then_targets(tiny):
    loss, opt, updater = _parts(tiny)
    ref_loss, ref_opt, ref_updater = _parts(tiny)
    stepper = DreamerV3OptimizationStepper(loss, opt, updater)
    for seed in range(3):
        metrics = stepper.step(None, _batch(seed))
        # by hand
        out = ref_loss(_batch(seed))
        ref_opt.zero_grad()
        out["loss_value"].backward()
        ref_opt.step()
        ref_updater.step()
        assert not metrics["loss_value"].requires_grad
        torch.testing.assert_close(metrics["loss_value"], out["loss_value"].detach())
    for got, ref in zip(loss.state_dict().values(), ref_loss.state_dict().values()):
        torch.testing.assert_close(got, ref, rtol=0, atol=0)  # targets included


def test_stepper_writes_replay_context_back(tiny):
    class WithContext(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(()))

        def forward(self, td):
            latent = td["observation"] * self.w
            return TensorDict(loss=latent.pow(2).mean(), replay_context=latent)

    module = WithContext()
    stepper = DreamerV3OptimizationStepper(module, DreamerV3Optimizer(module.parameters()))
    batch = _batch(0)
    stepper.step(None, batch)
    assert not batch["replay_context"].requires_grad
    torch.testing.assert_close(batch["replay_context"], batch["observation"])  # w was 1


def test_stepper_registered_with_a_trainer_trains_and_saves(tiny):
    loss, opt, updater = _parts(tiny)
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    trainer = Trainer(collector, 16, loss, None, progress_bar=False)
    before = [p.detach().clone() for p in loss.parameters()]
    stepper = DreamerV3OptimizationStepper(loss, opt, updater)
    stepper.register(trainer)
    trainer.train()
    assert opt.param_groups[0]["step"] == 2  # one update per batch: 16 frames, 2 envs x 4 steps
    assert any(not torch.equal(a, b) for a, b in zip(before, loss.parameters()))
    assert set(trainer.state_dict()["hooks"]) == {"optimization_stepper"}
    with pytest.raises(ValueError, match="the trainer's loss_module is not this stepper's"):
        DreamerV3OptimizationStepper(tiny.Loss(tiny.value_network(1)), opt).step(trainer, _batch(0))


def test_stepper_refuses_updates_before_warmup_and_cudagraph_on_cpu(tiny):
    loss, opt, _ = _parts(tiny)
    with pytest.raises(RuntimeError, match=r"call warmup\(sample\) first"):
        DreamerV3OptimizationStepper(loss, opt, compile_train_step=True).step(None, _batch(0))
    with pytest.raises(RuntimeError, match="cudagraph=True captures CUDA work only"):
        DreamerV3OptimizationStepper(loss, opt, cudagraph=True).warmup(_batch(0))
    with pytest.raises(ValueError, match="warmup_steps must be an int >= 1, got 0"):
        DreamerV3OptimizationStepper(loss, opt, warmup_steps=0)
    with pytest.raises(ValueError, match="compile_mode must be one of"):
        DreamerV3OptimizationStepper(loss, opt, compile_mode="fast")


@pytest.mark.compile
def test_compiled_warmup_leaves_state_and_rng_and_steps_as_eager(tiny):
    loss, opt, updater = _parts(tiny)
    ref_loss, ref_opt, ref_updater = _parts(tiny)
    stepper = DreamerV3OptimizationStepper(loss, opt, updater, compile_train_step=True,
                                           warmup_steps=2)  # fmt: skip
    params = [p.detach().clone() for p in loss.parameters()]
    rng = torch.get_rng_state()
    stepper.warmup(_batch(0))
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(a, b) for a, b in zip(params, loss.parameters()))
    assert opt.param_groups[0]["step"] == 0
    eager = DreamerV3OptimizationStepper(ref_loss, ref_opt, ref_updater)
    for seed in range(2):
        stepper.step(None, _batch(seed))
        eager.step(None, _batch(seed))
    for got, ref in zip(loss.parameters(), ref_loss.parameters()):
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
