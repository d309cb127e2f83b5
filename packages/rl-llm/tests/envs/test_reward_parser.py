import random
import re
import time

from rl_llm.envs._reward_parser import last_answer_tag


def _regex_reading(text):
    found = re.findall(r"<answer>(.*?)</answer>", text, re.DOTALL)
    return found[-1] if found else None


def test_last_answer_tag_reads_as_the_regex_does():
    rng = random.Random(0)
    pieces = ["<answer>", "</answer>", "x", " ", "\n", "<", ">", "answer", "</", "7"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert last_answer_tag(text) == _regex_reading(text), text


def test_last_answer_tag_is_linear_in_the_reply():
    text = "<answer>" * 20000 + "</answe"
    start = time.process_time()
    assert last_answer_tag(text) is None
    assert last_answer_tag(text + "r>") == "<answer>" * 19999
    assert time.process_time() - start < 0.1
