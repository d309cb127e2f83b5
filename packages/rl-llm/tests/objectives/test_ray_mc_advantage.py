import math

import pytest
import torch
from tensordict import TensorDict
from testkit.ray_cluster import local_ray_cluster

from rl_llm.data import Tokens
from rl_llm.objectives import MCAdvantageSelector, RayMCAdvantage

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_cluster():
    """One real local Ray instance on loopback for the module, in a fresh temp dir."""
    with local_ray_cluster("rl-llm-ray-", skip_reason='pip install "rl-llm[ray]"') as ray:
        yield ray


def _dialogs(prompts, rewards, width):
    n = len(prompts)
    return TensorDict(
        query=prompts,
        tokens=Tokens(
            prompt=torch.ones(n, 2, dtype=torch.long),
            response=torch.full((n, width), 7),
            full=torch.cat([torch.ones(n, 2, dtype=torch.long), torch.full((n, width), 7)], -1),
            batch_size=[n],
        ),
        next=TensorDict(
            reward=torch.tensor(rewards).reshape(n, 1),
            done=torch.ones(n, 1, dtype=torch.bool),
            batch_size=[n],
        ),
        batch_size=[n],
    )


def test_two_writers_complete_each_others_groups(ray_cluster):
    first = RayMCAdvantage(grpo_size=2, actor_name="groups")
    second = RayMCAdvantage(grpo_size=2, actor_name="groups")  # the same actor
    # Writer one finishes one response to "a" and one to "b": no group is whole yet.
    assert first(_dialogs(["a", "b"], [1.0, 0.0], width=3)) is None
    assert first.pending() == {"a": 1, "b": 1}
    # Writer two, with longer responses, completes "a"; "c" waits.
    out = second(_dialogs(["a", "c"], [3.0, 5.0], width=5))
    assert list(out["query"]) == ["a", "a"]
    # By hand: returns 1 and 3, mean 2, unbiased std sqrt(2): (-1/sqrt2, 1/sqrt2).
    s = 1 / math.sqrt(2)
    torch.testing.assert_close(
        out["advantage"].squeeze(-1), torch.tensor([-s, s]), atol=1e-5, rtol=1e-5
    )
    # Token entries are padded to the widest response; rewards are the dialogs' own.
    assert out["tokens"].response.shape == (2, 5)
    assert out["tokens"].response[0].tolist() == [7, 7, 7, 0, 0]
    assert out["next", "reward"].squeeze(-1).tolist() == [1.0, 3.0]
    assert second.pending() == {"b": 1, "c": 1}
    second.close()  # not its actor: left running for the first writer
    assert first.pending() == {"b": 1, "c": 1}
    first.close()


def test_returns_bounds_and_selection(ray_cluster):
    adv = RayMCAdvantage(
        grpo_size=2,
        trajectory_return="max",
        candidate_group_size=3,
        keep_return_bounds=(0.0, 1.0),
        candidate_selector=MCAdvantageSelector(),
    )
    rewards = [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]  # returns by max: 1, 0, 0
    batch = _dialogs(["a"] * 3, [0.0] * 3, width=1)
    batch.set(("next", "reward"), torch.tensor(rewards))
    out = adv(batch)
    # The balanced selector keeps the right and one wrong response: returns (1, 0).
    assert sorted(out["next", "reward"].amax(-1).tolist()) == [0.0, 1.0]
    torch.testing.assert_close(
        out["advantage"].squeeze(-1).sort().values,
        torch.tensor([-1 / math.sqrt(2), 1 / math.sqrt(2)]),
        atol=1e-5,
        rtol=1e-5,
    )
    # A group whose mean return is outside (0, 1) is dropped: all wrong.
    assert adv(_dialogs(["b"] * 3, [0.0] * 3, width=1)) is None
    adv.close()


def test_bad_arguments_and_inputs_are_named(ray_cluster):
    with pytest.raises(ValueError, match="expected trajectory_return in"):
        RayMCAdvantage(grpo_size=2, trajectory_return="median")
    with pytest.raises(ValueError, match="expected grpo_size >= 1"):
        RayMCAdvantage(grpo_size=0)
    adv = RayMCAdvantage(grpo_size=2)
    batch = _dialogs(["a", "a"], [1.0, 0.0], width=1)
    batch.set(("next", "done"), torch.tensor([[True], [False]]))
    with pytest.raises(
        ValueError, match=r"finished dialogs \(all True at \('next', 'done'\)\), got 1"
    ):
        adv(batch)
    with pytest.raises(ValueError, match="expected a 1-d batch of dialogs"):
        adv(_dialogs(["a", "a"], [1.0, 0.0], width=1).unsqueeze(0))
    adv.close()
