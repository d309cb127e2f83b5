import csv

import pytest
import torch
from tensordict import TensorDict

from rl_objectives import HardUpdate
from rl_objectives.loggers import CSVLogger
from rl_objectives.trainers import (
    HOOK_POINTS,
    CountFramesLog,
    ReplayBufferTrainer,
    TargetNetUpdaterHook,
    Trainer,
)


def make_trainer(tiny, total_frames, *, frames_per_batch=8, optim_steps=1, lr=1e-2, **kwargs):
    collector = tiny.Collector(tiny.env(), tiny.random_policy, frames_per_batch)
    loss = tiny.Loss(tiny.value_network(0))
    optimizer = torch.optim.Adam(loss.parameters(), lr=lr)
    kwargs.setdefault("progress_bar", False)
    trainer = Trainer(
        collector, total_frames, loss, optimizer, optim_steps_per_batch=optim_steps, **kwargs
    )
    return trainer, collector, loss, optimizer


def test_hook_points_fire_in_order(tiny):
    trainer, *_ = make_trainer(tiny, 32, optim_steps=2)  # 2 batches of 2 x 8 frames
    calls = []

    def recorder(point):
        if point in ("batch_process", "pre_epoch", "process_optim_batch", "post_loss", "optimizer"):
            return lambda batch: calls.append(point)
        if point.endswith("_log"):
            return lambda batch: calls.append(point) or {f"{point}_calls": len(calls)}
        return lambda: calls.append(point)

    for point in HOOK_POINTS:
        trainer.register_op(point, recorder(point))
    trainer.train()
    optim = ["process_optim_batch", "post_loss", "optimizer", "post_optim", "post_optim_log"]
    one_batch = [
        "batch_process",
        "pre_steps_log",
        "pre_optim_steps",
        "pre_epoch",
        *optim,
        *optim,
        "post_epoch",
        "post_steps",
        "post_steps_log",
    ]
    assert calls == one_batch * 2
    # What log ops return is logged.
    assert trainer.latest_logs["post_steps_log_calls"] == len(calls)


def test_ops_at_one_point_run_in_registration_order_and_get_kwargs(tiny):
    trainer, *_ = make_trainer(tiny, 16)
    calls = []
    trainer.register_op("post_steps", lambda tag: calls.append(tag), tag="first")
    trainer.register_op("post_steps", lambda tag: calls.append(tag), tag="second")
    trainer.train()
    assert calls == ["first", "second"]


def test_process_ops_replace_the_batch(tiny):
    trainer, *_ = make_trainer(tiny, 16)
    seen = []
    trainer.register_op("process_optim_batch", lambda batch: batch[..., :3])
    trainer.register_op("post_loss", lambda batch: seen.append(batch.batch_size))
    trainer.register_op("batch_process", lambda batch: None)  # None keeps the batch
    trainer.train()
    assert seen == [torch.Size([2, 3])]


def evaluation_loss(loss, collector_batch):
    with torch.no_grad():
        return loss(collector_batch)["loss_value"].item()


def test_optimisation_decreases_the_loss_and_logs_it(tiny, tmp_path):
    logger = CSVLogger("run", log_dir=tmp_path)
    trainer, _, loss, _ = make_trainer(
        tiny, 800, optim_steps=4, lr=3e-2, logger=logger, log_interval=1
    )
    fixed = next(iter(tiny.Collector(tiny.env(), tiny.random_policy, 32)))
    before = evaluation_loss(loss, fixed)
    trainer.train()
    after = evaluation_loss(loss, fixed)
    assert after < 0.2 * before
    with (tmp_path / "run" / "scalars" / "loss_value.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert [int(row["step"]) for row in rows] == list(range(16, 801, 16))
    assert float(rows[-1]["value"]) < 0.2 * float(rows[0]["value"])
    with (tmp_path / "run" / "scalars" / "optim_steps.csv").open() as file:
        assert list(csv.DictReader(file))[-1] == {"step": "800", "value": "200.0"}


def test_frames_are_counted_exactly(tiny):
    # 16 frames per batch: training stops after the batch that reaches 50 frames.
    trainer, collector, *_ = make_trainer(tiny, 50, frame_skip=1)
    counter = CountFramesLog(frame_skip=3)
    counter.register(trainer)
    trainer.train()
    assert trainer.collected_frames == 64 == collector.frames
    assert trainer.optim_count == 4
    assert counter.frame_count == 3 * 64
    assert trainer.latest_logs["n_frames"] == 192


def test_frame_skip_and_collector_mask_count_frames():
    mask = torch.tensor([[True, True, False], [True, False, False]])
    batches = [TensorDict({("collector", "mask"): mask}, batch_size=[2, 3]) for _ in range(3)]
    weight = torch.nn.Parameter(torch.zeros(()))

    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = weight

        def forward(self, td):
            return TensorDict(loss=(self.weight - 1).pow(2))

    loss = Loss()
    trainer = Trainer(
        batches,
        100,
        loss,
        torch.optim.SGD(loss.parameters(), lr=0.1),
        frame_skip=4,
        progress_bar=False,
    )
    trainer.train()
    assert trainer.collected_frames == 3 * 3 * 4  # exhausted collector: 3 batches of 3 valid


def test_stop_ends_training_after_the_current_batch(tiny):
    trainer, *_ = make_trainer(tiny, 10_000)
    trainer.register_op(
        "post_steps", lambda: trainer.stop("enough") if trainer.optim_count == 3 else None
    )
    trainer.train()
    assert (trainer.optim_count, trainer.collected_frames, trainer.stop_reason) == (3, 48, "enough")


def test_clip_norm_bounds_the_gradient_norm(tiny):
    trainer, _, loss, _ = make_trainer(tiny, 16, clip_norm=1e-3)
    norms = []
    trainer.register_op(
        "post_optim",
        lambda: norms.append(
            torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in loss.parameters()]))
        ),
    )
    trainer.train()
    assert norms[0].item() == pytest.approx(1e-3, rel=1e-4)
    assert trainer.latest_logs["grad_norm"] > 1e-3  # the norm before clipping is logged


def test_progress_bar_shows_frames(tiny, capsys):
    trainer, *_ = make_trainer(tiny, 32, progress_bar=True)
    trainer.train()
    assert "32/32" in capsys.readouterr().err


def _params(module):
    return {name: value.detach().clone() for name, value in module.state_dict().items()}


def build_full(tiny, tmp_path, total_frames, seed):
    trainer, _, loss, optimizer = make_trainer(
        tiny, total_frames, optim_steps=3, seed=seed, save_trainer_file=tmp_path / "trainer.pt"
    )
    ReplayBufferTrainer(tiny.Buffer(), batch_size=8, flatten_tensordicts=True).register(trainer)
    TargetNetUpdaterHook(HardUpdate(loss, value_network_update_interval=4)).register(trainer)
    CountFramesLog().register(trainer)
    return trainer, loss, optimizer


def test_checkpoint_then_resume_equals_an_uninterrupted_run(tiny, tmp_path):
    straight, straight_loss, straight_opt = build_full(tiny, tmp_path / "a", 160, seed=0)
    straight.train()

    first, first_loss, _ = build_full(tiny, tmp_path / "b", 80, seed=0)
    first.train()
    assert (tmp_path / "b" / "trainer.pt").is_file()
    halfway = _params(first_loss)

    resumed, resumed_loss, resumed_opt = build_full(tiny, tmp_path / "c", 160, seed=123)
    resumed.load_from_file(tmp_path / "b" / "trainer.pt")
    assert resumed.collected_frames == 80
    resumed.train()

    final = _params(straight_loss)
    assert any(not torch.equal(final[k], halfway[k]) for k in final)  # training moved on
    assert set(final) == set(_params(resumed_loss))
    for name, value in _params(resumed_loss).items():
        assert torch.equal(value, final[name]), name
    assert resumed.collected_frames == straight.collected_frames == 160
    assert resumed.optim_count == straight.optim_count == 30
    assert resumed._modules["count_frames_log"].frame_count == 160
    assert resumed._modules["target_net_updater"].target_params_updater.counter == 30 % 4
    state, expected = resumed_opt.state_dict()["state"], straight_opt.state_dict()["state"]
    for index in expected:
        assert torch.equal(state[index]["exp_avg"], expected[index]["exp_avg"])


def test_resume_without_the_random_state_diverges(tiny, tmp_path):
    # The negative control of the test above: the saved RNG state matters.
    straight, straight_loss, _ = build_full(tiny, tmp_path / "a", 160, seed=0)
    straight.train()
    first, *_ = build_full(tiny, tmp_path / "b", 80, seed=0)
    first.train()
    resumed, resumed_loss, _ = build_full(tiny, tmp_path / "c", 160, seed=123)
    resumed.load_from_file(tmp_path / "b" / "trainer.pt")
    torch.manual_seed(123)
    resumed.train()
    final = _params(straight_loss)
    assert any(not torch.equal(v, final[k]) for k, v in _params(resumed_loss).items())


def test_save_trainer_interval(tiny, tmp_path):
    path = tmp_path / "trainer.pt"
    saved_at = []
    trainer, *_ = make_trainer(tiny, 80, save_trainer_file=path, save_trainer_interval=32)
    trainer.register_op(
        "post_steps_log",
        lambda batch: (
            saved_at.append(torch.load(path, weights_only=False)["collected_frames"])
            if path.exists()
            else None
        ),
    )
    trainer.train()
    # Saved after the batches that reach 32 and 64 frames (log ops run before the save),
    # and at the end.
    assert saved_at == [32, 32, 64]
    assert torch.load(path, weights_only=False)["collected_frames"] == 80


def test_bad_arguments(tiny):
    trainer, collector, loss, optimizer = make_trainer(tiny, 16)
    with pytest.raises(TypeError, match="collector must be an iterable"):
        Trainer(object(), 16, loss, optimizer)
    with pytest.raises(ValueError, match="total_frames must be a positive int, got 0"):
        Trainer(collector, 0, loss, optimizer)
    with pytest.raises(TypeError, match=r"loss_module must be an nn\.Module"):
        Trainer(collector, 16, lambda td: td, optimizer)
    with pytest.raises(
        TypeError, match=r"optimizer must be a torch\.optim\.Optimizer or None, got list"
    ):
        Trainer(collector, 16, loss, [])
    with pytest.raises(TypeError, match=r"logger must be an rl_objectives\.loggers\.Logger"):
        Trainer(collector, 16, loss, optimizer, logger="csv")
    with pytest.raises(ValueError, match="clip_norm must be None or >= 0"):
        Trainer(collector, 16, loss, optimizer, clip_norm=-1.0)
    with pytest.raises(ValueError, match="dest must be one of"):
        trainer.register_op("after_everything", lambda: None)
    with pytest.raises(TypeError, match="op must be callable"):
        trainer.register_op("post_steps", 3)
    CountFramesLog().register(trainer)
    with pytest.raises(ValueError, match="already registered as 'count_frames_log'"):
        CountFramesLog().register(trainer)
    with pytest.raises(FileNotFoundError, match="no trainer file at"):
        trainer.load_from_file("/nonexistent/trainer.pt")


def test_loss_outputs_are_checked(tiny):
    batches = [TensorDict(x=torch.ones(2), batch_size=[2])]
    weight = torch.nn.Parameter(torch.zeros(2))

    class Loss(torch.nn.Module):
        def __init__(self, output):
            super().__init__()
            self.weight, self.output = weight, output

        def forward(self, td):
            return self.output(self.weight * td["x"])

    for output, error, match in [
        (lambda v: v.sum(), TypeError, "must return a TensorDict of loss terms, got Tensor"),
        (lambda v: TensorDict(value=v.sum()), ValueError, "no entry whose name starts with 'loss'"),
        (
            lambda v: TensorDict(loss_x=v),
            ValueError,
            r"'loss_x' of Loss must be a scalar, got shape \(2,\)",
        ),
    ]:
        loss = Loss(output)
        trainer = Trainer(batches, 2, loss, torch.optim.SGD([weight], lr=0.1), progress_bar=False)
        with pytest.raises(error, match=match):
            trainer.train()


def test_load_state_dict_needs_the_same_hooks(tiny, tmp_path):
    trainer, *_ = make_trainer(tiny, 16)
    CountFramesLog().register(trainer)
    state = trainer.state_dict()
    other, *_ = make_trainer(tiny, 16)
    with pytest.raises(
        KeyError, match=r"holds hooks \['count_frames_log'\] that are not registered"
    ):
        other.load_state_dict(state)
    with pytest.raises(KeyError, match="the state lacks"):
        other.load_state_dict({"collected_frames": 3})
