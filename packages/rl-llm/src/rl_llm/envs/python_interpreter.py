"""PythonInterpreter: runs the model's Python code blocks in a sandbox, replies with the output."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

from tensordict import TensorDictBase

from rl_core import Transform
from rl_llm.envs import _sandbox
from rl_llm.envs._tool_utils import append_tool_messages, last_replies
from rl_llm.envs.python_executor_service import PythonExecutorService

_CODE = re.compile(r"```python\n(.*?)```", re.DOTALL)


class PythonInterpreter(Transform):
    """A ChatEnv transform that executes ```` ```python ```` blocks of the last reply in a sandbox.

    After each step, the code blocks of every dialog's last message are joined and run in a
    fresh subprocess; a ``tool`` message with its stdout and stderr (and a note when it was
    killed) is appended to the next prompt. What the sandbox enforces, kernel-side (see
    ``rl_llm.envs._sandbox`` and the package README's threat model): signals reach only the
    run's own processes (a PID namespace where user namespaces are allowed, and Landlock's
    signal scope on Linux >= 6.12); at most ``max_processes`` processes and threads at once (a
    pids cgroup, or else ``RLIMIT_NPROC``, for which root runs the code as a fresh unprivileged
    uid), so a fork bomb cannot starve the host; no process the code started outlives :meth:`run`, which
    returns within ``timeout`` plus 1.5 s; a wall-clock time limit and ``RLIMIT_CPU``; an
    address-space limit (``RLIMIT_AS``) and a file-size limit; output read with bounded memory
    (at most ``4 * max_output_chars`` bytes kept per stream); Landlock file rules that allow
    reading only the interpreter's installation and the system library directories and writing
    only a fresh temporary directory; no network through a new network namespace
    (``unshare --net``, when permitted) and Landlock's TCP bind/connect rule. The child runs
    ``python -I -S`` (standard library only) with only ``PATH`` in its environment.

    Args:
        timeout: the wall-clock limit of one run, in seconds.
        memory_mb: the address-space limit of the child.
        max_output_chars: stdout is cut to its first, stderr to its last, this many
            characters (a note in the message says so).
        max_workers: dialogs whose code runs at the same time.
        max_processes: the most processes and threads one run may hold at once, the sandbox's
            launcher and init included (default 64); ``None`` runs without a cap.
        service: a :class:`PythonExecutorService` to run the code in instead (its limits
            apply, and its pool bounds the runs of every env sharing it).

    Raises:
        RuntimeError: the kernel has no Landlock (file access could not be confined), or
            neither a PID namespace nor Landlock's signal scope is available (signals could
            not be confined), or ``max_processes`` cannot be enforced here (no pids cgroup can
            be created, and root's interpreter is closed to other users, or another user has
            no user namespace).
        ValueError: ``timeout``, ``memory_mb`` or ``max_output_chars`` is not positive, or
            ``max_processes`` is not None or an int >= 4.

    Examples:
        >>> from tensordict import TensorDict
        >>> from rl_core import TransformedEnv
        >>> from rl_llm.data import History
        >>> from rl_llm.envs import ChatEnv, PythonInterpreter
        >>> env = TransformedEnv(ChatEnv(batch_size=(1,)), PythonInterpreter())
        >>> td = env.reset(TensorDict(query=["Compute 6*7"], batch_size=[1]))
        >>> reply = "```python\\nprint(6 * 7)\\n```"
        >>> td["history"].full = td["history"].prompt.append(
        ...     History.from_chats([[{"role": "assistant", "content": reply}]]))
        >>> print(env.step(td)["next", "history"].prompt[0, -1].content)
        stdout:
        42
        <BLANKLINE>
    """

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        memory_mb: int = 256,
        max_output_chars: int = 2000,
        max_workers: int = 4,
        max_processes: int | None = 64,
        service: PythonExecutorService | None = None,
    ) -> None:
        super().__init__()
        if service is not None and not isinstance(service, PythonExecutorService):
            raise TypeError(
                f"PythonInterpreter: expected service to be a PythonExecutorService, got "
                f"{type(service).__name__}."
            )
        _sandbox.check_supported()
        _sandbox.process_cap(max_processes)
        if timeout <= 0 or memory_mb <= 0:
            raise ValueError(
                f"PythonInterpreter: expected timeout > 0 and memory_mb > 0, got "
                f"timeout={timeout}, memory_mb={memory_mb}."
            )
        if max_output_chars < 1:
            raise ValueError(
                f"PythonInterpreter: expected max_output_chars >= 1, got {max_output_chars}."
            )
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.max_output_chars = max_output_chars
        self.max_workers = max_workers
        self.max_processes = max_processes
        self.service = service

    @property
    def network_namespace(self) -> bool:
        """Whether runs get their own empty network namespace on this machine."""
        return _sandbox.netns_available()

    def run(self, code: str) -> str:
        """Runs ``code`` in the sandbox; returns the tool message text."""
        if self.service is not None:
            return self._run_on_service(code)
        n = self.max_output_chars
        res = _sandbox.run_sandboxed(
            code,
            timeout=self.timeout,
            memory_mb=self.memory_mb,
            max_output_chars=n,
            max_processes=self.max_processes,
        )
        parts = []
        if res.stdout:
            cut = f"\n[stdout cut to {n} characters]" if res.stdout_cut else ""
            parts.append("stdout:\n" + res.stdout + cut)
        if res.stderr:
            cut = f"\n[stderr cut to its last {n} characters]" if res.stderr_cut else ""
            parts.append("stderr:\n" + res.stderr + cut)
        if res.timed_out:
            parts.append(f"killed: time limit of {self.timeout} s reached")
        elif res.returncode:
            parts.append(f"exit code: {res.returncode}")
        return "\n".join(parts) if parts else "(no output)"

    def _run_on_service(self, code: str) -> str:
        out = self.service.execute(code)
        parts = []
        if out["stdout"]:
            parts.append("stdout:\n" + out["stdout"])
        if out["stderr"]:
            parts.append("stderr:\n" + out["stderr"])
        if out["returncode"] and not out["timed_out"]:
            parts.append(f"exit code: {out['returncode']}")
        return "\n".join(parts) if parts else "(no output)"

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        history, replies = last_replies(next_tensordict, type(self).__name__)
        codes = ["\n".join(_CODE.findall(r)) or None for r in replies]
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            results = list(pool.map(lambda c: None if c is None else self.run(c), codes))
        append_tool_messages(next_tensordict, history, results)
        return next_tensordict
