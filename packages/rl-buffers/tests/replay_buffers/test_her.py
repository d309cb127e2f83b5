"""HERReplayBuffer and HindsightStrategy against hand-computed episodes."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import (
    HERReplayBuffer,
    HindsightStrategy,
    LazyMemmapStorage,
    LazyTensorStorage,
    ListStorage,
    SamplerWithoutReplacement,
)


def _episodes(lengths: list[int], start_id: int = 0) -> TensorDict:
    """Transitions whose ("next", "achieved_goal") is a unique id (the step number)."""
    n = sum(lengths)
    ids = torch.arange(start_id, start_id + n, dtype=torch.float32)
    done = torch.zeros(n, 1, dtype=torch.bool)
    ends = torch.tensor(lengths).cumsum(0) - 1
    done[ends] = True
    return TensorDict(
        {
            "desired_goal": torch.full((n, 1), -1.0),
            "achieved_goal": (ids - 0.5).unsqueeze(-1),
            "next": {
                "achieved_goal": ids.unsqueeze(-1),
                "desired_goal": torch.full((n, 1), -1.0),
                "reward": torch.full((n, 1), -1.0),
                "done": done,
            },
        },
        [n],
    )


def _episode_of(done: list[bool], oldest: int) -> dict[int, tuple[list[int], int]]:
    """For each storage position: its episode's positions in write order, and its rank."""
    n = len(done)
    order = [(oldest + k) % n for k in range(n)]
    result: dict[int, tuple[list[int], int]] = {}
    current: list[int] = []
    for k, pos in enumerate(order):
        current.append(pos)
        if done[pos] or k == n - 1:
            for rank, p in enumerate(current):
                result[p] = (list(current), rank)
            current = []
    return result


def _hit_reward(td: TensorDict) -> torch.Tensor:
    return (td["next", "achieved_goal"] == td["desired_goal"]).all(-1, keepdim=True).float() - 1


def _buffer(strategy, *, her_ratio=1.0, size=100, **kwargs) -> HERReplayBuffer:
    return HERReplayBuffer(
        _hit_reward,
        strategy=strategy,
        her_ratio=her_ratio,
        storage=LazyTensorStorage(size),
        batch_size=kwargs.pop("batch_size", 512),
        **kwargs,
    )


def test_strategy_names_and_defaults():
    assert [s.value for s in HindsightStrategy] == ["future", "final", "episode", "random"]
    assert HindsightStrategy("episode") is HindsightStrategy.EPISODE
    buffer = HERReplayBuffer(_hit_reward, storage=LazyTensorStorage(10))
    assert buffer.strategy is HindsightStrategy.FUTURE
    assert buffer.her_ratio == 0.8
    assert buffer.goal_key == "desired_goal"
    assert buffer.achieved_goal_key == "achieved_goal"
    assert buffer.reward_key == ("next", "reward")
    assert buffer.end_key == ("next", "done")


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"expected her_ratio in \[0, 1\], got 1.5"):
        HERReplayBuffer(_hit_reward, her_ratio=1.5, storage=LazyTensorStorage(10))
    with pytest.raises(ValueError, match=r"expected strategy in .*'future'.*got 'later'"):
        HERReplayBuffer(_hit_reward, strategy="later", storage=LazyTensorStorage(10))
    with pytest.raises(TypeError, match="expected reward_fn to be a callable"):
        HERReplayBuffer(3, storage=LazyTensorStorage(10))
    with pytest.raises(TypeError, match=r"expected a TensorStorage with ndim=1.*ListStorage"):
        HERReplayBuffer(_hit_reward, storage=ListStorage(10))


def _check_goals(buffer, strategy, count_checked=512):
    storage = buffer.storage
    n = len(storage)
    done = storage.column(("next", "done")).reshape(-1).tolist()
    oldest = storage.next_row % n if n == storage.max_size else 0
    episodes = _episode_of(done, oldest)
    ids = storage.column(("next", "achieved_goal")).reshape(-1).tolist()
    pos_of_id = {int(v): p for p, v in enumerate(ids)}
    batch = buffer.sample()
    seen = []
    for row in range(count_checked):
        item = int(batch["index"][row])
        members, rank = episodes[item]
        goal = int(batch["desired_goal"][row, 0])
        source = pos_of_id[goal]
        if strategy == "final":
            assert source == members[-1]
        elif strategy == "future":
            assert source in members[rank:]
        elif strategy == "episode":
            assert source in members
        else:
            assert 0 <= source < n
        assert batch["next", "desired_goal"][row, 0] == goal
        # the reward recomputed for the new goal, by hand
        own = ids[item]
        assert float(batch["next", "reward"][row, 0]) == (0.0 if own == goal else -1.0)
        seen.append((item, source))
    return seen


@pytest.mark.parametrize("strategy", ["final", "future", "episode", "random"])
def test_goals_come_from_the_strategy(strategy):
    torch.manual_seed(0)
    buffer = _buffer(strategy)
    buffer.extend(_episodes([5, 1, 7, 3, 4]))  # the newest episode is unfinished
    buffer.storage.column(("next", "done"))[-1] = False
    seen = _check_goals(buffer, strategy)
    if strategy == "episode":
        # some goals come from before the item, which "future" never does
        assert any(source < item for item, source in seen)


def test_future_is_uniform_over_the_rest_of_the_episode(chi_square):
    torch.manual_seed(1)
    buffer = _buffer("future", batch_size=20_000, size=20)
    buffer.extend(_episodes([6]))
    batch = buffer.sample()
    rows = batch["index"] == 1  # item 1 of 6: goals from items 1..5, each 1/5
    goals = batch["desired_goal"][rows, 0].long()
    counts = torch.bincount(goals, minlength=6)
    assert chi_square(counts, torch.tensor([0, 1, 1, 1, 1, 1.0]))


def test_her_ratio_relabels_only_the_head():
    torch.manual_seed(2)
    buffer = _buffer("final", her_ratio=0.25, batch_size=40)
    buffer.extend(_episodes([4, 4]))
    batch = buffer.sample()
    assert (batch["desired_goal"][10:] == -1).all()
    assert (batch["next", "reward"][10:] == -1).all()
    assert (batch["desired_goal"][:10] >= 0).all()
    # the storage itself keeps the original goals
    assert (buffer.storage.column("desired_goal") == -1).all()
    zero = _buffer("final", her_ratio=0.0, batch_size=8)
    zero.extend(_episodes([4]))
    assert (zero.sample()["desired_goal"] == -1).all()


def test_wrapped_storage_keeps_episodes_apart():
    torch.manual_seed(3)
    buffer = _buffer("final", size=10)
    buffer.extend(_episodes([4, 4]))  # ids 0..7
    buffer.extend(_episodes([3, 2], start_id=8))  # ids 8..12 overwrite rows 8, 9, 0, 1, 2
    # rows 3..7 hold the remains of the first episodes (3 and 4..7); the newest ends at 12
    assert buffer.storage.next_row == 3
    _check_goals(buffer, "final")
    _check_goals(buffer, "future")


def test_memmap_storage_and_other_sampler(tmp_path):
    torch.manual_seed(4)
    buffer = HERReplayBuffer(
        _hit_reward,
        strategy="future",
        storage=LazyMemmapStorage(50, scratch_dir=tmp_path / "her"),
        sampler=SamplerWithoutReplacement(),
        her_ratio=1.0,
        batch_size=12,
    )
    buffer.extend(_episodes([5, 7]))
    _check_goals(buffer, "future", count_checked=12)


def test_terminated_is_used_without_done():
    data = _episodes([3, 2])
    data["next", "terminated"] = data["next"].pop("done")
    buffer = _buffer("final")
    buffer.extend(data)
    batch = buffer.sample()
    finals = torch.where(batch["index"] < 3, 2.0, 4.0)
    assert torch.equal(batch["desired_goal"][:, 0], finals)


def test_missing_keys_raise():
    data = _episodes([3])
    buffer = _buffer("final", goal_key="goal")
    buffer.extend(data)
    with pytest.raises(KeyError, match="goal_key='goal'"):
        buffer.sample()
    buffer = _buffer("final", end_key=("next", "finished"))
    buffer.extend(data)
    with pytest.raises(KeyError, match="neither \\('next', 'finished'\\)"):
        buffer.sample()


def test_bad_reward_fn_output():
    buffer = HERReplayBuffer(
        lambda td: torch.zeros(3), storage=LazyTensorStorage(10), batch_size=8, her_ratio=1.0
    )
    buffer.extend(_episodes([4]))
    with pytest.raises(ValueError, match=r"expected reward_fn to return a tensor of 8 rewards"):
        buffer.sample()


def _bit_flip_episode(n_bits: int, generator: torch.Generator) -> TensorDict:
    """A random-action episode of the bit-flipping env: flip bit a; reward 0 at the goal."""
    state = torch.randint(0, 2, (n_bits,), generator=generator).float()
    goal = torch.randint(0, 2, (n_bits,), generator=generator).float()
    rows = []
    for _ in range(n_bits):
        action = int(torch.randint(n_bits, (1,), generator=generator))
        nxt = state.clone()
        nxt[action] = 1 - nxt[action]
        hit = bool(torch.equal(nxt, goal))
        rows.append((state, action, nxt, hit))
        state = nxt
        if hit:
            break
    k = len(rows)
    return TensorDict(
        {
            "observation": torch.stack([r[0] for r in rows]),
            "achieved_goal": torch.stack([r[0] for r in rows]),
            "desired_goal": goal.expand(k, n_bits).clone(),
            "action": torch.tensor([r[1] for r in rows]),
            "next": {
                "observation": torch.stack([r[2] for r in rows]),
                "achieved_goal": torch.stack([r[2] for r in rows]),
                "desired_goal": goal.expand(k, n_bits).clone(),
                "reward": torch.tensor([[0.0 if r[3] else -1.0] for r in rows]),
                "done": torch.tensor([[i == k - 1] for i in range(k)]),
            },
        },
        [k],
    )


def test_bit_flipping_relabelled_rewards_match_the_definition():
    generator = torch.Generator().manual_seed(5)
    n_bits = 6

    def reward_fn(td):
        # the env's own reward, in float64: 0 when every bit matches the goal, else -1
        diff = (td["next", "achieved_goal"].double() - td["desired_goal"].double()).abs()
        return torch.where(diff.sum(-1, keepdim=True) == 0, 0.0, -1.0)

    buffer = HERReplayBuffer(reward_fn, storage=LazyTensorStorage(1000), batch_size=256)
    for _ in range(20):
        buffer.extend(_bit_flip_episode(n_bits, generator))
    torch.manual_seed(6)
    batch = buffer.sample()
    head = int(256 * 0.8)
    for row in range(256):
        hit = bool(torch.equal(batch["next", "achieved_goal"][row], batch["desired_goal"][row]))
        assert float(batch["next", "reward"][row]) == (0.0 if hit else -1.0)
    # relabelling makes successes that random play almost never has
    assert (batch["next", "reward"][:head] == 0).sum() > head // 10


def test_reward_fn_output_of_another_shape_names_reward_fn_and_both_shapes():
    # a reward_fn returning extra columns failed with "shape '[6, 1]' is invalid"
    buffer = HERReplayBuffer(
        lambda td: torch.zeros(td.batch_size[0], 3),
        storage=LazyTensorStorage(10),
        batch_size=6,
        her_ratio=1.0,
    )
    buffer.extend(_episodes([4]))
    with pytest.raises(
        ValueError,
        match=r"expected reward_fn to return a tensor of 6 rewards, one per relabelled item, "
        r"shaped \[6\] or \[6, 1\] \(as the stored \('next', 'reward'\)\), got \(6, 3\)",
    ):
        buffer.sample()
    buffer.reward_fn = lambda td: torch.zeros(td.batch_size[0], 2, 1)
    with pytest.raises(ValueError, match=r"reward_fn .* got \(6, 2, 1\)"):
        buffer.sample()
    buffer.reward_fn = lambda td: [0.0] * td.batch_size[0]
    with pytest.raises(ValueError, match=r"reward_fn .* got list"):
        buffer.sample()
    buffer.reward_fn = lambda td: torch.zeros(td.batch_size[0])  # [n] is taken as [n, 1]
    assert buffer.sample()["next", "reward"].tolist() == [[0.0]] * 6
    buffer.reward_fn = lambda td: torch.ones(td.batch_size[0], 1, 1)  # one reward per item
    assert buffer.sample()["next", "reward"].tolist() == [[1.0]] * 6


def test_desired_goal_of_another_shape_names_both_keys_and_shapes():
    # a desired_goal of another shape than the achieved goal gave torch's "expanded size"
    # error, naming neither key
    data = _episodes([4])
    data["desired_goal"] = torch.zeros(4, 2)
    data["next", "desired_goal"] = torch.zeros(4, 2)
    buffer = _buffer("final", batch_size=4)
    buffer.extend(data)
    with pytest.raises(
        ValueError,
        match=r"the desired goal 'desired_goal' has per-item shape \(2,\) but the achieved "
        r"goal \('next', 'achieved_goal'\) has \(1,\)",
    ):
        buffer.sample()
