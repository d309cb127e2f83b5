import json
import re
import time

import pytest
import torch

from rl_llm.data import History
from rl_llm.envs import CountdownEnv, CountdownRewardParser, make_countdown_dataset
from rl_llm.envs._arith import evaluate
from rl_llm.envs.countdown import countdown_score


@pytest.mark.parametrize(
    ("reply", "numbers", "target", "correct"),
    [
        ("<answer>(3 + 5) * 2</answer>", [2, 3, 5], 16, True),
        ("<answer>8 / (3 - 8 / 3)</answer>", [3, 3, 8, 8], 24, True),  # exact rationals
        ("<answer>3 * 5 + 1</answer>", [2, 3, 5], 16, False),  # 1 is not given
        ("<answer>5 * 5 - 9</answer>", [2, 3, 5, 9], 16, False),  # 5 used twice
        ("<answer>5 + 5</answer>", [5, 5], 10, True),  # given twice, used twice
        ("<answer>2 ** 4</answer>", [2, 4], 16, False),  # power is not allowed
        ("<answer>__import__('os')</answer>", [1], 1, False),
        ("<answer>3 / 0</answer>", [3, 0], 1, False),
        ("<answer>(3+5)*2 = 16</answer>", [2, 3, 5], 16, True),  # "= target" is tolerated
        ("the answer is 16", [2, 3, 5], 16, None),
    ],
)
def test_countdown_score(reply, numbers, target, correct):
    assert countdown_score(reply, numbers, target)[0] is correct


def test_generated_puzzles_are_solvable_by_their_construction():
    data = make_countdown_dataset(50, num_numbers=3, seed=3)
    assert data == make_countdown_dataset(50, num_numbers=3, seed=3)
    for p in data:
        assert len(p["numbers"]) == 3
        assert p["target"] >= 0


def test_parser_rewards_and_reference_errors():
    ref = json.dumps({"numbers": [4, 6], "target": 24})
    parser = CountdownRewardParser()
    assert parser.score("<answer>4*6</answer>", ref) == (1.0, True)
    assert parser.score("<answer>4+6</answer>", ref) == (0.1, True)
    assert parser.score("24", ref) == (0.0, False)
    with pytest.raises(ValueError, match="expected the answer as JSON"):
        parser.score("<answer>1</answer>", "not json")


def test_env_step_rewards_every_dialog_and_ends():
    env = CountdownEnv(
        [{"nums": [4, 6], "target": 24}, {"numbers": [1, 2], "target": 3}],
        batch_size=(4,),
        repeats=2,
    )
    td = env.reset()
    assert td["query"][0] == "Using the numbers [4, 6], make 24."
    replies = ["<answer>6*4</answer>", "<answer>6+4</answer>", "3", "<answer>1+2</answer>"]
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    out = env.step(td)
    torch.testing.assert_close(
        out["next", "reward"].squeeze(-1), torch.tensor([1.0, 0.1, 0.0, 1.0])
    )
    assert out["next", "done"].all()


def test_bad_puzzles_are_refused():
    with pytest.raises(ValueError, match="expected puzzles as dicts"):
        CountdownEnv(["3 4 7"])
    with pytest.raises(ValueError, match="has no 'numbers'"):
        CountdownEnv([{"target": 3}])


def test_evaluator_is_exact():
    value, used = evaluate("1/3 + 1/3 + 1/3")
    assert value == 1
    assert used == [1, 3, 1, 3, 1, 3]


# Issue 49: a non-integer target (or number) is refused, not truncated.
@pytest.mark.parametrize(
    ("puzzle", "message"),
    [
        ({"numbers": [2, 3, 5], "target": 16.5}, "expected an integer target, got 16.5"),
        ({"numbers": [2, 3, 5], "target": "16.5"}, "expected an integer target, got '16.5'"),
        ({"numbers": [2, 3, 5], "target": True}, "expected an integer target, got True"),
        ({"numbers": [2, 3.5, 5], "target": 16}, "expected an integer number, got 3.5"),
        ({"numbers": "235", "target": 16}, "expected 'numbers' as a list of integers"),
    ],
)
def test_env_refuses_non_integer_puzzles(puzzle, message):
    with pytest.raises(ValueError, match=f"CountdownEnv: {re.escape(message)}"):
        CountdownEnv([puzzle])


def test_integral_values_of_other_types_are_accepted():
    env = CountdownEnv([{"numbers": [2.0, "3", 5], "target": 16.0}])
    assert json.loads(env.items[0][1]) == {"numbers": [2, 3, 5], "target": 16}


def test_parser_refuses_a_non_integer_target():
    ref = json.dumps({"numbers": [2, 3, 5], "target": 16.5})
    with pytest.raises(ValueError, match=r"CountdownRewardParser: expected an integer target"):
        CountdownRewardParser().score("<answer>(3+5)*2</answer>", ref)


def test_many_unclosed_tags_are_read_in_linear_time():
    ref = json.dumps({"numbers": [2, 3], "target": 5})
    start = time.process_time()
    assert CountdownRewardParser().score("<answer>" * 5000 + "2+3", ref) == (0.0, False)
    assert CountdownRewardParser().score("<answer>" * 5000 + "2+3</answer>", ref) == (0.1, True)
    assert time.process_time() - start < 0.5


# Issue 56: listing candidates never pays; only one expression is read, and it must be valid.
@pytest.mark.parametrize(
    "reply",
    [
        "<answer>3*5+2, (3+5)*2</answer>",
        "<answer>3*5+2; (3+5)*2</answer>",
        "<answer>3*5+2 or (3+5)*2</answer>",
        "<answer>(3*5+2) (3+5)*2</answer>",
        "<answer>16</answer>",  # the target itself is not among the numbers
        "<answer>3*5+2 = 16</answer>",  # a false claim after "=" does not make it right
    ],
)
def test_listed_candidates_are_not_correct(reply):
    assert countdown_score(reply, [2, 3, 5], 16)[0] is False
    assert CountdownRewardParser().score(reply, '{"numbers": [2, 3, 5], "target": 16}')[0] == 0.1
