"""GRPOTrainer: the optimisation schedule by hand, and a GRPO run on the tiny chat model that
pushes its weights into a separate generating copy."""

import copy
import math

import pytest
import torch
from tensordict import TensorDict

from rl_core import Transform, TransformedEnv
from rl_llm.collectors import LLMCollector, TransformersWeightUpdater
from rl_llm.envs import DatasetChatEnv
from rl_llm.modules import TransformersWrapper
from rl_llm.objectives import GRPOLoss, MCAdvantage
from rl_llm.trainers import GRPOTrainer


class Linear(torch.nn.Module):
    """loss_objective = -mean over rows of x . w, so the gradient is -mean(x)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))

    def forward(self, td):
        value = -(td["x"] * self.w).sum(-1).mean()
        return TensorDict(loss_objective=value, kl_approx=value.detach() * 0 + 0.5)


class Counter:
    def __init__(self):
        self.calls = 0

    def update_weights(self):
        self.calls += 1


class Records:
    def __init__(self):
        self.rows = []

    def log_scalar(self, name, value, step=None):
        self.rows.append((name, value, step))


class FifoBuffer:
    """A small list-backed buffer: sample() returns the oldest rows."""

    def __init__(self):
        self.rows = []

    def extend(self, td):
        self.rows.extend(td.unbind(0))

    def sample(self, n):
        return torch.stack(self.rows[:n])

    def empty(self):
        self.rows = []


def _batch(*rows):
    return TensorDict(
        x=torch.tensor(rows, dtype=torch.float64),
        next=TensorDict(reward=torch.ones(len(rows), 1), batch_size=[len(rows)]),
        batch_size=[len(rows)],
    )


def test_accumulation_clipping_sync_and_logs_by_hand():
    module, sender, logger = Linear(), Counter(), Records()
    batches = [_batch([1.0, 0.0], [3.0, 0.0]), _batch([0.0, 4.0], [0.0, 2.0]), _batch([9.0, 9.0])]
    trainer = GRPOTrainer(
        collector=batches,
        total_frames=4,
        optim_steps_per_batch=1,
        loss_module=module,
        optimizer=torch.optim.SGD(module.parameters(), lr=1.0),
        gradient_accumulation_steps=2,
        clip_norm=10.0,
        weight_sync_sender=sender,
        logger=logger,
        log_interval=2,
    )
    trainer.train()
    # Two micro-batches, one step: w = -lr * (g1 + g2) / 2 with g1 = -(2, 0), g2 = -(0, 3).
    assert module.w.tolist() == [1.0, 1.5]
    assert (trainer.collected_frames, trainer.optim_steps, sender.calls) == (4, 1, 1)
    assert [log["optim_steps"] for log in trainer.logs] == [0.0, 1.0]
    assert trainer.logs[1]["loss_objective"] == 0.0  # w was 0 when the loss was computed
    assert trainer.logs[1]["kl_approx"] == 0.5
    assert trainer.logs[1]["grad_norm"] == pytest.approx(math.hypot(1.0, 1.5))
    assert ("reward", 1.0, 2) in logger.rows
    assert ("optim_steps", 1.0, 4) in logger.rows

    # Clipping: a gradient of norm 5 is cut to norm 1.
    module = Linear()
    GRPOTrainer(
        collector=[_batch([3.0, 4.0])],
        total_frames=1,
        optim_steps_per_batch=1,
        loss_module=module,
        optimizer=torch.optim.SGD(module.parameters(), lr=1.0),
        clip_norm=1.0,
    ).train()
    assert module.w.tolist() == pytest.approx([0.6, 0.8])


def test_replay_buffer_is_sampled_and_emptied_on_each_push():
    module, sender, buffer = Linear(), Counter(), FifoBuffer()
    trainer = GRPOTrainer(
        collector=[_batch([1.0, 0.0], [0.0, 1.0], [5.0, 5.0]), _batch([2.0, 2.0])],
        total_frames=10,
        optim_steps_per_batch=1,
        num_epochs=1,
        loss_module=module,
        optimizer=torch.optim.SGD(module.parameters(), lr=1.0),
        replay_buffer=buffer,
        batch_size=2,
        clip_norm=None,
        weight_sync_sender=sender,
        empty_replay_buffer_on_weight_update=True,
    )
    trainer.train()
    # First step reads the two oldest rows (mean (0.5, 0.5)); the push empties the buffer, so
    # the second step reads the second batch's row alone.
    assert module.w.tolist() == [2.5, 2.5]
    assert (sender.calls, buffer.rows) == (2, [])


def test_bad_arguments_are_refused():
    module = Linear()
    optim = torch.optim.SGD(module.parameters(), lr=1.0)
    kwargs = dict(collector=[], total_frames=1, optim_steps_per_batch=1, loss_module=module)
    with pytest.raises(ValueError, match=r"expected integers >= 1, got \{'num_epochs': 0\}"):
        GRPOTrainer(**kwargs, optimizer=optim, num_epochs=0)
    with pytest.raises(ValueError, match="expected an optimizer"):
        GRPOTrainer(**kwargs)
    with pytest.raises(TypeError, match="update_weights\\(\\) method, got object"):
        GRPOTrainer(**kwargs, optimizer=optim, weight_sync_sender=object())
    with pytest.raises(ValueError, match="needs a replay_buffer"):
        GRPOTrainer(**kwargs, optimizer=optim, empty_replay_buffer_on_weight_update=True)
    trainer = GRPOTrainer(
        **{
            **kwargs,
            "collector": [_batch([1.0, 1.0])],
            "loss_module": lambda td: TensorDict(objective=td["x"].sum()),
        },
        optimizer=optim,
    )
    with pytest.raises(KeyError, match="has no 'loss_\\*' entry, got keys \\['objective'\\]"):
        trainer.train()


class DigitReward(Transform):
    """Reward: the fraction of digits in the reply; every dialog ends after one turn."""

    def _step(self, tensordict, next_tensordict):
        replies = [str(r) for r in next_tensordict["history"].prompt[..., -1].content]
        scores = [sum(c.isdigit() for c in r) / max(len(r), 1) for r in replies]
        next_tensordict["reward"] = torch.tensor(scores).unsqueeze(-1)
        next_tensordict["done"] = torch.ones_like(next_tensordict["done"])
        next_tensordict["terminated"] = torch.ones_like(next_tensordict["terminated"])
        return next_tensordict


class PushWeights:
    """Copies the trained model into the generating one (an in-process inference engine)."""

    def __init__(self, train_model, infer_model):
        self.train_model, self.updater = train_model, TransformersWeightUpdater(infer_model)

    def update_weights(self):
        self.updater.update(self.train_model)


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only cost time on a loaded machine
    yield
    torch.set_num_threads(threads)


def test_grpo_run_pushes_weights_to_the_generator_and_saves(
    tiny_model, tiny_tokenizer, tmp_path, one_thread
):
    torch.manual_seed(0)
    infer_model = copy.deepcopy(tiny_model)
    start = {k: v.clone() for k, v in infer_model.state_dict().items()}
    env = TransformedEnv(
        DatasetChatEnv(["Say a number"] * 4, batch_size=(4,), repeats=2, shuffle=False),
        DigitReward(),
    )
    sampler = TransformersWrapper(
        infer_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 3, "do_sample": True}
    )
    collector = LLMCollector(
        env, sampler, dialog_turns_per_batch=4, postproc=MCAdvantage(grpo_size=2)
    )
    # GRPOLoss scores with the trained model: its own wrapper, sharing the tokenizer.
    learner = TransformersWrapper(tiny_model, tiny_tokenizer, generate=False)
    loss = GRPOLoss(learner)
    trainer = GRPOTrainer(
        collector=collector,
        total_frames=8,
        optim_steps_per_batch=2,
        loss_module=loss,
        optimizer=torch.optim.Adam(tiny_model.parameters(), lr=1e-3),
        weight_sync_sender=PushWeights(tiny_model, infer_model),
        weight_update_frequency=2,
        save_trainer_file=tmp_path / "trainer.pt",
    )
    assert not tiny_model.training
    trainer.train()
    assert not tiny_model.training  # learned in train mode, handed back in eval mode
    assert (trainer.collected_frames, trainer.optim_steps, trainer.weight_updates) == (8, 4, 2)
    assert len(trainer.logs) == 2
    assert {"reward", "loss_objective", "grad_norm"} <= set(trainer.logs[0])
    for name, value in infer_model.state_dict().items():
        assert torch.equal(value, tiny_model.state_dict()[name])
    assert any(not torch.equal(start[k], v) for k, v in infer_model.state_dict().items())
    saved = torch.load(tmp_path / "trainer.pt", weights_only=False)
    assert (saved["collected_frames"], saved["optim_steps"]) == (8, 4)
    fresh = GRPOTrainer(
        collector=[],
        total_frames=1,
        optim_steps_per_batch=1,
        loss_module=loss,
        optimizer=torch.optim.Adam(tiny_model.parameters(), lr=1e-3),
    )
    fresh.load_state_dict(saved)
    assert (fresh.collected_frames, fresh.optim_steps, fresh.weight_updates) == (8, 4, 2)


@pytest.mark.slow
@pytest.mark.learning
def test_grpo_trainer_raises_the_reward_of_a_tiny_model(one_thread):
    """The digit task of integration-tests' GRPO test, trained by GRPOTrainer."""
    from rl_llm.testing import build_tiny_chat_model

    torch.manual_seed(0)
    model, tokenizer = build_tiny_chat_model(seed=0)
    group = 4
    env = TransformedEnv(
        DatasetChatEnv(
            [f"Reply with a number please {i}" for i in range(8)],
            batch_size=(16,),
            repeats=group,
            shuffle=True,
            seed=0,
        ),
        DigitReward(),
    )
    policy = TransformersWrapper(
        model, tokenizer, generate_kwargs={"max_new_tokens": 6, "do_sample": True}
    )
    collector = LLMCollector(
        env, policy, dialog_turns_per_batch=16, postproc=MCAdvantage(grpo_size=group)
    )
    trainer = GRPOTrainer(
        collector=collector,
        total_frames=16 * 24,
        optim_steps_per_batch=2,
        loss_module=GRPOLoss(policy, clip_epsilon=0.2),
        optimizer=torch.optim.Adam(model.parameters(), lr=3e-3),
        clip_norm=None,
    )
    trainer.train()
    rewards = [log["reward"] for log in trainer.logs]
    start, end = sum(rewards[:4]) / 4, sum(rewards[-4:]) / 4
    assert end > start + 0.3, f"reward went from {start:.3f} to {end:.3f}: {rewards}"
