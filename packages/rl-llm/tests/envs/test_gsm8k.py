import pytest
import torch

from rl_llm.data import History
from rl_llm.envs import GSM8KEnv, answer_reward, make_arithmetic_dataset, parse_answer


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
