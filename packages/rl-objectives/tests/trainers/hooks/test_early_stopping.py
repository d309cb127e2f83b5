import pytest
import torch

from rl_objectives.trainers import EarlyStopping, LogValidationReward, Trainer


def test_patience_and_threshold():
    stopper = EarlyStopping("loss", patience=2, mode="min", min_delta=0.1)
    assert [stopper.check(v) for v in (1.0, 0.95, 0.5, 0.45, 0.44)] == [
        False,
        False,
        False,
        False,
        True,
    ]
    assert stopper.best == 0.5
    assert EarlyStopping("r", threshold=3.0).check(3.0)
    assert not EarlyStopping("r", threshold=3.0).check(2.9)


def test_stops_the_trainer_when_validation_reward_stalls(tiny):
    # CountingEnv pays 1 per step whatever the policy: the evaluation reward never improves.
    collector = tiny.Collector(tiny.env(), tiny.random_policy, 8)
    loss = tiny.Loss(tiny.value_network(0))
    trainer = Trainer(
        collector, 10_000, loss, torch.optim.Adam(loss.parameters()), progress_bar=False
    )
    LogValidationReward(
        record_interval=2,
        record_frames=5,
        policy_exploration=tiny.random_policy,
        environment=tiny.env(),
    ).register(trainer)
    stopper = EarlyStopping("r_evaluation", patience=3)
    stopper.register(trainer)
    trainer.train()
    # Evaluations at batches 1, 3, 5, 7: the first sets the best, three more do not improve.
    assert trainer.optim_count == 7
    assert trainer.stop_reason.startswith("EarlyStopping: r_evaluation=1 (best 1")
    assert stopper.state_dict() == {"best": 1.0, "bad_checks": 3, "last_checked_frame": 7 * 16}


def test_bad_arguments():
    with pytest.raises(ValueError, match="give a patience, a threshold or both"):
        EarlyStopping("r")
    with pytest.raises(ValueError, match="mode must be one of"):
        EarlyStopping("r", patience=1, mode="up")
    with pytest.raises(ValueError, match="patience must be a positive int, got 0"):
        EarlyStopping("r", patience=0)
    with pytest.raises(RuntimeError, match=r"attach it with early_stopping\.register\(trainer\)"):
        EarlyStopping("r", patience=1)()
