"""Property tests of the task rewards: every reply is scored (never raised), numbers compare
exactly, intervals by their brackets, listed candidates and blank replies never pay."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rl_llm.envs import (
    CountdownRewardParser,
    GSM8KRewardParser,
    IfEvalScorer,
    MATHRewardParser,
    answer_reward,
)
from rl_llm.envs.math_env import math_equivalent

# database=None: no example database written into the working tree.
SETTINGS = settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)

# Pieces a model's output is made of, odd ones included: tags (closed, unclosed, nested),
# LaTeX, brackets, signs, separators, huge and tiny numbers, unicode digits and blanks.
PIECES = st.sampled_from(
    [
        "<answer>", "</answer>", "<answer", "answer>", "\\boxed{", "}", "{", "\\frac{", "\\sqrt{",
        "\\left(", "\\right)", "(", ")", "[", "]", ",", ".", "-", "+", "*", "/", "^", "**", "=",
        "$", "%", "#### ", " ", "\n", "\t", "0", "1", "7", "9" * 40, "1e308", "1e-400", "inf",
        "nan", "x", "pi", "\\pi", "dollars", "or", "and", "٣", "½", "²", "\u00a0", "\x00",
        "{}" * 3, "(" * 30, "10**10**10", "9**9**9", "1/0", "0/0", "\\infty", "∞",
    ]
)  # fmt: skip
REPLIES = st.one_of(
    st.lists(PIECES, max_size=25).map("".join),
    st.text(max_size=60),
    st.builds(lambda s: f"<answer>{s}</answer>", st.lists(PIECES, max_size=12).map("".join)),
)
BIG = st.integers(-(10**60), 10**60)


def _ok(score, parser):
    reward, answered = score
    assert isinstance(reward, float)
    assert isinstance(answered, bool)
    assert reward in (0.0, parser.format_reward, parser.correct_reward)


@SETTINGS
@given(reply=REPLIES, reference=REPLIES)
def test_gsm8k_and_math_score_any_reply_and_any_reference(reply, reference):
    for parser in (GSM8KRewardParser(), MATHRewardParser()):
        _ok(parser.score(reply, reference), parser)


@SETTINGS
@given(reply=REPLIES, numbers=st.lists(st.integers(0, 50), max_size=4), target=BIG)
def test_countdown_scores_any_reply(reply, numbers, target):
    parser = CountdownRewardParser()
    _ok(parser.score(reply, json.dumps({"numbers": numbers, "target": target})), parser)


@SETTINGS
@given(reply=REPLIES)
def test_ifeval_scores_any_reply_between_zero_and_one(reply):
    ids = ["punctuation:no_comma", "change_case:english_lowercase", "detectable_format:title"]
    reference = json.dumps({"instruction_id_list": ids, "kwargs": [{}, {}, {}]})
    reward, answered = IfEvalScorer().score(reply, reference)
    assert answered is True
    assert reward in (0.0, 1 / 3, 2 / 3, 1.0)
    if not reply.strip():
        assert reward == 0.0  # a blank reply follows no instruction


@SETTINGS
@given(a=BIG, b=BIG)
def test_integers_compare_exactly(a, b):
    assert answer_reward(f"<answer>{a}</answer>", f"#### {b}") == (1.0 if a == b else 0.1)
    math_reward = MATHRewardParser().score(f"<answer>{a}</answer>", f"\\boxed{{{b}}}")
    assert math_reward == ((1.0, True) if a == b else (0.1, True))


@SETTINGS
@given(
    p=st.integers(-(10**20), 10**20),
    q=st.integers(1, 10**20),
    r=st.integers(-(10**20), 10**20),
    s=st.integers(1, 10**20),
)
def test_rationals_compare_exactly(p, q, r, s):
    # The reply is simplified (lowest terms, an integer when whole): a reply that leaves a
    # division to do matches only a reference written the same way.
    x = Fraction(p, q)
    sign = "-" if x < 0 else ""
    if x.denominator == 1:
        reply, plain = f"<answer>{x.numerator}</answer>", str(x.numerator)
    else:
        reply = f"<answer>{sign}\\frac{{{abs(x.numerator)}}}{{{x.denominator}}}</answer>"
        plain = f"{x.numerator}/{x.denominator}"
    expected = x == Fraction(r, s)
    assert math_equivalent(plain, f"{r}/{s}") is expected
    reward = MATHRewardParser().score(reply, f"\\boxed{{\\frac{{{r}}}{{{s}}}}}")
    assert reward == ((1.0, True) if expected else (0.1, True))


@SETTINGS
@given(
    ends=st.tuples(st.sampled_from("(["), st.sampled_from(")]")),
    reference_ends=st.tuples(st.sampled_from("(["), st.sampled_from(")]")),
    lo=st.integers(-100, 100),
    hi=st.integers(-100, 100),
)
def test_intervals_compare_by_their_brackets(ends, reference_ends, lo, hi):
    reply = f"{ends[0]}{lo}, {hi}{ends[1]}"
    reference = f"{reference_ends[0]}{lo},{hi}{reference_ends[1]}"
    assert math_equivalent(reply, reference) is (ends == reference_ends)


@SETTINGS
@given(
    right=BIG,
    others=st.lists(BIG, min_size=1, max_size=5),
    sep=st.sampled_from([" or ", ", ", " ", "; ", " and "]),
)
def test_listed_candidates_never_pay(right, others, sep):
    listed = sep.join(str(x) for x in [*others, right])
    assert answer_reward(f"<answer>{listed}</answer>", str(right)) == 0.0
    assert MATHRewardParser().score(f"<answer>{listed}</answer>", f"\\boxed{{{right}}}")[0] < 1.0


def test_replies_that_make_python_warn_are_scored_silently():
    # "1or 2" is a SyntaxWarning ("invalid decimal literal") to Python's tokenizer.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for reply in ("1or 2", "7and 3", "1if 1 else 2"):
            assert MATHRewardParser().score(f"<answer>{reply}</answer>", "\\boxed{1}") == (
                0.1,
                True,
            )
            assert answer_reward(f"<answer>{reply}</answer>", "1") == 0.0
    assert [str(w.message) for w in caught] == []
