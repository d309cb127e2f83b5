import pytest
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import DatasetChatEnv, GSM8KPrepareQuestion, GSM8KRewardParser, LLMEnv


@pytest.mark.parametrize(
    ("reply", "reference", "reward"),
    [
        ("so <answer>12</answer>", "3 + 9 = 12\n#### 12", 2.0),
        ("<answer>1,000</answer>", "#### 1000", 2.0),
        ("<answer>7.0</answer>", "7", 2.0),
        ("<answer>1000001</answer>", "#### 1000000", 0.1),
        ("<answer>10000000000000001</answer>", "10000000000000000", 0.1),
        ("12", "12", 0.0),
        ("", "12", 0.0),
        ("<answer>9**9**9**9</answer>", "7", 0.0),  # an expression is refused (issue 56)
        ("<answer>" * 5000, "12", 0.0),
        ("<answer>" + "9" * 5000 + "</answer>", "9", 0.1),
    ],
)
def test_reward_parser_is_exact_and_total(reply, reference, reward):
    parser = GSM8KRewardParser(correct_reward=2.0)
    assert parser.score(reply, reference)[0] == reward


def test_reward_parser_on_a_chat_env_ends_the_answered_dialogs():
    env = TransformedEnv(
        DatasetChatEnv([{"question": "2+2?", "answer": "#### 4"}], batch_size=(3,), repeats=3),
        GSM8KRewardParser(),
    )
    td = env.reset()
    td["history"].full = td["history"].prompt.append(
        History.from_chats(
            [
                [{"role": "assistant", "content": r}]
                for r in ["<answer>4</answer>", "<answer>5</answer>", "4"]
            ]
        )
    )
    out = env.step(td)["next"]
    assert out["reward"].squeeze(-1).tolist() == pytest.approx([1.0, 0.1, 0.0])
    assert out["success"].squeeze(-1).tolist() == [True, False, False]
    assert out["done"].squeeze(-1).tolist() == [True, True, False]


def test_prepare_question_rewrites_the_prompt_at_reset():
    env = TransformedEnv(LLMEnv(batch_size=(2,)), GSM8KPrepareQuestion(template="Q: {question} A:"))
    td = env.reset(TensorDict(query=["1+1?", "2+2?"], batch_size=[2]))
    assert list(td["query"]) == ["Q: 1+1? A:", "Q: 2+2? A:"]
    default = GSM8KPrepareQuestion()(TensorDict(query=["What is 2+2?"], batch_size=[1]))
    assert default["query"][0].startswith("What is 2+2?\n")
    assert default["query"][0].endswith("inside <answer></answer>.")


def test_prepare_question_refuses_bad_templates_and_entries():
    with pytest.raises(ValueError, match="expected a template with a \\{question\\} field"):
        GSM8KPrepareQuestion(template="no field")
    with pytest.raises(ValueError, match="expected a template whose only field is \\{question\\}"):
        GSM8KPrepareQuestion(template="{question} {other}")
    with pytest.raises(ValueError, match="expected as many out_keys as in_keys"):
        GSM8KPrepareQuestion(in_keys=["a", "b"], out_keys=["c"])
    import torch

    with pytest.raises(
        ValueError, match="expected one question string per row at 'query', got Tensor"
    ):
        GSM8KPrepareQuestion()(TensorDict(query=torch.zeros(2), batch_size=[2]))
