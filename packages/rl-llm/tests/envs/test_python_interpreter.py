import socket
import time

import pytest
from tensordict import TensorDict

from rl_core import TransformedEnv
from rl_llm.data import History
from rl_llm.envs import ChatEnv, PythonInterpreter, _sandbox

pytestmark = pytest.mark.skipif(
    _sandbox.landlock_abi() < 1, reason="the kernel has no Landlock: the sandbox refuses to run"
)


def _step_with_replies(env, replies):
    td = env.reset(TensorDict(query=["q"] * len(replies), batch_size=[len(replies)]))
    td["history"].full = td["history"].prompt.append(
        History.from_chats([[{"role": "assistant", "content": r}] for r in replies])
    )
    return env.step(td)["next", "history"].prompt


def test_outputs_go_back_into_the_history():
    env = TransformedEnv(ChatEnv(batch_size=(3,)), PythonInterpreter())
    replies = [
        "```python\nprint(sum(range(10)))\n```",
        "no code here",
        "```python\nimport sys\nprint('oops', file=sys.stderr)\nraise SystemExit(3)\n```",
    ]
    prompt = _step_with_replies(env, replies)
    assert prompt.batch_size == (3, 3)
    assert list(prompt[:, -1].role) == ["tool"] * 3
    assert prompt[0, -1].content == "stdout:\n45\n"
    assert prompt[1, -1].content == "(no tool call in the last message)"
    assert prompt[2, -1].content == "stderr:\noops\n\nexit code: 3"


def test_no_code_anywhere_adds_no_message():
    env = TransformedEnv(ChatEnv(batch_size=(1,)), PythonInterpreter())
    assert _step_with_replies(env, ["just text"]).batch_size == (1, 2)


def test_cannot_read_outside_its_directory(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    tool = PythonInterpreter()
    out = tool.run(f"print(open({str(secret)!r}).read())")
    assert "PermissionError" in out
    assert "top secret" not in out
    assert "PermissionError" in tool.run("import os\nprint(os.listdir('/root'))")
    # Its own temporary directory is writable and readable.
    assert tool.run("open('a.txt', 'w').write('x')\nprint(open('a.txt').read())") == "stdout:\nx\n"


@pytest.mark.parametrize("use_netns", [True, False])
def test_cannot_connect_to_a_local_socket(use_netns):
    if not use_netns and _sandbox.landlock_abi() < 4:
        pytest.skip("Landlock ABI < 4 has no TCP rule: only the network namespace blocks TCP")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.5)
    port = server.getsockname()[1]
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('in')"
    # With and without the network namespace: Landlock's TCP rule blocks the connect alone.
    res = _sandbox.run_sandboxed(code, use_netns=use_netns)
    assert res.returncode == 1
    assert "Error" in res.stderr
    assert "in" not in res.stdout
    with pytest.raises(TimeoutError):
        server.accept()
    server.close()


@pytest.mark.skipif(not _sandbox.netns_available(), reason="unshare --net is not permitted here")
def test_network_namespace_blocks_udp_too():
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.5)
    port = receiver.getsockname()[1]
    code = (
        "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"s.sendto(b'x', ('127.0.0.1', {port}))\nprint('sent')"
    )
    res = _sandbox.run_sandboxed(code)
    assert "Network is unreachable" in res.stderr
    with pytest.raises(TimeoutError):
        receiver.recvfrom(10)
    receiver.close()


def test_killed_at_its_time_limit():
    tool = PythonInterpreter(timeout=1.0)
    start = time.monotonic()
    out = tool.run("import time\nprint('start', flush=True)\nwhile True:\n    time.sleep(0.01)")
    assert time.monotonic() - start < 5
    assert out == "stdout:\nstart\n\nkilled: time limit of 1.0 s reached"


def test_memory_limit():
    out = PythonInterpreter(memory_mb=128).run("x = bytearray(512 * 2**20)\nprint('got it')")
    assert "MemoryError" in out
    assert "got it" not in out


def test_bad_input_is_reported():
    with pytest.raises(ValueError, match="expected timeout > 0 and memory_mb > 0"):
        PythonInterpreter(timeout=0)
