"""The task envs compose (issue 50): a DatasetChatEnv seen through its reward parser and the
one shared end-of-dialog step, as a TransformedEnv; none has a step of its own."""

import json

import pytest
import torch

from rl_core import StepCounter, TransformedEnv
from rl_llm.data import History
from rl_llm.envs import (
    CountdownEnv,
    CountdownRewardParser,
    DatasetChatEnv,
    GSM8KEnv,
    IFEvalEnv,
    IfEvalScorer,
    MATHEnv,
    MATHRewardParser,
    RewardParserBase,
)
from rl_llm.envs._task_env import EndOfDialog

IFEVAL_ITEM = {"prompt": "No commas.", "instruction_id_list": ["punctuation:no_comma"]}

# (factory, parser type, replies, rewards): the rewards are those of the envs before the change
# (but the blank IFEval reply: it follows no instruction since issue 56).
CASES = {
    "math": (
        lambda: MATHEnv([{"problem": "p", "solution": r"\boxed{5}"}], batch_size=(3,), repeats=3),
        MATHRewardParser,
        ["<answer>5</answer>", "<answer>4</answer>", "five"],
        [1.0, 0.1, 0.0],
    ),
    "gsm8k": (
        lambda: GSM8KEnv([{"question": "q", "answer": "#### 5"}], batch_size=(3,), repeats=3),
        RewardParserBase,
        ["<answer>5</answer>", "<answer>4</answer>", "five"],
        [1.0, 0.1, 0.0],
    ),
    "ifeval": (
        lambda: IFEvalEnv([{**IFEVAL_ITEM, "kwargs": [{}]}], batch_size=(3,), repeats=3),
        IfEvalScorer,
        ["no commas here", "a, b", ""],
        [1.0, 0.0, 0.0],  # a blank reply follows nothing (issue 56; was 1.0)
    ),
    "countdown": (
        lambda: CountdownEnv([{"numbers": [2, 3], "target": 5}], batch_size=(3,), repeats=3),
        CountdownRewardParser,
        ["<answer>2+3</answer>", "<answer>2*3</answer>", "5"],
        [1.0, 0.1, 0.0],
    ),
}


def _reply(td, replies):
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    return td


@pytest.mark.parametrize("name", CASES)
def test_task_env_is_a_dataset_env_seen_through_its_parser(name):
    make, parser_type, _, _ = CASES[name]
    env = make()
    assert isinstance(env, TransformedEnv)
    assert type(env.base_env) is DatasetChatEnv
    kinds = [type(t) for t in env.transform]
    assert len(kinds) == 2
    assert issubclass(kinds[0], parser_type)
    assert kinds[1] is EndOfDialog
    assert env.parser is env.transform[0]
    # No step of its own: the base env's step, then the transforms (the public composition).
    assert type(env)._step is TransformedEnv._step
    assert "_step" not in vars(type(env))


@pytest.mark.parametrize("name", CASES)
def test_task_env_rewards_and_ends_every_dialog(name):
    make, _, replies, rewards = CASES[name]
    env = make()
    out = env.step(_reply(env.reset(), replies))["next"]
    torch.testing.assert_close(out["reward"].squeeze(-1), torch.tensor(rewards))
    assert out["success"].squeeze(-1).tolist() == [r == 1.0 for r in rewards]
    assert out["terminated"].all()
    assert out["done"].all()
    assert not out["truncated"].any()
    assert out["history"].prompt.batch_size[0] == 3


def test_transforms_append_after_the_parser():
    env = MATHEnv([{"problem": "p", "solution": r"\boxed{5}"}], batch_size=(2,))
    env.append_transform(StepCounter())
    out = env.step(_reply(env.reset(), ["<answer>5</answer>", "no"]))["next"]
    assert out["reward"].squeeze(-1).tolist() == pytest.approx([1.0, 0.0])
    assert out["step_count"].squeeze(-1).tolist() == [1, 1]
    assert isinstance(env.parser, MATHRewardParser)


def test_parser_settings_are_the_envs():
    env = MATHEnv(
        [{"problem": "p", "solution": r"\boxed{5}"}], format_reward=0.25, correct_reward=2.0
    )
    assert (env.parser.format_reward, env.parser.correct_reward) == (0.25, 2.0)
    assert env.parser.set_done_if_answer is False  # EndOfDialog ends every dialog instead
    gsm = GSM8KEnv([{"question": "q", "answer": "1"}], format_reward=0.2)
    assert gsm.format_reward == 0.2
    gsm.format_reward = 0.3
    assert gsm.parser.format_reward == 0.3
    out = gsm.step(_reply(gsm.reset(), ["<answer>2</answer>"]))["next"]
    assert out["reward"].item() == pytest.approx(0.3)


def test_end_of_dialog_alone_ends_every_dialog():
    env = TransformedEnv(DatasetChatEnv(["hi"], batch_size=(2,), repeats=2), EndOfDialog())
    out = env.step(_reply(env.reset(), ["a", "b"]))["next"]
    assert out["terminated"].all()
    assert out["done"].all()
    assert out["reward"].sum() == 0


def test_a_countdown_reference_is_the_puzzle_as_json():
    env = CountdownEnv([{"numbers": [2, 3], "target": 5}])
    assert json.loads(env.reset()["answer"][0]) == {"numbers": [2, 3], "target": 5}
