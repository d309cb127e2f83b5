"""The tool-calling framework: parsers, registry, ExecuteToolsInOrder; adversarial replies."""

import json
import threading
import time

import pytest
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import (
    ChatEnv,
    ExecuteToolsInOrder,
    JSONCallParser,
    ToolCall,
    ToolRegistry,
    ToolService,
    XMLBlockParser,
)


class Add:
    name, schema_in, schema_out = "add", {"a": int, "b": int}, {"result": int}

    def __call__(self, a, b):
        return {"result": a + b}


class Echo:
    """Records the calls it gets, in order, and what state it was handed."""

    name, schema_in, schema_out = "echo", {"x": str}, {"x": str}

    def __init__(self):
        self.seen = []

    def __call__(self, x, _state=None):
        self.seen.append((x, _state))
        return {"x": x}


class Raises:
    name, schema_in, schema_out = "boom", {}, {}

    def __call__(self, kind="value"):
        if kind == "exit":
            raise SystemExit(3)
        raise ValueError("no luck")


class Blocks:
    """Waits until released: a tool that does not return in time."""

    name, schema_in, schema_out = "slow", {}, {}

    def __init__(self):
        self.release = threading.Event()

    def __call__(self):
        self.release.wait(30)
        return {"done": True}


class Floods:
    name, schema_in, schema_out = "flood", {}, {}

    def __call__(self):
        return {"out": "x" * 1_000_000}


class Weird:
    name, schema_in, schema_out = "weird", {}, {}

    def __call__(self):
        loop = []
        loop.append(loop)
        return {"loop": loop}


def _step(env, replies):
    td = env.reset(TensorDict(query=["q"] * len(replies), batch_size=[len(replies)]))
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    return env.step(td)["next", "history"].prompt


def test_xml_parser_reads_calls_in_order_and_reports_malformed_ones():
    reply = (
        'Let me see. <tool name="add" tag="A">{"a": 1, "b": 2}</tool>'
        '<tool name="echo">{"x": "hi"}</tool>'
        '<tool name="add">{"a": 1,</tool>'
        '<tool name="add">[1, 2]</tool>'
        "<tool>{}</tool>"
        '<tool name="bad name!">{}</tool>'
        "<tools>are not calls</tools> Done."
    )
    out = XMLBlockParser()(reply)
    assert out["text"] == "Let me see. <tools>are not calls</tools> Done."
    calls = out["calls"]
    assert [c.tool for c in calls[:2]] == ["add", "echo"]
    assert calls[0] == ToolCall("add", {"a": 1, "b": 2}, "A", None)
    assert calls[2].error.startswith("arguments are not JSON")
    assert calls[3].error == "arguments must be a JSON object, got list"
    assert calls[4].error == 'malformed <tool> tag: expected name="<tool name>"'
    assert calls[5].error == 'malformed <tool> tag: expected name="<tool name>"'
    unclosed = XMLBlockParser()('<tool name="add">{"a": 1}')["calls"]
    assert unclosed == [ToolCall("add", error="no </tool> closes the block")]
    assert XMLBlockParser()("<tool name=" + "a" * 600)["calls"][0].error.startswith("malformed")


def test_xml_parser_limits_calls_and_body_and_stays_linear():
    many = '<tool name="add">{"a": 1, "b": 1}</tool>' * 5
    calls = XMLBlockParser(max_calls=3)(many)["calls"]
    assert len(calls) == 4
    assert calls[3].error == "more than 3 tool calls; the rest were not run"
    big = XMLBlockParser(max_body_chars=10)('<tool name="add">{"a": 11111111111}</tool>')
    assert big["calls"][0].error == "arguments longer than 10 characters (18)"
    deep = XMLBlockParser()('<tool name="add">' + "[" * 100_000 + "</tool>")["calls"][0]
    assert deep.error.startswith("arguments are not")
    # Adversarial replies of 200,000 characters parse in linear time.
    for reply in ["<tool " * 40_000, '<tool name="a">' * 15_000, "<tool" * 40_000]:
        start = time.perf_counter()
        XMLBlockParser()(reply)
        assert time.perf_counter() - start < 0.5
    with pytest.raises(ValueError, match="expected max_calls >= 1 and max_body_chars >= 1"):
        XMLBlockParser(max_calls=0)


def test_json_parser_reads_calls_and_reports_bad_ones():
    reply = json.dumps(
        {
            "message": "Working.",
            "tools": [
                {"tool": "add", "args": {"a": 1, "b": 2}, "tag": "t1"},
                {"tool": "echo"},
                {"args": {}},
                {"tool": "add", "args": [1]},
                "add",
            ],
        }
    )
    out = JSONCallParser()(reply)
    assert out["text"] == "Working."
    calls = out["calls"]
    assert calls[0] == ToolCall("add", {"a": 1, "b": 2}, "t1")
    assert calls[1] == ToolCall("echo", {})
    assert calls[2].error == 'tools[2]: expected "tool": a tool name, got None'
    assert calls[3].error == 'tools[3]: expected "args": an object, got list'
    assert calls[4].error == "tools[4]: expected an object, got str"
    assert JSONCallParser()("just text, no calls")["calls"] == []
    assert JSONCallParser()('{"message": "x", "tools": 3}')["calls"][0].error == (
        '"tools" must be a list, got int'
    )
    broken = JSONCallParser()('{"tools": [')["calls"][0].error
    assert broken.startswith("the reply is not a JSON call object: arguments are not JSON")
    deep = JSONCallParser()("{" + '"a":[' * 100_000)["calls"]
    assert deep[0].error.startswith("the reply is not a JSON call object")


def test_registry_refuses_bad_services():
    registry = ToolRegistry([Add()])
    assert isinstance(Add(), ToolService)
    assert registry.names() == ["add"]
    with pytest.raises(ValueError, match="a tool named 'add' is already registered"):
        registry.register(Add())
    bad = Add()
    bad.name = "no spaces"
    with pytest.raises(ValueError, match=r"expected a tool name .* got 'no spaces'"):
        registry.register(bad)
    with pytest.raises(TypeError, match="expected a callable with a string `name`, got int"):
        registry.register(3)
    with pytest.raises(KeyError, match="unknown tool 'mul'; known tools: add"):
        registry.get("mul")


def test_calls_run_in_order_and_results_reach_the_next_prompt():
    echo = Echo()
    tools = ExecuteToolsInOrder(ToolRegistry([Add(), echo]), XMLBlockParser())
    env = TransformedEnv(ChatEnv(batch_size=(2,)), tools)
    replies = [
        '<tool name="echo">{"x": "first"}</tool> then <tool name="add">{"a": 2, "b": 3}</tool>'
        '<tool name="echo" tag="z">{"x": "third"}</tool>',
        "no call here",
    ]
    prompt = _step(env, replies)
    assert list(prompt[:, -1].role) == ["tool", "tool"]
    assert prompt[0, -1].content == (
        '[1] echo: {"x": "first"}\n[2] add: {"result": 5}\n[3] echo (tag z): {"x": "third"}'
    )
    assert prompt[1, -1].content == "(no tool call in the last message)"
    assert [x for x, _ in echo.seen] == ["first", "third"]
    # The tool got the dialog's index and history (ending with the reply).
    state = echo.seen[0][1]
    assert state["index"] == 0
    assert state["history"][-1] == {"role": "assistant", "content": replies[0]}


def test_every_bad_call_gives_a_named_error_turn_never_a_crash():
    slow, flood = Blocks(), Floods()
    registry = ToolRegistry([Add(), Raises(), slow, flood, Weird(), Echo()])
    tools = ExecuteToolsInOrder(registry, XMLBlockParser(), timeout=0.3, max_output_chars=100)
    env = TransformedEnv(ChatEnv(batch_size=(1,)), tools)
    reply = (
        '<tool name="nope">{}</tool>'
        '<tool name="add">{"a": 1}</tool>'
        '<tool name="boom">{}</tool>'
        '<tool name="boom">{"kind": "exit"}</tool>'
        '<tool name="slow"></tool>'
        '<tool name="slow"></tool>'
        '<tool name="flood"></tool>'
        '<tool name="weird"></tool>'
        '<tool name="echo">{"x": "a", "_state": {"index": 99}}</tool>'
        '<tool name="add">{"a": 1, "b": 2,}</tool>'
        '<tool name="add">{"a": 40, "b": 2}</tool>'
    )
    try:
        lines = _step(env, [reply])[0, -1].content.split("\n")
    finally:
        slow.release.set()
    assert (
        lines[0]
        == "[1] nope: error: unknown tool 'nope'; known tools: add, boom, echo, flood, slow, weird"
    )
    assert lines[1].startswith("[2] add: error: TypeError:")
    assert lines[1].endswith("missing 1 required positional argument: 'b'")
    assert lines[2] == "[3] boom: error: ValueError: no luck"
    assert lines[3] == "[4] boom: error: SystemExit: 3"
    assert lines[4] == "[5] slow: error: timed out after 0.3 s"
    assert (
        lines[5]
        == "[6] slow: error: the tool is still running a previous call that timed out; not run"
    )
    assert lines[6].startswith('[7] flood: {"out": "xxx')
    assert len(lines[6]) == len("[7] flood: ") + 100
    assert lines[7] == "[output cut to 100 characters]"
    assert lines[8] == "[8] weird: error: the result is not printable as JSON (ValueError)"
    assert (
        lines[9] == "[9] echo: error: argument names starting with '_' are reserved, got ['_state']"
    )
    assert lines[10].startswith("[10] add: error: arguments are not JSON")
    assert lines[11] == '[11] add: {"result": 42}'


def test_stop_on_error_and_a_failing_parser():
    tools = ExecuteToolsInOrder(ToolRegistry([Add()]), XMLBlockParser(), stop_on_error=True)
    env = TransformedEnv(ChatEnv(batch_size=(1,)), tools)
    reply = '<tool name="add">{"a": 1, "b": 1}</tool><tool name="x"></tool><tool name="add"></tool>'
    assert _step(env, [reply])[0, -1].content.split("\n") == [
        '[1] add: {"result": 2}',
        "[2] x: error: unknown tool 'x'; known tools: add",
        "[3-3] not run: an earlier call failed (stop_on_error)",
    ]

    def broken_parser(response):
        raise RuntimeError("parser bug")

    env = TransformedEnv(
        ChatEnv(batch_size=(1,)), ExecuteToolsInOrder(ToolRegistry(), broken_parser)
    )
    assert (
        _step(env, ["hi"])[0, -1].content
        == "error: the tool parser failed (RuntimeError: parser bug)"
    )
    with pytest.raises(TypeError, match="expected registry to be a ToolRegistry, got dict"):
        ExecuteToolsInOrder({}, XMLBlockParser())
    with pytest.raises(ValueError, match="expected timeout > 0 and max_output_chars >= 1"):
        ExecuteToolsInOrder(ToolRegistry(), XMLBlockParser(), timeout=0)
