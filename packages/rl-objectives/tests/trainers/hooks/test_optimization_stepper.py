import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import (
    DefaultOptimizationStepper,
    MixedPrecisionOptimizationStepper,
    Trainer,
)


def _train(tiny, stepper_of=None, optim_steps_per_batch=1, **trainer_kwargs):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    optimizer = torch.optim.SGD(loss.parameters(), lr=0.05)
    torch.manual_seed(1)
    if stepper_of is None:
        trainer = Trainer(collector, 16, loss, optimizer, progress_bar=False,
                          optim_steps_per_batch=optim_steps_per_batch, **trainer_kwargs)  # fmt: skip
    else:
        trainer = Trainer(collector, 16, loss, None, progress_bar=False,
                          optim_steps_per_batch=optim_steps_per_batch, **trainer_kwargs)  # fmt: skip
        stepper_of(optimizer).register(trainer)
    trainer.train()
    return [p.detach().clone() for p in loss.parameters()], trainer


def test_the_default_stepper_steps_as_the_trainers_own_optimizer(tiny):
    reference, _ = _train(tiny, clip_norm=0.5)
    stepped, trainer = _train(tiny, DefaultOptimizationStepper, clip_norm=0.5)
    for ref, got in zip(reference, stepped):
        torch.testing.assert_close(got, ref, rtol=0, atol=0)
    assert "grad_norm" in trainer.latest_logs
    assert set(trainer.state_dict()["hooks"]) == {"optimization_stepper"}


def test_accumulating_two_equal_micro_batches_is_one_step_on_their_mean(tiny):
    # The trainer feeds the same batch to both optimisation steps of a batch: the mean of two
    # equal gradients is that gradient, so two accumulated calls make the plain single step.
    reference, _ = _train(tiny, DefaultOptimizationStepper)
    accumulated, trainer = _train(
        tiny,
        lambda opt: MixedPrecisionOptimizationStepper(
            opt, gradient_accumulation_steps=2, clip_norm=None
        ),
        optim_steps_per_batch=2,
    )
    for ref, got in zip(reference, accumulated):
        torch.testing.assert_close(got, ref)
    assert trainer.state_dict()["hooks"]["optimization_stepper"]["micro_steps"] == 0


def test_clipping_to_clip_norm_after_accumulation():
    w = torch.nn.Parameter(torch.tensor([0.0, 0.0]))
    stepper = MixedPrecisionOptimizationStepper(
        torch.optim.SGD([w], lr=1.0), gradient_accumulation_steps=2, clip_norm=1.0
    )
    assert stepper(TensorDict(loss=(torch.tensor([6.0, 8.0]) * w).sum())) == {}
    logs = stepper(TensorDict(loss=(torch.tensor([6.0, 8.0]) * w).sum()))
    # Mean gradient (6, 8), norm 10, clipped to norm 1: (0.6, 0.8).
    torch.testing.assert_close(logs["grad_norm"], torch.tensor(10.0))
    torch.testing.assert_close(w.detach(), torch.tensor([-0.6, -0.8]))


class _DtypeLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 1)
        self.seen = []

    def forward(self, batch):
        out = self.linear(batch["x"])
        self.seen.append(out.dtype)
        return TensorDict(loss=out.float().pow(2).mean())


def test_mixed_precision_runs_the_loss_forward_under_bfloat16_autocast():
    loss = _DtypeLoss()
    trainer = Trainer([TensorDict(x=torch.ones(4, 2), batch_size=[4])], 4, loss, None,
                      progress_bar=False)  # fmt: skip
    stepper = MixedPrecisionOptimizationStepper(
        torch.optim.SGD(loss.parameters(), lr=0.1), mixed_precision=True
    )
    stepper.register(trainer)
    before = loss.linear.weight.detach().clone()
    trainer.train()
    assert loss.seen == [torch.bfloat16]
    assert loss.linear.weight.dtype == torch.float32
    assert not torch.equal(loss.linear.weight.detach(), before)
    loss.seen.clear()
    loss(TensorDict(x=torch.ones(1, 2), batch_size=[1]))
    assert loss.seen == [torch.float32]  # autocast only inside the trainer's forward


def test_bad_settings_are_refused():
    w = torch.nn.Parameter(torch.zeros(()))
    with pytest.raises(TypeError, match=r"autocast_dtype must be torch.bfloat16 or torch.float16"):
        MixedPrecisionOptimizationStepper(torch.optim.SGD([w], lr=1.0), autocast_dtype=torch.int8)
    with pytest.raises(ValueError, match=r"gradient_accumulation_steps"):
        MixedPrecisionOptimizationStepper(
            torch.optim.SGD([w], lr=1.0), gradient_accumulation_steps=0
        )
    with pytest.raises(TypeError, match=r"optimizer must be a torch.optim.Optimizer, got list"):
        DefaultOptimizationStepper([w])
    trainer = Trainer([], 4, torch.nn.Linear(1, 1), torch.optim.SGD([w], lr=1.0),
                      progress_bar=False)  # fmt: skip
    with pytest.raises(ValueError, match=r"build it with optimizer=None"):
        DefaultOptimizationStepper(torch.optim.SGD([w], lr=1.0)).register(trainer)
