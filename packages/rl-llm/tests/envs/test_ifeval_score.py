import pytest
import torch

from rl_llm.envs import IFEvalScoreData
from rl_llm.envs.ifeval_score import loose_variants


def test_loose_variants_are_ifevals_eight():
    assert loose_variants("**Title**\nbody\nP.S. bye") == [
        "**Title**\nbody\nP.S. bye",
        "body\nP.S. bye",
        "**Title**\nbody",
        "body",
        "Title\nbody\nP.S. bye",
        "body\nP.S. bye",
        "Title\nbody",
        "body",
    ]


def test_strict_and_loose_scores_by_hand():
    ids = ["change_case:english_lowercase", "punctuation:no_comma", "startend:end_checker"]
    kwargs = [{}, {}, {"end_phrase": "bye."}]
    # Strict: an upper-case first line breaks lowercase; the comma breaks no_comma; ends right.
    reply = "Sure, Here:\nall lower and no commas here bye."
    s = IFEvalScoreData.from_reply(reply, ids, kwargs)
    assert s.prompt_level_strict_acc.item() is False
    assert s.inst_level_strict_acc.item() == pytest.approx(1 / 3)
    # Loose: dropping the first line satisfies all three.
    assert s.prompt_level_loose_acc.item() is True
    assert s.inst_level_loose_acc.item() == 1.0
    assert s.num_instructions.item() == 3
    batch = torch.stack([s, IFEvalScoreData.from_reply("", ids, kwargs)])
    assert batch.prompt_level_loose_acc.tolist() == [True, False]
    with pytest.raises(ValueError, match="unknown instruction id 'made:up'"):
        IFEvalScoreData.from_reply("x", ["made:up"], [{}])


def test_ifeval_data_rows_round_trip_into_the_env_and_score():
    from rl_llm.envs import IFEvalData, IFEvalEnv

    item = {
        "key": 3,
        "prompt": "Answer in lowercase, ending with 'bye.'",
        "instruction_id_list": ["change_case:english_lowercase", "startend:end_checker"],
        "kwargs": [{}, {"end_phrase": "bye."}],
    }
    row = IFEvalData.from_item(item)
    assert row.to_item() == item
    env = IFEvalEnv([row.to_item()], batch_size=(1,))
    assert env.reset()["history"].prompt[0, -1].content == item["prompt"]
    with pytest.raises(ValueError, match="expected a response to score, got None"):
        row.score()
    row.response = "Sure:\nok bye."
    score = row.score()
    assert score.prompt_level_strict_acc.item() is False
    assert score.prompt_level_loose_acc.item() is True
    with pytest.raises(ValueError, match="unknown instruction id 'made:up'"):
        IFEvalData.from_item({"prompt": "x", "instruction_id_list": ["made:up"], "kwargs": [{}]})
    with pytest.raises(ValueError, match="expected an item with 'prompt'"):
        IFEvalData.from_item({"instruction_id_list": []})
