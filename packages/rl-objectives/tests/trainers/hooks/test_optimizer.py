import pytest
import torch
from tensordict import TensorDict

from rl_objectives.trainers import OptimizerHook, Trainer


def test_steps_only_its_terms_and_logs_the_norm_before_clipping():
    a = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    b = torch.nn.Parameter(torch.tensor([1.0]))
    hook_a = OptimizerHook(torch.optim.SGD([a], lr=0.1), ["loss_a"])
    hook_b = OptimizerHook(torch.optim.SGD([b], lr=0.1), ["loss_b"])
    hook_a.clip_norm, hook_b.index = 1.0, 1
    losses = TensorDict(loss_a=(a * a).sum() / 2, loss_b=(b * b).sum() / 2, other=a.sum())
    out_a = hook_a(losses)
    out_b = hook_b(losses)
    # Hand-computed: grad a = a = (3, 4), norm 5, clipped to norm 1 -> (0.6, 0.8).
    torch.testing.assert_close(out_a["grad_norm"], torch.tensor(5.0))
    torch.testing.assert_close(a.detach(), torch.tensor([3.0 - 0.06, 4.0 - 0.08]))
    # grad b = b = 1, no clipping for this one.
    torch.testing.assert_close(out_b["grad_norm_1"], torch.tensor(1.0))
    torch.testing.assert_close(b.detach(), torch.tensor([0.9]))


def test_clip_by_value():
    w = torch.nn.Parameter(torch.tensor([3.0, -0.1]))
    hook = OptimizerHook(torch.optim.SGD([w], lr=1.0))
    hook.clip_norm, hook.clip_grad_norm = 0.5, False
    hook(TensorDict(loss=(w * w).sum() / 2))  # grad (3, -0.1) -> clipped (0.5, -0.1)
    torch.testing.assert_close(w.detach(), torch.tensor([2.5, 0.0]))


def test_two_optimizers_in_a_trainer_with_their_state_saved(tiny):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    loss = tiny.Loss(tiny.value_network(0))
    params = list(loss.parameters())
    first = torch.optim.Adam(params[:2], lr=1e-2)
    second = torch.optim.Adam(params[2:], lr=1e-2)
    trainer = Trainer(collector, 16, loss, None, progress_bar=False)
    OptimizerHook(first).register(trainer)
    OptimizerHook(second).register(trainer)
    before = [p.detach().clone() for p in params]
    trainer.train()
    assert all(not torch.equal(b, p) for b, p in zip(before, params))
    assert {"grad_norm", "grad_norm_1"} <= set(trainer.latest_logs)
    state = trainer.state_dict()["hooks"]
    assert set(state) == {"optimizer_0", "optimizer_1"}
    assert state["optimizer_1"]["optimizer"]["state"][0]["step"] == 2  # 2 batches of 2 x 4


def test_errors(tiny):
    w = torch.nn.Parameter(torch.zeros(()))
    with pytest.raises(TypeError, match=r"optimizer must be a torch\.optim\.Optimizer, got list"):
        OptimizerHook([w])
    with pytest.raises(ValueError, match="loss_components is empty"):
        OptimizerHook(torch.optim.SGD([w], lr=1.0), [])
    with pytest.raises(KeyError, match=r"loss_components \['loss_x'\] are not in the loss output"):
        OptimizerHook(torch.optim.SGD([w], lr=1.0), ["loss_x"])(TensorDict(loss_a=w))
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 4)
    trainer = Trainer(collector, 8, tiny.Loss(tiny.value_network(0)), None, progress_bar=False)
    with pytest.raises(ValueError, match="no optimizer: build the trainer with optimizer="):
        trainer.train()
