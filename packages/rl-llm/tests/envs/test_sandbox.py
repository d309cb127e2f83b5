"""Adversarial tests of the Python tool's sandbox: signals, escaping children, output floods.

Every process these tests start is killed by the test itself; the sandboxed code only ever
sends a signal that could do harm (SIGKILL) to a process the test started, and its broadcast
(``os.kill(-1, ...)``) uses SIGWINCH, whose default action is to be ignored, and only after the
same test proved that the sandbox cannot reach the test's own process.
"""

import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rl_llm.envs import PythonInterpreter, _sandbox

pytestmark = pytest.mark.skipif(
    _sandbox.landlock_abi() < 1, reason="the kernel has no Landlock: the sandbox refuses to run"
)

# The ways this machine can confine signals: a PID namespace, Landlock's signal scope, or both.
MODES = [
    pytest.param(
        True,
        id="pid-namespace",
        marks=pytest.mark.skipif(
            not _sandbox.pidns_available(), reason="unshare --pid is not permitted here"
        ),
    ),
    pytest.param(
        False,
        id="landlock-scope-only",
        marks=pytest.mark.skipif(
            not _sandbox.signal_scope_available(),
            reason="Landlock ABI < 6 has no signal scope (or /proc lacks task children)",
        ),
    ),
]


@pytest.fixture
def sleeper():
    """A process started by the test, to be a target the sandbox must not reach."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.DEVNULL
    )
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def usr1_received():
    """Records SIGUSR1s delivered to the test process (instead of their default: termination)."""
    received = []
    old = signal.signal(signal.SIGUSR1, lambda *_: received.append(True))
    yield received
    signal.signal(signal.SIGUSR1, old)


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """Makes each sandbox's directory, hence its command line, name ``tmp_path``."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return str(tmp_path)


def _processes_naming(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker`` (zombies have none)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


_KILL_ATTEMPTS = """
import os, signal
for name, pid, sig in [("sleeper", {sleeper}, signal.SIGKILL), ("host", {host}, signal.SIGUSR1),
                       ("host group", -{host_pgid}, signal.SIGUSR1)]:
    try:
        os.kill(pid, sig)
        print(name, "signalled")
    except OSError as exc:
        print(name, type(exc).__name__)
"""


def test_interpreter_cannot_signal_the_host_or_its_processes(sleeper, usr1_received):
    code = _KILL_ATTEMPTS.format(sleeper=sleeper.pid, host=os.getpid(), host_pgid=os.getpgid(0))
    out = PythonInterpreter().run(code)
    time.sleep(0.3)
    assert sleeper.poll() is None, "the sandbox killed a process outside its own tree"
    assert not usr1_received, "the sandbox signalled the host process"
    assert "signalled" not in out
    assert out.count("Error") == 3


@pytest.mark.parametrize("use_pidns", MODES)
def test_each_layer_alone_blocks_signals(use_pidns, sleeper, usr1_received):
    code = _KILL_ATTEMPTS.format(sleeper=sleeper.pid, host=os.getpid(), host_pgid=os.getpgid(0))
    res = _sandbox.run_sandboxed(code, use_pidns=use_pidns, use_signal_scope=not use_pidns)
    time.sleep(0.3)
    assert sleeper.poll() is None
    assert not usr1_received
    assert "signalled" not in res.stdout, res.stdout
    # In a PID namespace the host's pids do not exist; under Landlock's scope they are refused.
    expected = "ProcessLookupError" if use_pidns else "PermissionError"
    assert res.stdout.count(expected) == 3, res.stdout


@pytest.mark.parametrize("use_pidns", MODES)
def test_broadcast_signal_stays_inside(use_pidns, sleeper):
    # The sleeper's pid must be out of reach before anything is broadcast.
    probe = _sandbox.run_sandboxed(
        f"import os\nos.kill({sleeper.pid}, 0)",
        use_pidns=use_pidns,
        use_signal_scope=not use_pidns,
    )
    assert probe.returncode == 1
    assert "ProcessLookupError" in probe.stderr or "PermissionError" in probe.stderr
    received = []
    old = signal.signal(signal.SIGWINCH, lambda *_: received.append(True))
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\n"
            "signal.signal(signal.SIGWINCH, lambda *_: print('got', flush=True))\n"
            "print('ready', flush=True)\ntime.sleep(10)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout.readline() == "ready\n"
        # SIGWINCH: ignored by default, so harmless even where it would arrive.
        code = (
            "import os, signal, time\n"
            "got = []\nsignal.signal(signal.SIGWINCH, lambda *_: got.append(1))\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    signal.signal(signal.SIGWINCH, lambda *_: os._exit(7))\n"
            "    time.sleep(5)\n"
            "    os._exit(0)\n"
            "time.sleep(0.2)\n"
            "os.kill(-1, signal.SIGWINCH)\n"
            "print('child exit', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))"
        )
        res = _sandbox.run_sandboxed(code, use_pidns=use_pidns, use_signal_scope=not use_pidns)
        # Inside, the broadcast reached the sandbox's own child ...
        assert "child exit 7" in res.stdout, (res.stdout, res.stderr)
        time.sleep(0.3)
        # ... and nothing outside: neither the test process nor the watcher.
        assert not received
        watcher.kill()
        assert watcher.stdout.read() == ""
    finally:
        watcher.kill()
        watcher.wait()
        signal.signal(signal.SIGWINCH, old)


_ESCAPE = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print("grandchild up", flush=True)
        time.sleep({sleep})  # the grandchild keeps stdout open
    os._exit(0)
time.sleep(0.3)
print("parent done", flush=True)
"""


def test_interpreter_returns_while_an_escaped_child_holds_stdout(own_tmp):
    tool = PythonInterpreter(timeout=2.0)
    start = time.monotonic()
    out = tool.run(_ESCAPE.format(sleep=8))
    elapsed = time.monotonic() - start
    leftover = _processes_naming(own_tmp)
    for pid in leftover:  # only processes of this test's sandbox name its tmp_path
        os.kill(pid, signal.SIGKILL)
    assert elapsed < 2.0 + 1.5, f"run(timeout=2) took {elapsed:.1f} s"
    assert leftover == []
    assert out == "stdout:\ngrandchild up\nparent done\n"


@pytest.mark.parametrize("use_pidns", MODES)
def test_escaped_child_is_killed_when_the_code_ends(use_pidns, own_tmp):
    start = time.monotonic()
    res = _sandbox.run_sandboxed(
        _ESCAPE.format(sleep=8), timeout=2.0, use_pidns=use_pidns, use_signal_scope=not use_pidns
    )
    elapsed = time.monotonic() - start
    leftover = _processes_naming(own_tmp)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert leftover == []
    assert (res.stdout, res.returncode, res.timed_out) == ("grandchild up\nparent done\n", 0, False)
    # The code ends after 0.3 s, its escapee would sleep 8 s (slack for a loaded machine).
    assert elapsed < 4.0, f"run took {elapsed:.1f} s though the code ended at once"


@pytest.mark.parametrize("use_pidns", MODES)
def test_no_process_outlives_run(use_pidns, own_tmp):
    # 2**7 = 128 processes, each child in a session of its own, all sleeping with stdout open; the
    # first one also loops forever so that the time limit is what ends the run.
    code = (
        "import os, time\n"
        "for _ in range(7):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "print('x', flush=True)\n"
        "time.sleep(30)\n"
    )
    start = time.monotonic()
    res = _sandbox.run_sandboxed(
        code, timeout=1.5, use_pidns=use_pidns, use_signal_scope=not use_pidns, max_processes=256
    )
    elapsed = time.monotonic() - start
    leftover = _processes_naming(own_tmp)
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    assert leftover == []
    assert res.timed_out
    # The documented bound is timeout + 1.5 s; 1 s more of slack for a loaded machine.
    assert elapsed < 1.5 + 2.5, f"run took {elapsed:.1f} s"
    assert res.stdout.count("x") == 128


def test_output_is_capped_while_reading():
    # 128 MiB printed in 1 MiB writes; the host keeps only the cap.
    code = "import sys\nchunk = 'y' * 2**20\nfor _ in range(128):\n    sys.stdout.write(chunk)\n"
    tool = PythonInterpreter(timeout=20.0, max_output_chars=1000)
    tracemalloc.start()
    try:
        out = tool.run(code + "sys.stdout.flush()\nsys.stderr.write('z' * 2**24)\n")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"the host buffered {peak / 2**20:.0f} MiB"
    stdout, stderr = out.split("\nstderr:\n")
    assert stdout == "stdout:\n" + "y" * 1000 + "\n[stdout cut to 1000 characters]"
    assert stderr == "z" * 1000 + "\n[stderr cut to its last 1000 characters]"


def test_capped_output_keeps_whole_characters():
    res = _sandbox.run_sandboxed("print('é' * 100)", max_output_chars=5)
    assert (res.stdout, res.stdout_cut) == ("é" * 5, True)
    res = _sandbox.run_sandboxed("import sys\nsys.stderr.write('€' * 100)", max_output_chars=3)
    assert (res.stderr, res.stderr_cut) == ("€" * 3, True)
    res = _sandbox.run_sandboxed("print('€' * 3, end='')", max_output_chars=3)
    assert (res.stdout, res.stdout_cut) == ("€" * 3, False)


def test_refuses_to_run_without_signal_confinement():
    with pytest.raises(RuntimeError, match="could not be confined to its own processes"):
        _sandbox.run_sandboxed("print(1)", use_pidns=False, use_signal_scope=False)


def test_cannot_run_other_programs():
    code = (
        "import subprocess\n"
        "for argv in (['/bin/sh', '-c', 'echo shell'], ['/usr/bin/id']):\n"
        "    try:\n"
        "        print(subprocess.run(argv, capture_output=True, text=True).stdout)\n"
        "    except OSError as exc:\n"
        "        print(argv[0], type(exc).__name__)\n"
    )
    res = _sandbox.run_sandboxed(code)
    assert res.stdout == "/bin/sh PermissionError\n/usr/bin/id PermissionError\n", res.stderr


def test_sees_none_of_the_host_environment(monkeypatch):
    monkeypatch.setenv("RL_LLM_TEST_SECRET", "hunter2")
    res = _sandbox.run_sandboxed("import os\nprint(' '.join(sorted(os.environ)))")
    # LC_CTYPE is the interpreter's own C-locale coercion (PEP 538), not the host's.
    assert set(res.stdout.split()) <= {"PATH", "PYTHONIOENCODING", "LC_CTYPE"}, res.stdout


@pytest.mark.parametrize("use_netns", [True, False])
def test_cannot_reach_an_abstract_unix_socket_of_the_host(use_netns):
    if not use_netns and _sandbox.landlock_abi() < 6:
        pytest.skip("Landlock ABI < 6 has no abstract-socket scope: only the namespace blocks it")
    if use_netns and not _sandbox.netns_available():
        pytest.skip("unshare --net is not permitted here")
    name = f"\0rl_llm_test_{os.getpid()}_{use_netns}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen()
    server.settimeout(0.5)
    code = f"import socket\nsocket.socket(socket.AF_UNIX).connect({name!r})\nprint('in')"
    try:
        res = _sandbox.run_sandboxed(code, use_netns=use_netns)
        assert res.returncode == 1
        assert ("ConnectionRefusedError" if use_netns else "PermissionError") in res.stderr
        with pytest.raises(TimeoutError):
            server.accept()
    finally:
        server.close()


def test_limits_are_set_in_every_process():
    code = (
        "import os, resource\n"
        "if os.fork() == 0:\n"
        "    print(resource.getrlimit(resource.RLIMIT_CPU), resource.getrlimit(resource.RLIMIT_AS), flush=True)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    res = _sandbox.run_sandboxed(code, timeout=3.0, memory_mb=200)
    assert res.stdout == f"(4, 5) ({200 * 2**20}, {200 * 2**20})\n"


# A fork bomb with a guard for the test machine: each process forks until it has made 9
# successful forks in all (its parent's count included), so at most 2**9 = 512 processes exist
# if nothing caps them. A process that cannot fork tries again at once, as a bomb does.
_FORK_BOMB = """
import os, time
made = 0
while made < 9:
    try:
        os.fork()
        made += 1
    except OSError:
        pass
time.sleep(60)
"""


def _count_while(own_tmp: str, run: Callable[[], Any]) -> tuple[Any, float, int, int, float]:
    """Calls ``run`` (which starts a fork bomb) in a thread while a host thread ticks (a 10 ms
    sleep, then a count) and this thread counts the processes naming ``own_tmp``.

    Returns what ``run`` returned, its duration, the most processes seen at once, the host
    thread's ticks and the longest gap between two of them.
    """
    done: dict = {}
    ticks: list[float] = [time.monotonic()]
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            time.sleep(0.01)
            ticks.append(time.monotonic())

    def call() -> None:
        start = time.monotonic()
        try:
            done["value"] = run()
        finally:
            done["elapsed"] = time.monotonic() - start
            stop.set()

    threads = [threading.Thread(target=tick), threading.Thread(target=call)]
    for thread in threads:
        thread.start()
    most = 0
    try:
        while not stop.is_set():
            most = max(most, len(_processes_naming(own_tmp)))
    finally:
        for thread in threads:
            thread.join()
        leftover = _processes_naming(own_tmp)
        for pid in leftover:
            os.kill(pid, signal.SIGKILL)
    assert leftover == [], f"{len(leftover)} processes of the run left"
    gap = max(b - a for a, b in itertools.pairwise(ticks))
    return done["value"], done["elapsed"], most, len(ticks) - 1, gap


def _bomb(**kwargs: Any) -> Callable[[], _sandbox.SandboxResult]:
    return lambda: _sandbox.run_sandboxed(_FORK_BOMB, timeout=2.0, **kwargs)


@pytest.mark.parametrize("use_pidns", MODES)
def test_a_fork_bomb_is_capped_and_the_host_keeps_running(use_pidns, own_tmp):
    res, elapsed, most, ticks, gap = _count_while(
        own_tmp, _bomb(max_processes=16, use_pidns=use_pidns, use_signal_scope=not use_pidns)
    )
    # The run's processes: the launcher, the init and the code's; never more than the cap.
    assert 4 <= most <= 16, f"{most} processes at once"
    assert res.timed_out
    assert elapsed < 2.0 + 2.5, f"run took {elapsed:.1f} s"
    # This thread kept running while the bomb spun at the cap.
    assert gap < 1.0, f"the host thread stalled for {gap:.2f} s"
    assert ticks >= 50, f"the host thread ticked {ticks} times in {elapsed:.1f} s"


def _system_python() -> str | None:
    """A Python >= 3.9 whose standard library every user can read (for the uid switch)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if not Path(candidate).exists():
            continue
        probe = "import sys; print(sys.version_info >= (3, 9), sys.base_prefix)"
        out = subprocess.run([candidate, "-I", "-c", probe], capture_output=True, text=True)
        new_enough, _, prefix = out.stdout.strip().partition(" ")
        if new_enough == "True" and _sandbox._closed_to_others(prefix) is None:
            return candidate
    return None


# Runs in the system Python with a copy of the sandbox's two modules (they need only the
# standard library); prints the bomb's result and then what a plain run sees as JSON.
_UID_RUN = """
import dataclasses, json, os, sys
sys.path.insert(0, os.environ["RL_LLM_SANDBOX_COPY"])
from rl_llm.envs import _sandbox
kwargs = dict(use_cgroup=False, max_processes=16, use_pidns=sys.argv[1] == "pidns")
kwargs["use_signal_scope"] = not kwargs["use_pidns"]
bomb = _sandbox.run_sandboxed(sys.argv[2], timeout=2.0, **kwargs)
ids = _sandbox.run_sandboxed(
    "import os\\nopen('f', 'w').write('w')\\nprint(os.getuid(), os.getgid(), os.getgroups())",
    **kwargs,
)
print(json.dumps([dataclasses.asdict(bomb), dataclasses.asdict(ids)]))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid switch is what root does")
@pytest.mark.parametrize("use_pidns", MODES)
def test_without_a_pids_cgroup_root_runs_the_code_as_a_fresh_capped_uid(use_pidns, own_tmp):
    python = _system_python()
    if python is None:
        pytest.skip("no Python >= 3.9 here whose standard library other users can read")
    copy = Path(own_tmp, "copy")
    (copy / "rl_llm" / "envs").mkdir(parents=True)
    for init in (copy / "rl_llm" / "__init__.py", copy / "rl_llm" / "envs" / "__init__.py"):
        init.write_text("")
    for name in ("_sandbox.py", "_pids_cgroup.py"):
        shutil.copy(Path(_sandbox.__file__).with_name(name), copy / "rl_llm" / "envs" / name)
    # The copy's path is in the environment, not on the command line: only the runs' own
    # processes (their directories are in TMPDIR) name own_tmp.
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": own_tmp, "RL_LLM_SANDBOX_COPY": str(copy)}
    mode = "pidns" if use_pidns else "scope"
    done, _, most, ticks, gap = _count_while(
        own_tmp,
        lambda: subprocess.run(
            [python, "-I", "-c", _UID_RUN, mode, _FORK_BOMB],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        ),
    )
    assert done.returncode == 0, done.stderr
    bomb, ids = json.loads(done.stdout)
    assert bomb["timed_out"]
    assert 3 <= most <= 16, f"{most} processes at once"
    assert gap < 1.0
    assert ticks >= 50
    uid, gid, groups = ids["stdout"].split(maxsplit=2)
    assert int(uid) >= _sandbox._UID_BASE, ids
    assert int(gid) == int(uid), ids
    assert groups.strip() == "[]"


@pytest.mark.skipif(os.geteuid() != 0, reason="the uid switch is what root does")
def test_without_a_pids_cgroup_root_is_refused_when_the_interpreter_is_closed_to_others():
    closed = _sandbox._closed_to_others(sys.base_prefix)
    if closed is None:
        pytest.skip("this interpreter's standard library is readable by every user")
    with pytest.raises(RuntimeError, match=f"cannot reach .*\\({closed} is closed to other users"):
        _sandbox.run_sandboxed("print(1)", max_processes=16, use_cgroup=False)
    res = _sandbox.run_sandboxed("print(1)", max_processes=None, use_cgroup=False)
    assert res.stdout == "1\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root is exempt from RLIMIT_NPROC")
def test_without_a_pids_cgroup_another_user_is_capped_in_its_user_namespace(own_tmp):
    if not _sandbox.pidns_available():
        with pytest.raises(RuntimeError, match="could not cap the code's processes"):
            _sandbox.run_sandboxed("print(1)", max_processes=16, use_cgroup=False)
        return
    _, _, most, _, _ = _count_while(own_tmp, _bomb(max_processes=16, use_cgroup=False))
    assert 4 <= most <= 16, f"{most} processes at once"


def test_max_processes_is_validated():
    for bad in (3, 0, -1, 2.5, "64", True):
        with pytest.raises(ValueError, match=f"expected max_processes an int >= 4 .* got {bad!r}"):
            PythonInterpreter(max_processes=bad)
    with pytest.raises(ValueError, match="got 2"):
        _sandbox.run_sandboxed("print(1)", max_processes=2)
    assert PythonInterpreter(max_processes=None).run("print(1)") == "stdout:\n1\n"
