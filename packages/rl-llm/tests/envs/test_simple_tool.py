import pytest
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import ChatEnv, SimpleToolTransform


def _divide(a, b):
    return a / b


def test_calls_registered_functions_and_reports_errors():
    env = TransformedEnv(
        ChatEnv(batch_size=(3,)), SimpleToolTransform({"add": lambda a, b: a + b, "div": _divide})
    )
    td = env.reset(TensorDict(query=["q"] * 3, batch_size=[3]))
    replies = [
        '<tool name="add">{"a": 1, "b": 2}</tool> and <tool name="div">{"a": 1, "b": 4}</tool>',
        '<tool name="div">{"a": 1, "b": 0}</tool><tool name="nope">{}</tool>',
        '<tool name="add">not json</tool>',
    ]
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    prompt = env.step(td)["next", "history"].prompt
    assert prompt[0, -1].content == "add: 3\ndiv: 0.25"
    assert prompt[1, -1].content == (
        "div: error: ZeroDivisionError: division by zero\n"
        "nope: error: unknown tool; known tools are ['add', 'div']"
    )
    assert prompt[2, -1].content.startswith("add: error: arguments are not JSON")


def test_bad_input_is_reported():
    with pytest.raises(TypeError, match=r"expected callables, got non-callable \['x'\]"):
        SimpleToolTransform({"x": 3})
    tool = SimpleToolTransform({"f": lambda: 1})
    assert tool.call("f", "[1]") == "f: error: arguments must be a JSON object, got list"
