import pytest
import torch
from tensordict import TensorDict

from rl_core.envs import RandomPolicy, check_env_specs
from rl_core.specs import Bounded, Composite, Unbounded
from rl_core.testing import CountingEnv


@pytest.mark.parametrize("batch_size", [(), (3,), (2, 2)])
def test_counting_env_passes(batch_size):
    check_env_specs(CountingEnv(batch_size=batch_size), seed=1)


class _Wrong(CountingEnv):
    def __init__(self, mistake):
        super().__init__()
        self.mistake = mistake

    def _step(self, td):
        out = super()._step(td)
        if self.mistake == "shape":
            out["observation"] = torch.zeros(2)
        elif self.mistake == "dtype":
            out["observation"] = torch.zeros(1, dtype=torch.int64)
        elif self.mistake == "extra":
            out["secret"] = torch.zeros(1)
        elif self.mistake == "bounds":
            self.observation_spec = Composite(observation=Bounded(0.0, 0.5, shape=(1,)))
        return out


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        ("shape", r"at step 0: entry \('next', 'observation'\) has shape \(2,\), expected \(1,\)"),
        (
            "dtype",
            r"at step 0: entry \('next', 'observation'\) has dtype torch.int64, expected torch.float32",
        ),
        ("extra", r"In the rollout, not in the specs: \[\"\('next', 'secret'\)\"\]"),
        (
            "bounds",
            r"at step \d+: entry \('next', 'observation'\): Bounded.assert_is_in: value is outside the bounds",
        ),
    ],
)
def test_a_wrong_env_fails_with_a_precise_message(mistake, message):
    # The random actions come from torch's global generator: seeded, the count leaves the
    # "bounds" spec within the rollout whatever ran before (with all actions 0 it would not).
    torch.manual_seed(0)
    with pytest.raises(ValueError, match=message):
        check_env_specs(_Wrong(mistake))


def test_missing_entry_is_named():
    env = CountingEnv()
    env.observation_spec = Composite(
        observation=Unbounded(shape=(1,)), velocity=Unbounded(shape=(1,))
    )
    with pytest.raises(
        ValueError,
        match=r"In the specs, not in the rollout: \[\"\('next', 'velocity'\)\", 'velocity'\]",
    ):
        check_env_specs(env)


def test_random_policy():
    policy = RandomPolicy(Composite(a=Bounded(0, 1, shape=(2,)), b=Unbounded(shape=(3,))))
    td = policy(TensorDict())
    assert td["a"].shape == (2,)
    assert td["b"].shape == (3,)
    with pytest.raises(TypeError, match=r"RandomPolicy: expected a TensorSpec, got int"):
        RandomPolicy(3)


class _MaskedActionEnv(CountingEnv):
    """Only action 1 is legal after the first step; the mask lives on the action spec."""

    def _step(self, td):
        self.action_spec.update_mask(torch.tensor([False, True]))
        return super()._step(td)


def test_actions_recorded_before_a_mask_change_are_checked_against_the_whole_space():
    env = _MaskedActionEnv(max_count=100)
    torch.manual_seed(0)
    check_env_specs(env, max_steps=10)  # early random actions may be 0, illegal later on
    assert env.action_spec.mask is not None


def test_cuda_without_index_matches_cuda_zero():
    from rl_core.envs._spec_checks import _same_device

    assert _same_device(torch.device("cuda", 0), torch.device("cuda"))
    assert _same_device(torch.device("cpu"), torch.device("cpu"))
    assert not _same_device(torch.device("cuda", 1), torch.device("cuda", 0))
    assert not _same_device(torch.device("cpu"), torch.device("cuda"))
