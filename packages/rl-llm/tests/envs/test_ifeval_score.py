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
