"""MCPToolTransform against real MCP servers (the mcp SDK, stdio) started by the tests."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import ChatEnv, MCPToolTransform

pytest.importorskip("mcp")

SERVER = textwrap.dedent(
    '''
    import os
    import subprocess
    import time

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("calc")


    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b


    @server.tool()
    def fail(message: str) -> str:
        """Always raises."""
        raise RuntimeError(message)


    @server.tool()
    def sleep(seconds: float) -> str:
        """Sleeps (blocking the server)."""
        time.sleep(seconds)
        return "slept"


    @server.tool()
    def die() -> str:
        """Kills the server process."""
        os._exit(3)


    @server.tool()
    def spawn() -> str:
        """Starts two background sleepers: one in the server's group, one in a new group."""
        grouped = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
        regrouped = subprocess.Popen(["sleep", "1000"], process_group=0)
        return f"{grouped.pid} {regrouped.pid}"


    if __name__ == "__main__":
        server.run()
    '''
)


@pytest.fixture(scope="module")
def server_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("mcp") / "calc_server.py"
    path.write_text(SERVER)
    return {"command": sys.executable, "args": [str(path)]}


@pytest.fixture(scope="module")
def calc(server_config):
    transform = MCPToolTransform({"calc": server_config}, timeout=20.0)
    yield transform
    transform.close()


def _step(env, replies):
    td = env.reset(TensorDict(query=["q"] * len(replies), batch_size=[len(replies)]))
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    return env.step(td)["next", "history"].prompt


def test_a_tool_call_gets_the_server_result_in_the_next_turn(calc):
    env = TransformedEnv(ChatEnv(batch_size=(3,)), calc)
    history = _step(
        env,
        [
            'Let me add. <tool>calc.add\n{"a": 2, "b": 40}</tool>',
            "no call here",
            '<tool>add\n{"a": 1, "b": 1}</tool> <tool>calc.fail\n{"message": "boom"}</tool>',
        ],
    )
    assert history.batch_size == (3, 3)
    assert [str(r) for r in history[:, -1].role] == ["tool"] * 3
    contents = [str(c) for c in history[:, -1].content]
    assert contents[0] == "calc.add: 42"
    assert contents[1] == "(no tool call in the last message)"
    first, second = contents[2].split("\n", 1)
    assert first == "add: 2"
    assert second.startswith("calc.fail: error:")
    env.transform.reset_parent()


def test_bad_calls_give_error_messages(calc):
    assert calc.call("calc.nope", "{}").startswith("calc.nope: error:")
    assert calc.call("calc.add", "{not json").startswith("calc.add: error: arguments are not JSON")
    assert "must be a JSON object" in calc.call("calc.add", "[1, 2]")
    assert calc.call("calc.add", '{"a": "x", "b": 1}').startswith("calc.add: error:")


def test_a_hanging_tool_times_out_and_the_server_restarts(server_config):
    transform = MCPToolTransform({"calc": server_config}, timeout=20.0)
    try:
        assert transform.call("calc.add", '{"a": 1, "b": 2}') == "calc.add: 3"  # warm start
        transform.timeout = 1.0
        start = time.monotonic()
        out = transform.call("calc.sleep", '{"seconds": 60}')
        elapsed = time.monotonic() - start
        assert out == "calc.sleep: error: no answer within 1 s (server 'calc')"
        assert elapsed < 6.0
        transform.timeout = 20.0
        assert transform.call("calc.add", '{"a": 5, "b": 5}') == "calc.add: 10"  # restarted
        # A server that dies mid-call: an error, then a fresh server.
        assert transform.call("calc.die").startswith("calc.die: error: server 'calc' failed")
        assert transform.call("calc.add", '{"a": 0, "b": 7}') == "calc.add: 7"
    finally:
        transform.close()


def test_servers_that_fail_or_never_answer_give_errors_within_the_timeout(tmp_path):
    silent = tmp_path / "silent.py"
    silent.write_text("import time\ntime.sleep(60)\n")
    transform = MCPToolTransform(
        {
            "silent": {"command": sys.executable, "args": [str(silent)]},
            "broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(1)"]},
            "missing": {"command": str(tmp_path / "no-such-program")},
        },
        timeout=2.0,
    )
    env = TransformedEnv(ChatEnv(batch_size=(3,)), transform)
    try:
        start = time.monotonic()
        history = _step(
            env,
            [
                "<tool>silent.x\n{}</tool>",
                "<tool>broken.x\n{}</tool>",
                "<tool>missing.x\n{}</tool>",
            ],
        )
        elapsed = time.monotonic() - start
        contents = [str(c) for c in history[:, -1].content]
        assert contents[0] == "silent.x: error: no answer within 2 s (server 'silent')"
        assert contents[1].startswith("broken.x: error:")
        assert contents[2].startswith("missing.x: error: server 'missing' failed")
        assert elapsed < 10.0
        assert transform.call("other.x", "{}").startswith("other.x: error: unknown server")
    finally:
        transform.close()


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="expected servers as"):
        MCPToolTransform({"calc": {"args": []}})
    with pytest.raises(ValueError, match="tool_name must be a chat role"):
        MCPToolTransform({"calc": {"command": "x"}}, tool_name="robot")


def _start_time(pid: int) -> str | None:
    """The process's start time (from /proc), None once it is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] in "ZX" else fields[19]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_close_kills_the_processes_the_servers_tools_started(server_config):
    transform = MCPToolTransform({"calc": server_config}, timeout=20.0)
    pids = []
    try:
        out = transform.call("calc.spawn")
        assert out.startswith("calc.spawn: "), out
        pids = [int(p) for p in out.removeprefix("calc.spawn: ").split()]
        started = {pid: _start_time(pid) for pid in pids}
        assert all(started.values()), out
        transform.close()
        deadline = time.monotonic() + 10.0
        alive = pids
        while alive and time.monotonic() < deadline:
            alive = [pid for pid in pids if _start_time(pid) == started[pid]]
            time.sleep(0.05)
        assert alive == [], f"still running after close: {alive}"
    finally:
        transform.close()
        for pid in pids:  # the test's own sleepers, if close left them
            if _start_time(pid) is not None:
                os.kill(pid, signal.SIGKILL)
