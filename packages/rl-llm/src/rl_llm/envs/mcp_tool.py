"""MCPToolTransform: runs tool calls of the model on Model Context Protocol servers (stdio)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm.data.history import ROLES
from rl_llm.envs._tool_utils import append_tool_messages, last_replies

DEFAULT_TOOL_CALL_PATTERN = r"<tool>([\w.-]+)\n(.*?)</tool>"

# Runs first in the server's process (which the SDK starts in a new session): writes its pid,
# which is also the session id, to the file argv[1], then execs the server command in place.
# A failed exec is written to the file as "errno strerror" for the host's error message.
_LAUNCH = """import os, sys
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as err:
    with open(sys.argv[1], "a") as f:
        f.write(f"\\n{err.errno} {err.strerror}")
    os._exit(127)
"""


def _session_members(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``, read from ``/proc``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # gone meanwhile
            continue
        if int(fields[3]) == sid and fields[0] not in "ZX":  # state, ppid, pgrp, session
            members.append(int(entry.name))
    return members


def _kill_session(sid: int) -> None:
    """SIGKILLs every process of session ``sid`` (Linux, ``/proc``), else its process group.

    A new process group does not leave the session, so on Linux this also reaches what a
    tool started with ``setpgid``; only ``setsid()`` escapes it. The scan repeats until no
    member is left, so a process forked between two scans is killed too.
    """
    if not Path("/proc/self/stat").exists():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(sid, signal.SIGKILL)
        return
    for _ in range(100):
        members = _session_members(sid)
        if not members:
            return
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


class _Server:
    """One MCP server over stdio, kept open in a task of the transform's event loop."""

    def __init__(self, name: str, config: dict[str, Any]) -> None:
        self.name = name
        self.config = config
        self.session: Any = None
        self._task: asyncio.Task | None = None
        self._stop: asyncio.Event | None = None
        # POSIX: the launcher writes the server's pid (= its session id) here.
        self._pid_file: str | None = None
        self.sid: int | None = None

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and self.session is not None

    async def _serve(self, ready: asyncio.Future) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        command, args = self.config["command"], list(self.config.get("args", []))
        if os.name == "posix":
            fd, self._pid_file = tempfile.mkstemp(prefix="rl_llm_mcp_", suffix=".pid")
            os.close(fd)
            command, args = (
                sys.executable,
                ["-I", "-S", "-c", _LAUNCH, self._pid_file, command, *args],
            )
        params = StdioServerParameters(
            command=command, args=args, env=self.config.get("env"), cwd=self.config.get("cwd")
        )
        with open(os.devnull, "w") as errlog:
            try:
                async with (
                    stdio_client(params, errlog=errlog) as streams,
                    ClientSession(streams[0], streams[1]) as session,
                ):
                    await session.initialize()
                    self.session = session
                    self.sid, _ = self._launch_report()
                    ready.set_result(None)
                    await self._stop.wait()
            except BaseException as err:
                if not ready.done():
                    self.sid, failed = self._launch_report()  # failed: the command could not run
                    if failed is None:
                        failed = err if isinstance(err, Exception) else RuntimeError(err)
                    ready.set_exception(failed)
                if not isinstance(err, Exception):
                    raise
            finally:
                self.session = None

    def _launch_report(self) -> tuple[int | None, OSError | None]:
        """The server's pid from the launcher's file, and the error of a failed exec."""
        if self._pid_file is None:
            return None, None
        try:
            pid, _, failure = Path(self._pid_file).read_text().partition("\n")
        except OSError:
            return None, None
        if failure:
            errno, _, strerror = failure.partition(" ")
            return None, OSError(int(errno), strerror, self.config["command"])
        return (int(pid) if pid else None), None

    def _kill_leftovers(self) -> None:
        """Kills what is left of the server's session and removes the launcher's pid file."""
        if self.sid is None:
            self.sid, _ = self._launch_report()
        if self.sid is not None:
            _kill_session(self.sid)
            self.sid = None
        if self._pid_file is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._pid_file)
            self._pid_file = None

    async def start(self, timeout: float) -> None:
        self._stop = asyncio.Event()
        ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Shuts the server down gracefully (stdin closed, then the SDK's escalation), then
        kills every process left in its session: what its tools started included."""
        task, self._task = self._task, None
        try:
            if task is None or task.done():
                return
            self._stop.set()
            try:
                await asyncio.wait_for(asyncio.shield(task), 3.0)
            except BaseException:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(task, 3.0)
        finally:
            self._kill_leftovers()


class MCPToolTransform(Transform):
    """Executes the tool calls of a model's reply on MCP servers and appends the results.

    Each server is launched as a subprocess speaking MCP over stdio (the official ``mcp``
    SDK: ``pip install "rl-llm[mcp]"``) on first use and kept open. A call in the last
    assistant message looks like ``<tool>server.tool_name\\n{json arguments}</tool>`` (the
    server prefix may be left out when there is one server). After each env step, every
    call of each dialog runs (all concurrently, each within ``timeout`` seconds, including the
    server's start) and the results are joined into one message of role ``tool_name``
    appended to the next prompt; dialogs without a call get a short note, and nothing is
    appended when no dialog made a call.

    Failures never raise and never hang: an unknown server or tool, bad JSON, a tool error,
    a server that fails to start, crashes or does not answer within ``timeout`` all give
    ``"<name>: error: ..."`` in the message. A server that timed out or died is stopped and
    started again on its next call.

    Args:
        servers: name -> ``{"command": str, "args": list[str]}`` (optionally ``"env"`` and
            ``"cwd"``).
        tool_call_pattern: a regex capturing ``(server.tool, json_args)``; defaults to
            ``r"<tool>([\\w.-]+)\\n(.*?)</tool>"``.
        tool_name: the role of the result messages (default ``"tool"``).
        timeout: seconds allowed per call, server start included (default 10.0).

    Raises:
        ValueError: a server config without ``"command"``, or ``tool_name`` not a chat role.
    """

    def __init__(
        self,
        servers: dict[str, dict],
        tool_call_pattern: str | None = None,
        tool_name: str = "tool",
        timeout: float = 10.0,
    ) -> None:
        super().__init__()
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            raise ModuleNotFoundError(
                'MCPToolTransform needs the MCP SDK: pip install "rl-llm[mcp]"', name="mcp"
            )
        bad = [n for n, c in servers.items() if not isinstance(c, dict) or "command" not in c]
        if not servers or bad:
            raise ValueError(
                f"MCPToolTransform: expected servers as {{name: {{'command': ..., 'args': [...]}}}}, "
                f"got {servers!r}."
            )
        if tool_name not in ROLES:
            raise ValueError(
                f"MCPToolTransform: tool_name must be a chat role {ROLES}, got {tool_name!r}."
            )
        if timeout <= 0:
            raise ValueError(f"MCPToolTransform: expected timeout > 0, got {timeout}.")
        self.servers = {name: dict(config) for name, config in servers.items()}
        self.tool_call_pattern = re.compile(
            tool_call_pattern or DEFAULT_TOOL_CALL_PATTERN, re.DOTALL
        )
        self.tool_name = tool_name
        self.timeout = float(timeout)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._live: dict[str, _Server] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------ event loop
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="MCPToolTransform", daemon=True)
            thread.start()
            self._loop, self._thread = loop, thread
        return self._loop

    def _run(self, coro: Any, timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())
        return future.result(timeout)

    # ------------------------------------------------------------------ calls
    def _split(self, name: str) -> tuple[str | None, str]:
        server, sep, tool = name.partition(".")
        if sep and server in self.servers:
            return server, tool
        if len(self.servers) == 1:
            return next(iter(self.servers)), name
        return None, name

    async def _server(self, name: str) -> _Server:
        async with self._locks.setdefault(name, asyncio.Lock()):
            server = self._live.get(name)
            if server is None or not server.alive:
                if server is not None:
                    await server.stop()
                server = _Server(name, self.servers[name])
                self._live[name] = server
                await server.start(self.timeout)
            return server

    async def _call(self, name: str, arguments: str) -> str:
        server_name, tool = self._split(name)
        if server_name is None:
            return f"{name}: error: unknown server; known servers are {sorted(self.servers)}"
        try:
            args = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as err:
            return f"{name}: error: arguments are not JSON ({err.msg})"
        if not isinstance(args, dict):
            return f"{name}: error: arguments must be a JSON object, got {type(args).__name__}"
        try:
            async with asyncio.timeout(self.timeout):
                server = await self._server(server_name)
                result = await server.session.call_tool(tool, args)
        except TimeoutError:
            await self._drop(server_name)
            return f"{name}: error: no answer within {self.timeout:g} s (server {server_name!r})"
        except Exception as err:
            await self._drop(server_name)
            detail = str(err) or type(err).__name__
            return f"{name}: error: server {server_name!r} failed: {type(err).__name__}: {detail}"
        texts = [getattr(block, "text", None) or str(block) for block in result.content]
        body = "\n".join(texts)
        if result.is_error:
            return f"{name}: error: {body}"
        return f"{name}: {body}"

    async def _drop(self, server_name: str) -> None:
        server = self._live.pop(server_name, None)
        if server is not None:
            await server.stop()

    async def _call_all(self, calls: list[list[tuple[str, str]]]) -> list[list[str]]:
        flat = [c for dialog in calls for c in dialog]
        results = iter(await asyncio.gather(*(self._call(n, a) for n, a in flat)))
        return [[next(results) for _ in dialog] for dialog in calls]

    def call(self, name: str, arguments: str = "") -> str:
        """Runs one call (``"server.tool"``, JSON arguments); returns ``"name: result"``."""
        return self._run(self._call(name, arguments), self.timeout * 2 + 10)

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        history, replies = last_replies(next_tensordict, type(self).__name__)
        calls = [self.tool_call_pattern.findall(reply) for reply in replies]
        if not any(calls):
            return next_tensordict
        try:
            outputs = self._run(self._call_all(calls), self.timeout * 2 + 10)
        except TimeoutError:
            outputs = [[f"{n}: error: no answer in time" for n, _ in dialog] for dialog in calls]
        results = ["\n".join(out) if out else None for out in outputs]
        append_tool_messages(next_tensordict, history, results, role=self.tool_name)
        return next_tensordict

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def close(self) -> None:
        """Stops every server and the event loop (the transform restarts them if used again).

        Each server is first asked to exit (its stdin closed, the SDK's grace period); then
        every process left in its session is killed, so nothing its tools started (in the
        server's process group or in a new one) outlives the transform. On systems without
        ``/proc`` the server's process group is killed instead.
        """
        if self._loop is None or self._loop.is_closed():
            return

        async def stop_all() -> None:
            await asyncio.gather(*(s.stop() for s in self._live.values()))
            self._live.clear()

        with contextlib.suppress(TimeoutError):
            self._run(stop_all(), 15.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)
        self._loop.close()
        self._loop = None
        self._locks.clear()
