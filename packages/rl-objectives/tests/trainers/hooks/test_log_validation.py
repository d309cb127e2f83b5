import pytest
import torch
from tensordict.nn import TensorDictModule

from rl_core.exploration import ExplorationType, exploration_type
from rl_core.testing import CountingEnv
from rl_objectives.trainers import LogValidationReward


class GreedyPolicy(TensorDictModule):
    """Adds 1 deterministically, explores (adds 0) otherwise; records the exploration type."""

    def __init__(self):
        super().__init__(torch.nn.Identity(), in_keys=["observation"], out_keys=["action"])
        self.seen = []

    def forward(self, td):
        self.seen.append((exploration_type(), self.training))
        explore = exploration_type() != ExplorationType.DETERMINISTIC
        return td.set("action", torch.full_like(td["observation"], 0 if explore else 1).long())


def test_rolls_out_deterministically_every_interval():
    policy = GreedyPolicy()
    env = CountingEnv(max_count=4, batch_size=[3])
    hook = LogValidationReward(
        record_interval=2,
        record_frames=6,
        policy_exploration=policy,
        environment=env,
        log_keys=[("next", "reward"), ("next", "observation")],
        log_pbar=True,
    )
    outs = [hook() for _ in range(3)]
    assert outs[1] is None
    # The greedy policy counts 1, 2, 3, 4 (done, reset), 1, 2: the mean observation is 13/6.
    assert outs[0] == outs[2]
    assert outs[0]["r_evaluation"] == 1.0
    assert outs[0]["next_observation"] == pytest.approx(13 / 6)
    assert outs[0]["log_pbar"] is True
    assert set(policy.seen) == {(ExplorationType.DETERMINISTIC, False)}
    assert policy.training  # the mode is restored
    assert hook.state_dict() == {"count": 3}


def test_bad_arguments():
    env = CountingEnv()
    with pytest.raises(TypeError, match=r"environment must have a rollout\(\) method"):
        LogValidationReward(
            record_interval=1, record_frames=1, policy_exploration=GreedyPolicy(), environment=3
        )
    with pytest.raises(ValueError, match="record_frames must be a positive int"):
        LogValidationReward(
            record_interval=1, record_frames=0, policy_exploration=GreedyPolicy(), environment=env
        )
    hook = LogValidationReward(
        record_interval=1,
        record_frames=2,
        policy_exploration=GreedyPolicy(),
        environment=env,
        log_keys=["missing"],
    )
    with pytest.raises(KeyError, match="the rollout has no entry 'missing'"):
        hook()
