"""PythonExecutorService: a bounded pool of sandboxed Python runs shared by many envs."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from rl_llm.envs import _sandbox


class PythonExecutorService:
    """A tool service running Python code in :class:`PythonInterpreter`'s sandbox, ``pool_size``
    runs at a time, shared by every env (and thread) that holds it.

    Each call runs the code in a fresh sandboxed process (the kernel enforces the limits: see
    :class:`PythonInterpreter`): at most ``timeout`` seconds, ``memory_mb`` of address space,
    ``max_processes`` processes, no network, files only in its own temporary directory, output
    cut to ``max_output_chars``. At most ``pool_size`` runs exist at once across all users of
    the service; a call that finds no free slot within ``timeout`` seconds returns a "busy"
    result instead of waiting on. Register it in a :class:`ToolRegistry` (its name is
    ``name``, its argument ``code``) or call :meth:`execute`.

    Args:
        pool_size: the most runs at once.
        timeout: seconds a run may take (and the longest wait for a slot).
        memory_mb: the address-space limit of a run.
        max_output_chars: stdout keeps its first, stderr its last, this many characters.
        max_processes: the most processes and threads of one run (``None``: no cap).
        name: the tool name.

    Raises:
        RuntimeError: the sandbox cannot run here (see :class:`PythonInterpreter`).
        ValueError: a limit is not positive.

    Examples:
        >>> from rl_llm.envs import PythonExecutorService
        >>> service = PythonExecutorService(pool_size=2, timeout=5)
        >>> out = service(code="print(6 * 7)")
        >>> out["success"], out["stdout"]
        (True, '42\\n')
    """

    schema_in: ClassVar[dict[str, str]] = {
        "code": "Python source (standard library only), run in a sandbox"
    }
    schema_out: ClassVar[dict[str, str]] = {
        "success": "bool: exited with 0 in time",
        "stdout": "str",
        "stderr": "str",
        "returncode": "int or None",
        "timed_out": "bool",
    }

    def __init__(
        self,
        pool_size: int = 4,
        timeout: float = 10.0,
        *,
        memory_mb: int = 256,
        max_output_chars: int = 2000,
        max_processes: int | None = 64,
        name: str = "python",
    ) -> None:
        if pool_size < 1 or not timeout > 0 or memory_mb < 1 or max_output_chars < 1:
            raise ValueError(
                f"PythonExecutorService: expected pool_size >= 1, timeout > 0, memory_mb >= 1 "
                f"and max_output_chars >= 1, got pool_size={pool_size}, timeout={timeout}, "
                f"memory_mb={memory_mb}, max_output_chars={max_output_chars}."
            )
        _sandbox.check_supported()
        _sandbox.process_cap(max_processes)
        self.name = name
        self.pool_size = pool_size
        self.timeout = float(timeout)
        self.memory_mb = memory_mb
        self.max_output_chars = max_output_chars
        self.max_processes = max_processes
        self._slots = threading.BoundedSemaphore(pool_size)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.runs = 0

    @property
    def max_call_seconds(self) -> float:
        """The longest a call can take: a wait for a slot, a run, the sandbox's margin."""
        return 2 * self.timeout + 2.0

    def execute(self, code: str) -> dict[str, Any]:
        """Runs ``code``; returns ``success``, ``stdout``, ``stderr``, ``returncode``, ``timed_out``.

        Raises:
            TypeError: ``code`` is not a string.
        """
        if not isinstance(code, str):
            raise TypeError(
                f"PythonExecutorService.execute: expected `code` to be a string, got "
                f"{type(code).__name__}."
            )
        if not self._slots.acquire(timeout=self.timeout):
            return {
                "success": False,
                "stdout": "",
                "stderr": f"the executor pool is busy ({self.pool_size} runs); try again",
                "returncode": None,
                "timed_out": False,
            }
        try:
            with self._lock:
                self.in_flight += 1
                self.runs += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            res = _sandbox.run_sandboxed(
                code,
                timeout=self.timeout,
                memory_mb=self.memory_mb,
                max_output_chars=self.max_output_chars,
                max_processes=self.max_processes,
            )
        finally:
            with self._lock:
                self.in_flight -= 1
            self._slots.release()
        stdout, stderr = res.stdout, res.stderr
        if res.stdout_cut:
            stdout += f"\n[stdout cut to {self.max_output_chars} characters]"
        if res.stderr_cut:
            stderr += f"\n[stderr cut to its last {self.max_output_chars} characters]"
        if res.timed_out:
            stderr += f"\nkilled: time limit of {self.timeout:g} s reached"
        return {
            "success": res.returncode == 0 and not res.timed_out,
            "stdout": stdout,
            "stderr": stderr,
            "returncode": res.returncode,
            "timed_out": res.timed_out,
        }

    def __call__(self, code: str) -> dict[str, Any]:
        """:meth:`execute` (the tool-service call)."""
        return self.execute(code)
