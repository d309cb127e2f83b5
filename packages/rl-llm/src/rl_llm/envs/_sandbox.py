"""Runs untrusted Python code in a subprocess confined by the Linux kernel.

What is enforced (each layer is kernel-side, none relies on the child's cooperation):

- Time: the parent kills the child's process group at the wall-clock limit; ``RLIMIT_CPU``
  also stops a CPU-bound child.
- Memory: ``RLIMIT_AS`` (address space) and ``RLIMIT_FSIZE`` (largest file written).
- Files: a Landlock ruleset (Linux >= 5.13) lets the child read and execute only under the
  interpreter's installation (``sys.base_prefix``) and the system library directories, and
  read/write only under its own temporary directory. Every other path is denied, even to root.
- Network: a new, empty network namespace (``unshare --net``: no interface but a down
  loopback) when the machine allows it, and Landlock's TCP bind/connect restriction (Landlock
  ABI >= 4). UDP and Unix sockets are only blocked by the namespace.

The child starts with ``python -I -S``: no user site, no site-packages.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

_SYS_CREATE, _SYS_ADD, _SYS_RESTRICT = 444, 445, 446


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(_SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


@functools.cache
def netns_available() -> bool:
    """Whether ``unshare --net --map-root-user`` works here (a new network namespace)."""
    try:
        done = subprocess.run(
            ["unshare", "--net", "--map-root-user", "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def read_only_roots() -> list[str]:
    """Directories the child may read and execute from: the interpreter and system libraries."""
    roots = {sys.base_prefix, sys.base_exec_prefix, "/usr/lib", "/usr/lib64", "/lib", "/lib64"}
    return sorted(str(Path(r).resolve()) for r in roots if Path(r).is_dir())


# Runs in the child before the user's code: limits, then Landlock, then exec of the code.
_BOOTSTRAP = r"""
import ctypes, json, os, resource, sys
cfg = json.loads(sys.argv[1])
mem = cfg["memory_bytes"]
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_seconds"], cfg["cpu_seconds"] + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_bytes"], cfg["file_bytes"]))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
libc = ctypes.CDLL(None, use_errno=True)
abi = cfg["abi"]
fs_all = (1 << 13) - 1
if abi >= 2: fs_all |= 1 << 13
if abi >= 3: fs_all |= 1 << 14
if abi >= 5: fs_all |= 1 << 15
net_all = 3 if abi >= 4 else 0
attr = (ctypes.c_uint64 * 3)(fs_all, net_all, 0)
size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
fd = libc.syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
if fd < 0:
    raise SystemExit("sandbox: landlock_create_ruleset failed: " + os.strerror(ctypes.get_errno()))

class PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

def allow(path, access):
    pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    rule = PathBeneath(access, pfd)
    if libc.syscall(445, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)):
        raise SystemExit("sandbox: landlock_add_rule failed for " + path)
    os.close(pfd)

read_exec = (1 << 0) | (1 << 2) | (1 << 3)
for root in cfg["read_only"]:
    allow(root, read_exec)
allow(cfg["workdir"], fs_all)
if libc.prctl(38, 1, 0, 0, 0):  # PR_SET_NO_NEW_PRIVS
    raise SystemExit("sandbox: prctl(PR_SET_NO_NEW_PRIVS) failed")
if libc.syscall(446, ctypes.c_int(fd), ctypes.c_uint32(0)):
    raise SystemExit("sandbox: landlock_restrict_self failed: " + os.strerror(ctypes.get_errno()))
os.close(fd)
os.chdir(cfg["workdir"])
del ctypes, json, resource, libc, attr, PathBeneath, allow
code = compile(open("main.py").read(), "main.py", "exec")
exec(code, {"__name__": "__main__"})
"""


@dataclass
class SandboxResult:
    """What a sandboxed run printed and how it ended."""

    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool


def run_sandboxed(
    code: str,
    *,
    timeout: float = 5.0,
    memory_mb: int = 256,
    file_mb: int = 16,
    use_netns: bool = True,
) -> SandboxResult:
    """Runs ``code`` in a fresh confined child (see the module docstring); never raises on its errors.

    Raises:
        RuntimeError: the kernel has no Landlock (files could not be confined), or neither a
            network namespace nor Landlock's TCP rule (ABI >= 4) is available (no network
            confinement).
    """
    abi = landlock_abi()
    if abi < 1:
        raise RuntimeError(
            "PythonInterpreter: this kernel has no Landlock support (Linux >= 5.13 with "
            "landlock in the LSM list), so file access could not be confined; refusing to run."
        )
    netns = use_netns and netns_available()
    if not netns and abi < 4:
        raise RuntimeError(
            f"PythonInterpreter: no network confinement here (unshare --net is not permitted "
            f"and Landlock ABI {abi} < 4 has no TCP rule); refusing to run."
        )
    with tempfile.TemporaryDirectory(prefix="rl_llm_sandbox_") as workdir:
        Path(workdir, "main.py").write_text(code)
        cfg = {
            "memory_bytes": memory_mb * 2**20,
            "file_bytes": file_mb * 2**20,
            "cpu_seconds": max(int(timeout) + 1, 1),
            "abi": abi,
            "read_only": read_only_roots(),
            "workdir": str(Path(workdir).resolve()),
        }
        cmd = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, json.dumps(cfg)]
        if netns:
            cmd = ["unshare", "--net", "--map-root-user", *cmd]
        proc = subprocess.Popen(
            cmd,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"},
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            return SandboxResult(out, err, proc.returncode, False)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            return SandboxResult(out, err, None, True)
