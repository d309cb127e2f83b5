import pytest
import torch

from rl_core import Compose, StepCounter, TransformedEnv, check_env_specs
from rl_core.testing import CountingEnv
from rl_envs.native import TicTacToeEnv
from rl_envs.transforms import ConditionalPolicySwitch


def _ones(td):
    return td.set("action", torch.ones(*td.batch_size, 1, dtype=torch.int64))


def _odd(td):
    return td["observation"][..., 0] % 2 == 1


def _counting_env(batch=(), start_high=1):
    return TransformedEnv(
        CountingEnv(max_count=6, start_high=start_high, batch_size=batch),
        Compose(
            StepCounter(step_count_key="step_count_total"),
            ConditionalPolicySwitch(_ones, _odd),
            StepCounter(step_count_key="step_count_main"),
        ),
    )


@pytest.mark.parametrize("batch", [(), (2,)])
def test_the_switch_policy_takes_the_odd_counts(batch):
    env = _counting_env(batch)
    if not batch:  # (random actions would split a batch: see test_errors)
        check_env_specs(env)
    traj = env.rollout(10, _ones)
    # main step 0 -> 1 (odd: switch steps 1 -> 2), 2 -> 3 -> 4, 4 -> 5 -> 6 (terminated)
    obs = traj["next", "observation"].reshape(-1, 3).tolist()
    assert all(row == [2.0, 4.0, 6.0] for row in obs)
    total = traj["next", "step_count_total"].reshape(-1, 3).tolist()
    main = traj["next", "step_count_main"].reshape(-1, 3).tolist()
    assert all(row == [2, 4, 6] for row in total)
    assert all(row == [1, 2, 3] for row in main)
    assert traj["next", "reward"].reshape(-1, 3).tolist()[0] == [1.0, 1.0, 1.0]


def test_after_a_reset_into_the_switch_condition_the_policy_moves_first():
    # start counts drawn in [0, 2): seed so that the reset gives 1 (odd)
    env = _counting_env(start_high=2)
    for seed in range(20):
        env.set_seed(seed)
        td = env.reset()
        if td["step_count_total"].item() == 1:
            break
    # the reset's count was odd: the switch stepped it to 2, without a reward entry
    assert td["observation"].tolist() == [2.0]
    assert "reward" not in td.keys()
    assert td["step_count_main"].item() == 0


def test_turn_based_tictactoe_against_a_scripted_opponent():
    # player 1 (main policy) plays cells 0, 1, 2; player 2 (the switch) plays 3, 4
    main_moves, opponent_moves = iter([0, 1, 2]), iter([3, 4])

    def main(td):
        return td.set("action", torch.tensor(next(main_moves)))

    def opponent(td):
        return td.set("action", torch.tensor(next(opponent_moves)))

    def players_two_turn(td):
        return td["turn"].reshape(()).bool()

    env = TransformedEnv(TicTacToeEnv(), ConditionalPolicySwitch(opponent, players_two_turn))
    traj = env.rollout(5, main)
    # three main moves; the opponent answered after the first two; the third wins the top row
    assert traj.batch_size == (3,)
    assert traj["action"].tolist() == [0, 1, 2]
    # the board as the next player (player 1) sees it: its stones 1, player 0's 0, empty -1
    board = traj["next", "board"][-1]
    assert board.tolist() == [[0, 0, 0], [1, 1, -1], [-1, -1, -1]]
    assert traj["next", "done"][-1].item()
    assert traj["next", "player0", "reward"][-1].item() == 1.0
    # the main policy only ever saw player 0's turns
    assert traj["turn"].flatten().tolist() == [0, 0, 0]


def test_errors():
    with pytest.raises(TypeError, match="expected policy as a callable, got int"):
        ConditionalPolicySwitch(3, _odd)
    env = TransformedEnv(
        CountingEnv(max_count=6, batch_size=[2]), ConditionalPolicySwitch(_ones, _odd)
    )
    td = env.reset()
    td["action"] = torch.tensor([[1], [0]])  # counts 1 and 0: the condition holds for one
    with pytest.raises(ValueError, match=r"the condition holds for the sub-envs tensor\(\[0\]\)"):
        env.step(td)
    with pytest.raises(RuntimeError, match="runs in a TransformedEnv's step and reset"):
        ConditionalPolicySwitch(_ones, _odd)(td)
    bad = TransformedEnv(CountingEnv(), ConditionalPolicySwitch(_ones, lambda td: 1))
    with pytest.raises(TypeError, match="the condition must give a bool or a bool tensor, got 1"):
        bad.reset()
