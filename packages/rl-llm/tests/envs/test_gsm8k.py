import time

import pytest
import torch

from rl_llm.data import History
from rl_llm.envs import (
    GSM8KEnv,
    answer_reward,
    make_arithmetic_dataset,
    make_gsm8k_env,
    parse_answer,
)


def test_parse_answer_takes_the_last_tag():
    assert parse_answer("<answer>1</answer> then <answer> 2 </answer>") == "2"
    assert parse_answer("no tag 3") is None


@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        ("<answer>7</answer>", "7", 1.0),
        ("<answer>7.0</answer>", "7", 1.0),
        ("<answer>1,234</answer>", "Work... #### 1234", 1.0),
        ("<answer>the answer is 8</answer>", "8", 1.0),
        ("<answer>9</answer>", "8", 0.1),
        ("<answer></answer>", "8", 0.1),
        ("8", "8", 0.0),
    ],
)
def test_answer_reward(response, reference, expected):
    assert answer_reward(response, reference) == expected


def test_arithmetic_dataset_is_correct_and_seeded():
    data = make_arithmetic_dataset(20, seed=1)
    assert data == make_arithmetic_dataset(20, seed=1)
    for row in data:
        a, b = row["question"].removeprefix("What is ").removesuffix("?").split("+")
        assert int(a) + int(b) == int(row["answer"])


def test_step_rewards_tagged_answers_and_ends_the_dialog():
    env = GSM8KEnv(make_arithmetic_dataset(4, seed=0), batch_size=(4,), repeats=2)
    td = env.reset()
    answers = list(td["answer"])
    replies = [
        f"<answer>{answers[0]}</answer>",
        "no idea",
        "<answer>-1</answer>",
        f"so <answer>{answers[3]}</answer>",
    ]
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    out = env.step(td)
    torch.testing.assert_close(
        out["next", "reward"].squeeze(-1), torch.tensor([1.0, 0.0, 0.1, 1.0])
    )
    assert out["next", "done"].all()
    assert out["next", "terminated"].all()
    assert out["next", "history"].prompt.batch_size == (4, 3)


def test_items_need_answers():
    with pytest.raises(ValueError, match="every item needs an 'answer'"):
        GSM8KEnv([{"question": "x"}], batch_size=(1,))


# Issue 49: numbers compare exactly (the rule MATHRewardParser uses), never as floats.
@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        ("<answer>10000000000000001</answer>", "10000000000000000", 0.1),
        ("<answer>10000000000000000</answer>", "#### 10,000,000,000,000,000", 1.0),
        ("<answer>" + "1" * 400 + "</answer>", "2" * 400, 0.1),
        ("<answer>" + "9" * 399 + "8</answer>", "9" * 400, 0.1),
        ("<answer>" + "9" * 400 + "</answer>", "9" * 400, 1.0),
        ("<answer>0.30000000000000001</answer>", "0.3", 0.1),
        ("<answer>-12.50</answer>", "-12.5", 1.0),
        ("<answer>" + "1" * 5000 + "</answer>", "1" * 5000, 0.1),  # too long to hold exactly
    ],
)
def test_answer_reward_compares_exactly(response, reference, expected):
    start = time.process_time()
    assert answer_reward(response, reference) == expected
    assert time.process_time() - start < 0.25


def test_env_step_compares_large_numbers_exactly():
    data = [{"question": "big?", "answer": "#### 10000000000000000"}]
    env = GSM8KEnv(data, batch_size=(3,), repeats=3)
    replies = ["<answer>10000000000000001</answer>", "<answer>10000000000000000</answer>", "x"]
    td = env.reset()
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    out = env.step(td)
    assert out["next", "reward"].squeeze(-1).tolist() == pytest.approx([0.1, 1.0, 0.0])


def test_make_gsm8k_env_compares_400_digit_numbers_exactly():
    a, b = "3" * 400, "3" * 399 + "4"
    env = make_gsm8k_env([{"question": "q", "answer": a}], repeats=2)
    td = env.reset()
    td["response"] = [f"<answer>{b}</answer>", f"<answer>{a}</answer>"]
    assert env.step(td)["next", "reward"].squeeze(-1).tolist() == pytest.approx([0.1, 1.0])


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("<answer>" * 5000 + "5", 0.0),  # unclosed tags: read in linear time
        # the regex's reading, from the first tag: 4,999 tags then 5 is not one number
        ("<answer>" * 5000 + "5</answer>", 0.0),
        ("<answer>x</answer>" * 3000 + "<answer>5</answer>", 1.0),
    ],
)
def test_long_replies_are_read_in_linear_time(response, expected):
    start = time.process_time()
    assert answer_reward(response, "5") == expected
    assert time.process_time() - start < 0.25


# Issue 56: an answer is one number; several candidates or an expression score 0, never 1.
@pytest.mark.parametrize(
    ("response", "reference", "expected"),
    [
        ("<answer>9**9**9**9</answer>", "9", 0.0),  # the last number was read: scored 1.0
        ("<answer>7 or 9</answer>", "9", 0.0),
        ("<answer>" + " ".join(str(i) for i in range(1, 101)) + "</answer>", "42", 0.0),
        ("<answer>1, 2, 3, 42</answer>", "42", 0.0),
        ("<answer>3+6=9</answer>", "9", 0.0),
        ("<answer>40 + 2</answer>", "42", 0.0),
        ("<answer>5 thousand</answer>", "5", 0.0),
        ("<answer>3 squared</answer>", "3", 0.0),
        ("<answer>18 dollars or 19</answer>", "19", 0.0),
        ("<answer>9e9</answer>", "9", 0.0),
        # one number as GSM8K's references write it still scores
        ("<answer>$1,234.50</answer>", "#### 1234.5", 1.0),
        ("<answer>18 dollars.</answer>", "#### 18", 1.0),
        ("<answer>x = -3</answer>", "-3", 1.0),
        ("<answer>25%</answer>", "25", 1.0),
        ("<answer>60 miles per hour</answer>", "#### 60", 1.0),
        ("<answer>The answer is: 18</answer>", "18", 1.0),
        ("<answer>17 dollars</answer>", "18", 0.1),  # one number, wrong
        ("<answer>eighteen</answer>", "18", 0.1),  # a tag without a number
    ],
)
def test_an_answer_is_one_number(response, reference, expected):
    assert answer_reward(response, reference) == expected


def test_env_step_refuses_listed_candidates():
    env = GSM8KEnv([{"question": "q", "answer": "#### 9"}], batch_size=(3,), repeats=3)
    replies = ["<answer>9**9**9**9</answer>", "<answer>7 or 9</answer>", "<answer>9</answer>"]
    td = env.reset()
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    out = env.step(td)["next"]
    assert out["reward"].squeeze(-1).tolist() == [0.0, 0.0, 1.0]
    assert out["success"].squeeze(-1).tolist() == [False, False, True]


@pytest.mark.parametrize(
    "answer",
    [
        "1 a" + " " * 20000 + "b c 2",
        "x" + " is" * 10000 + " 1 2",
        "1" + ",000" * 5000 + " 2",
        "the" + " " * 20000 + "is 5 " + "a " * 10000 + "1",
    ],
)
def test_adversarial_answers_are_read_in_linear_time(answer):
    start = time.process_time()
    assert answer_reward(f"<answer>{answer}</answer>", "2") == 0.0
    assert time.process_time() - start < 0.25
