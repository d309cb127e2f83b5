import json
import time

import pytest

from rl_llm.data import History
from rl_llm.envs import IFEvalEnv, IfEvalScorer
from rl_llm.envs.ifeval import IFEVAL_CHECKS, check_instructions


@pytest.mark.parametrize(
    ("iid", "kwargs", "good", "bad"),
    [
        ("punctuation:no_comma", {}, "a b c", "a, b"),
        ("change_case:english_lowercase", {}, "all small", "Not all"),
        ("change_case:english_capital", {}, "LOUD TEXT", "Quiet"),
        (
            "length_constraints:number_words",
            {"num_words": 3, "relation": "less than"},
            "one two",
            "one two three",
        ),
        (
            "length_constraints:number_words",
            {"num_words": 3, "relation": "at least"},
            "one two three",
            "one two",
        ),
        (
            "length_constraints:number_sentences",
            {"num_sentences": 2, "relation": "at least"},
            "One. Two.",
            "Only one.",
        ),
        ("keywords:existence", {"keywords": ["cat", "dog"]}, "A Cat and a dog", "a cat"),
        ("keywords:forbidden_words", {"forbidden_words": ["bad"]}, "good badge", "so bad"),
        (
            "keywords:frequency",
            {"keyword": "ok", "frequency": 2, "relation": "at least"},
            "ok OK",
            "ok",
        ),
        ("detectable_format:title", {}, "<<My Title>>\ntext", "My Title"),
        ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* a\n* b", "* a"),
        ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', "{a: 1}"),
        (
            "startend:end_checker",
            {"end_phrase": "Any questions?"},
            "Done. Any questions?",
            "Any questions? Done.",
        ),
        ("startend:quotation", {}, '"quoted"', "not quoted"),
        ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Hi\nP.S. bye", "Hi"),
    ],
)
def test_each_check_passes_and_fails(iid, kwargs, good, bad):
    assert check_instructions(good, [iid], [kwargs]) == [True]
    assert check_instructions(bad, [iid], [kwargs]) == [False]


def test_unknown_ids_and_bad_kwargs_are_refused():
    with pytest.raises(ValueError, match="unknown instruction id 'language:response_language'"):
        check_instructions("x", ["language:response_language"], [{}])
    with pytest.raises(ValueError, match="bad kwargs"):
        check_instructions("x", ["keywords:existence"], [{"words": ["a"]}])
    with pytest.raises(ValueError, match="expected relation"):
        check_instructions(
            "x", ["length_constraints:number_words"], [{"num_words": 1, "relation": "about"}]
        )


def test_scorer_gives_the_fraction_followed():
    ref = json.dumps(
        {
            "instruction_id_list": [
                "punctuation:no_comma",
                "change_case:english_lowercase",
                "startend:end_checker",
            ],
            "kwargs": [{}, {}, {"end_phrase": "bye"}],
        }
    )
    assert IfEvalScorer().score("hello bye", ref) == (1.0, True)
    reward, _ = IfEvalScorer().score("Hello, bye", ref)
    assert abs(reward - 1 / 3) < 1e-12


def test_env_with_a_local_dataset():
    data = [
        {
            "key": 1,
            "prompt": "Answer in lowercase.",
            "instruction_id_list": ["change_case:english_lowercase"],
            "kwargs": [{}],
        },
        {
            "key": 2,
            "prompt": "Write two bullets, no commas.",
            "instruction_id_list": [
                "detectable_format:number_bullet_lists",
                "punctuation:no_comma",
            ],
            "kwargs": [{"num_bullets": 2}, {}],
        },
    ]
    env = IFEvalEnv(data, batch_size=(2,))
    td = env.reset()
    td["history"].full = td["history"].prompt.append(
        History.from_chats(
            [
                [{"role": "assistant", "content": "ok fine"}],
                [{"role": "assistant", "content": "hi"}],
            ]
        )
    )
    out = env.step(td)
    assert out["next", "reward"].squeeze(-1).tolist() == [1.0, 0.5]
    assert out["next", "success"].squeeze(-1).tolist() == [True, False]
    assert out["next", "done"].all()
    with pytest.raises(ValueError, match="unknown instruction ids"):
        IFEvalEnv([{"prompt": "x", "instruction_id_list": ["nope"], "kwargs": [{}]}])


# Issue 49: the case checks need cased letters; kwargs entries must be dicts.
CASE_IDS = ["change_case:english_capital", "change_case:english_lowercase"]


@pytest.mark.parametrize("reply", ["", "123 456", "  ", "42!"])
def test_case_checks_need_letters(reply):
    assert check_instructions(reply, CASE_IDS, [{}, {}]) == [False, False]
    ref = json.dumps({"instruction_id_list": CASE_IDS, "kwargs": [{}, {}]})
    assert IfEvalScorer().score(reply, ref) == (0.0, True)


def test_case_checks_keep_digits_beside_letters():
    assert check_instructions("ABC 123", CASE_IDS, [{}, {}]) == [True, False]
    assert check_instructions("abc 123", CASE_IDS, [{}, {}]) == [False, True]


def test_env_step_scores_replies_without_letters_zero():
    items = [
        {"prompt": "Shout.", "instruction_id_list": [CASE_IDS[0]], "kwargs": [{}]},
        {"prompt": "Whisper.", "instruction_id_list": [CASE_IDS[1]], "kwargs": [None]},
    ]
    env = IFEvalEnv(items, batch_size=(4,), repeats=2)
    td = env.reset()
    replies = ["", "OK 1", "123 456", "ok 1"]
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    out = env.step(td)
    assert out["next", "reward"].squeeze(-1).tolist() == [0.0, 1.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ([["a"]], r"expected kwargs\[0\] \(for 'punctuation:no_comma'\) to be a dict"),
        (["num_words"], r"expected kwargs\[0\] \(for 'punctuation:no_comma'\) to be a dict"),
        ({"a": 1}, "expected kwargs as a list of one dict per instruction, got dict"),
    ],
)
def test_kwargs_that_are_not_dicts_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=f"IfEvalScorer: {message}"):
        check_instructions("x", ["punctuation:no_comma"], kwargs)
    ref = json.dumps({"instruction_id_list": ["punctuation:no_comma"], "kwargs": kwargs})
    with pytest.raises(ValueError, match=f"IfEvalScorer: {message}"):
        IfEvalScorer().score("x", ref)
    item = {"prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": kwargs}
    with pytest.raises(ValueError, match=f"IFEvalEnv: {message}"):
        IFEvalEnv([item])


# Issue 49: any reply is scored in bounded time, never raised (no quadratic regex retries,
# no RecursionError from deeply nested JSON).
CHECK_KWARGS = {
    "length_constraints:number_words": {"num_words": 3, "relation": "at least"},
    "length_constraints:number_sentences": {"num_sentences": 2, "relation": "at least"},
    "keywords:existence": {"keywords": ["a"]},
    "keywords:forbidden_words": {"forbidden_words": ["b"]},
    "keywords:frequency": {"keyword": "a", "frequency": 2, "relation": "at least"},
    "detectable_format:number_bullet_lists": {"num_bullets": 2},
    "startend:end_checker": {"end_phrase": "bye"},
    "detectable_content:postscript": {"postscript_marker": "P.S."},
}
LONG_REPLIES = {
    "unclosed titles": "<<" * 20000,
    "blank lines": "\n" * 40000,
    "spaced blank lines": "\n \n" * 13000,
    "nested json": "[" * 40000 + "]" * 40000,
    "nested objects": '{"a":' * 8000 + "1" + "}" * 8000,
}


@pytest.mark.parametrize("name", LONG_REPLIES)
def test_every_check_scores_long_replies_quickly(name):
    ids = sorted(IFEVAL_CHECKS)
    kwargs = [CHECK_KWARGS.get(i, {}) for i in ids]
    start = time.process_time()
    followed = check_instructions(LONG_REPLIES[name], ids, kwargs)
    assert time.process_time() - start < 0.5
    assert len(followed) == len(ids)
    by_id = dict(zip(ids, followed, strict=True))
    assert by_id["detectable_format:title"] is False
    assert by_id["detectable_format:number_bullet_lists"] is False
    assert by_id["detectable_content:postscript"] is False
    assert by_id["detectable_format:json_format"] is False  # deeper than the decoder goes


def test_layout_checks_keep_their_reading():
    assert check_instructions("a <<>> b <<T>>", ["detectable_format:title"], [{}]) == [True]
    assert check_instructions("<< >> <<\n>>", ["detectable_format:title"], [{}]) == [False]
    assert check_instructions("<<<>>", ["detectable_format:title"], [{}]) == [True]
    bullets = ["detectable_format:number_bullet_lists"]
    assert check_instructions("\n\n  * a\n\t- b\n*c", bullets, [{"num_bullets": 2}]) == [True]
    assert check_instructions("*\n* a", bullets, [{"num_bullets": 2}]) == [True]
    postscript = ["detectable_content:postscript"]
    marker = [{"postscript_marker": "P.S."}]
    assert check_instructions("Hi\n\n   p.s. bye", postscript, marker) == [True]
    assert check_instructions("Hi P.S. bye", postscript, marker) == [False]


def test_env_step_scores_long_replies_quickly():
    item = {
        "prompt": "p",
        "instruction_id_list": ["detectable_format:title", "detectable_format:json_format"],
        "kwargs": [{}, {}],
    }
    replies = list(LONG_REPLIES.values())
    env = IFEvalEnv([item], batch_size=(len(replies),), repeats=len(replies))
    td = env.reset()
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    start = time.process_time()
    out = env.step(td)
    assert time.process_time() - start < 1.0
    assert out["next", "reward"].squeeze(-1).tolist() == [0.0] * len(replies)


# Issue 56: a blank reply follows no instruction (IFEval's rule); "say nothing" scored 1.0 on
# every negative instruction (no commas, fewer words, forbidden words).
NEGATIVE = {
    "punctuation:no_comma": {},
    "keywords:forbidden_words": {"forbidden_words": ["cat"]},
    "length_constraints:number_words": {"num_words": 50, "relation": "less than"},
    "length_constraints:number_sentences": {"num_sentences": 3, "relation": "less than"},
    "keywords:frequency": {"keyword": "cat", "frequency": 2, "relation": "less than"},
}


@pytest.mark.parametrize("reply", ["", "   ", "\n\t"])
def test_blank_replies_follow_no_instruction(reply):
    ids, kwargs = list(NEGATIVE), list(NEGATIVE.values())
    assert check_instructions(reply, ids, kwargs) == [False] * len(ids)
    ref = json.dumps({"instruction_id_list": ids, "kwargs": kwargs})
    assert IfEvalScorer().score(reply, ref) == (0.0, True)
    assert IfEvalScorer().score("a dog ran.", ref) == (1.0, True)
    with pytest.raises(ValueError, match="unknown instruction id 'made:up'"):
        check_instructions(reply, ["made:up"], [{}])
