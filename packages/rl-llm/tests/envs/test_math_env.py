import pytest
import torch

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import DatasetChatEnv, MATHEnv, MATHRewardParser
from rl_llm.envs.math_env import last_boxed, math_equivalent


def _reply(td, replies):
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    return td


def test_last_boxed_matches_nested_braces():
    assert last_boxed(r"\boxed{\frac{a}{b+{c}}} end") == r"\frac{a}{b+{c}}"
    assert last_boxed(r"\fbox{7}") == "7"
    assert last_boxed(r"\boxed{unclosed") is None


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (r"\frac{3}{4}", "0.75", True),
        (r"\dfrac34", "3/4", True),
        (r"2\sqrt{2}", r"\sqrt{8}", True),
        (r"\pi/2", "1.5707963267948966", True),
        ("2^{10}", "1024", True),
        ("1,024", "1024", True),
        (r"90^\circ", "90", True),
        (r"\text{(B)}", "(B)", True),
        ("(1, -2)", r"\left(1,-2\right)", True),
        ("(1, 2)", "(2, 1)", False),
        ("x+1", "1+x", False),  # symbolic algebra is out of scope: strings differ
        ("0.333", r"\frac13", False),
        ("5", "6", False),
    ],
)
def test_equivalence_of_simple_expressions(a, b, same):
    assert math_equivalent(a, b) is same


def test_parser_scores_answers_against_the_boxed_solution():
    parser = MATHRewardParser(format_reward=0.2, correct_reward=2.0)
    solution = r"We get $x = \boxed{\frac{1}{3}}$."
    assert parser.score("<answer>1/3</answer>", solution) == (2.0, True)
    assert parser.score(r"so \boxed{\frac{2}{6}}", solution) == (2.0, True)
    assert parser.score("<answer>0.5</answer>", solution) == (0.2, True)
    assert parser.score("one third", solution) == (0.0, False)


def test_env_rewards_and_ends_dialogs():
    data = [
        {"problem": "1/2+1/4?", "solution": r"\boxed{\frac{3}{4}}"},
        {"problem": "2^3?", "solution": r"\boxed{8}"},
    ]
    env = MATHEnv(data, batch_size=(4,), repeats=2)
    td = env.reset()
    assert list(td["query"]) == ["1/2+1/4?", "1/2+1/4?", "2^3?", "2^3?"]
    out = env.step(_reply(td, ["<answer>0.75</answer>", "no", "<answer>9</answer>", r"\boxed{8}"]))
    torch.testing.assert_close(
        out["next", "reward"].squeeze(-1), torch.tensor([1.0, 0.0, 0.1, 1.0])
    )
    assert out["next", "success"].squeeze(-1).tolist() == [True, False, False, True]
    assert out["next", "done"].all()


def test_parser_as_a_transform_on_a_dataset_env():
    env = TransformedEnv(
        DatasetChatEnv([{"question": "q", "answer": r"\boxed{5}"}], batch_size=(2,)),
        MATHRewardParser(),
    )
    td = env.reset()
    out = env.step(_reply(td, ["<answer>5</answer>", "nothing"]))
    assert out["next", "reward"].squeeze(-1).tolist() == [1.0, 0.0]
    # set_done_if_answer: only the dialog that answered ends.
    assert out["next", "done"].squeeze(-1).tolist() == [True, False]


def test_missing_solution_is_refused():
    with pytest.raises(ValueError, match="every item needs a 'solution'"):
        MATHEnv([{"problem": "x"}])
