"""PythonExecutorService: a sandboxed pool shared by several envs, and an end-to-end episode."""

import threading

import pytest
import torch
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import (
    ChatEnv,
    ExecuteToolsInOrder,
    JSONCallParser,
    PythonExecutorService,
    ToolRegistry,
    XMLBlockParser,
    _sandbox,
)
from rl_llm.modules import TransformersWrapper

pytestmark = pytest.mark.skipif(
    _sandbox.landlock_abi() < 1, reason="the kernel has no Landlock: the sandbox refuses to run"
)


class Add:
    name, schema_in, schema_out = "add", {"a": int, "b": int}, {"result": int}

    def __call__(self, a, b):
        return {"result": a + b}


def _reply_step(env, td, replies):
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    return env.step(td)


def test_runs_are_bounded_by_the_pool_across_envs():
    service = PythonExecutorService(pool_size=1, timeout=5)
    envs = [
        TransformedEnv(
            ChatEnv(batch_size=(2,)),
            ExecuteToolsInOrder(ToolRegistry([service]), XMLBlockParser()),
        )
        for _ in range(2)
    ]
    code = json_code = (
        '<tool name="python">{"code": "import time; time.sleep(0.2); print(7)"}</tool>'
    )
    del json_code
    results = [None, None]

    def run(k):
        td = envs[k].reset(TensorDict(query=["q", "q"], batch_size=[2]))
        results[k] = _reply_step(envs[k], td, [code, code])["next", "history"].prompt

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert service.runs == 4
    assert service.max_in_flight == 1
    for prompt in results:
        for i in range(2):
            assert '"success": true, "stdout": "7\\n"' in prompt[i, -1].content


def test_limits_are_kernel_enforced_and_reported():
    service = PythonExecutorService(pool_size=2, timeout=1, max_output_chars=50)
    loop = service(code="while True: pass")
    assert loop["timed_out"] is True
    assert loop["success"] is False
    assert loop["stderr"].endswith("killed: time limit of 1 s reached")
    flood = service(code="print('y' * 10_000_000)")
    assert flood["stdout"] == "y" * 50 + "\n[stdout cut to 50 characters]"
    crash = service(code="raise SystemExit(4)")
    assert (crash["success"], crash["returncode"]) == (False, 4)
    with pytest.raises(TypeError, match="expected `code` to be a string, got int"):
        service.execute(3)
    with pytest.raises(ValueError, match="expected pool_size >= 1"):
        PythonExecutorService(pool_size=0)


def test_tool_calling_episode_end_to_end(tiny_model, tiny_tokenizer):
    """XML and JSON calls of one reply each, run in order in the sandbox pool; the next turn's
    prompt (what the tiny policy reads and answers) holds the results."""
    service = PythonExecutorService(pool_size=2, timeout=5)
    registry = ToolRegistry([service, Add()])
    env = TransformedEnv(
        ChatEnv(batch_size=(2,)), ExecuteToolsInOrder(registry, XMLBlockParser(), timeout=20)
    )
    json_env = TransformedEnv(
        ChatEnv(batch_size=(2,)), ExecuteToolsInOrder(registry, JSONCallParser(), timeout=20)
    )
    policy = TransformersWrapper(tiny_model, tiny_tokenizer, generate_kwargs={"max_new_tokens": 4})
    xml_replies = [
        '<tool name="python">{"code": "print(sum(range(5)))"}</tool>'
        '<tool name="add">{"a": 2, "b": 3}</tool>',
        '<tool name="python">{"code": "import os; os.kill(1, 9)"}</tool>',
    ]
    json_replies = [
        '{"message": "ok", "tools": [{"tool": "add", "args": {"a": 1, "b": 1}}, '
        '{"tool": "python", "args": {"code": "print(3 * 3)"}}]}',
        '{"message": "oops", "tools": [{"tool": "python", "args": {"code": 5}}]}',
    ]
    for e, replies in ((env, xml_replies), (json_env, json_replies)):
        td = e.reset(TensorDict(query=["compute", "try"], batch_size=[2]))
        nxt = _reply_step(e, td, replies)["next"]
        tool_turns = [nxt["history"].prompt[i, -1].content for i in range(2)]
        # The next turn: the policy reads the history with the tool results and answers.
        answered = policy(nxt.select("history"))
        full = answered["history"].full
        for i in range(2):
            assert full[i, -2].role == "tool"
            assert full[i, -2].content == tool_turns[i]
            assert full[i, -1].role == "assistant"
        if e is env:
            assert (
                tool_turns[0]
                .split("\n")[0]
                .startswith('[1] python: {"success": true, "stdout": "10\\n"')
            )
            assert tool_turns[0].split("\n")[1] == '[2] add: {"result": 5}'
            # The sandbox's own init is pid 1 there: the kill stays inside it.
            assert tool_turns[1].startswith("[1] python: {")
        else:
            assert tool_turns[0].split("\n")[0] == '[1] add: {"result": 2}'
            assert '"stdout": "9\\n"' in tool_turns[0].split("\n")[1]
            assert tool_turns[1] == (
                "[1] python: error: TypeError: PythonExecutorService.execute: expected `code` "
                "to be a string, got int."
            )
    assert service.runs == 3
    assert torch.is_tensor(answered["tokens"].response)


def test_python_interpreters_share_one_pool():
    from rl_llm.envs import PythonInterpreter

    service = PythonExecutorService(pool_size=1, timeout=5)
    envs = [
        TransformedEnv(ChatEnv(batch_size=(2,)), PythonInterpreter(service=service))
        for _ in range(2)
    ]
    replies = ["```python\nprint(3 + 4)\n```", "```python\nraise SystemExit(2)\n```"]
    results = [None, None]

    def run(k):
        td = envs[k].reset(TensorDict(query=["q", "q"], batch_size=[2]))
        results[k] = _reply_step(envs[k], td, replies)["next", "history"].prompt

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert (service.runs, service.max_in_flight) == (4, 1)
    for prompt in results:
        assert prompt[0, -1].content == "stdout:\n7\n"
        assert prompt[1, -1].content == "exit code: 2"
    with pytest.raises(TypeError, match="expected service to be a PythonExecutorService, got dict"):
        PythonInterpreter(service={})
