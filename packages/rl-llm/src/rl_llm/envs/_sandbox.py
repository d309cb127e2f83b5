"""Runs untrusted Python code in a subprocess confined by the Linux kernel.

What is enforced (each layer is kernel-side, none relies on the child's cooperation):

- Processes and signals: the code runs under a small init (its parent, our code) in a new PID
  namespace (``unshare --user --pid``, when the machine allows it): the host's processes do not
  exist there, so ``os.kill(<trainer pid>, ...)`` and ``os.kill(-1, ...)`` reach only the
  sandbox's own processes. Landlock's signal scope (ABI >= 6) refuses the same signals on its
  own. At least one of the two is required. When the code ends or its time is up, the init
  kills every process the code started, including children that called ``setsid()``: in a PID
  namespace the kernel does it when the init exits; without one the init is a child
  subreaper and kills its (adopted) children until none is left.
- Number of processes: at most ``max_processes`` processes and threads of the run exist at
  any time, so a fork bomb cannot starve the host. Where a pids cgroup can be created (cgroup
  v2 with the pids controller available below this process's cgroup, or a writable cgroup v1
  ``pids`` hierarchy; root, usually) each run gets one with ``pids.max`` (see
  ``_pids_cgroup``). Otherwise ``RLIMIT_NPROC``, which the kernel counts per user (and user
  namespace) and does not apply to root: run as root, the code's process switches to a fresh
  unprivileged uid and gid (random in ``_UID_BASE`` + [0, 2**20), owning the run's directory),
  and the PID namespace is then created by root without a user namespace; run as another user,
  the code runs in its own user namespace, where the count holds only the run's processes. A
  non-root user without a user namespace is refused (``max_processes=None`` runs uncapped).
- Time: the init kills the code at the wall-clock limit; ``RLIMIT_CPU`` also stops a CPU-bound
  child; the host kills the whole group shortly after the limit in any case.
- Memory: ``RLIMIT_AS`` (address space) and ``RLIMIT_FSIZE`` (largest file written). The host
  reads stdout and stderr as they come and keeps at most a bounded head (stdout) and tail
  (stderr), whatever the code prints.
- Files: a Landlock ruleset (Linux >= 5.13) lets the child read and execute only under the
  interpreter's installation (``sys.base_prefix``) and the system library directories, and
  read/write only under its own temporary directory. Every other path is denied, even to root.
- Network: a new, empty network namespace (``unshare --net``: no interface but a down
  loopback) when the machine allows it, and Landlock's TCP bind/connect restriction (Landlock
  ABI >= 4). UDP and Unix sockets are only blocked by the namespace; abstract Unix sockets of
  the host also by Landlock's scope (ABI >= 6).

The child starts with ``python -I -S``: no user site, no site-packages.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import functools
import json
import os
import secrets
import selectors
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_llm.envs._pids_cgroup import PidsCgroup, pids_cgroup_parent

_SYS_CREATE, _SYS_ADD, _SYS_RESTRICT = 444, 445, 446
# After the init's deadline: how long the host waits before it kills the group itself, and
# how long it then still reads the pipes.
_HOST_MARGIN_S = 0.5
_DRAIN_S = 0.5
# Root without a pids cgroup runs the code as uid = gid = _UID_BASE + a random 20-bit number:
# high enough to be nobody's, fresh per run, so RLIMIT_NPROC counts only that run.
_UID_BASE = 0x7FF00000


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(_SYS_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def _unshare_works(*flags: str) -> bool:
    try:
        done = subprocess.run(
            ["unshare", "--map-root-user", *flags, "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@functools.cache
def netns_available() -> bool:
    """Whether ``unshare --net --map-root-user`` works here (a new network namespace)."""
    return _unshare_works("--net")


@functools.cache
def pidns_available() -> bool:
    """Whether ``unshare --pid --fork --map-root-user`` works here (a new PID namespace).

    It needs user namespaces: root has them; other users have them where the kernel allows
    unprivileged ones (``user.max_user_namespaces`` > 0 and no LSM rule against it, such as
    Ubuntu's ``kernel.apparmor_restrict_unprivileged_userns``).
    """
    return _unshare_works("--pid", "--fork", "--kill-child")


@functools.cache
def signal_scope_available() -> bool:
    """Whether Landlock can confine signals (ABI >= 6) and the init can list its children."""
    children = Path("/proc", str(os.getpid()), "task", str(os.getpid()), "children")
    return landlock_abi() >= 6 and children.exists()


def check_supported(*, use_pidns: bool = True, use_signal_scope: bool = True) -> None:
    """Raises ``RuntimeError`` unless files and signals can both be confined here."""
    if landlock_abi() < 1:
        raise RuntimeError(
            "PythonInterpreter: this kernel has no Landlock support (Linux >= 5.13 with "
            "landlock in the LSM list), so file access could not be confined; refusing to run."
        )
    if not (use_pidns and pidns_available()) and not (
        use_signal_scope and signal_scope_available()
    ):
        raise RuntimeError(
            "PythonInterpreter: the code could not be confined to its own processes here: "
            "no PID namespace (`unshare --user --pid` is missing or not permitted; for a "
            "non-root user, unprivileged user namespaces must be enabled) and no Landlock "
            f"signal scope (ABI {landlock_abi()} < 6, Linux < 6.12); it could signal any "
            "process of this user, so refusing to run."
        )


def process_cap(
    max_processes: int | None, *, use_pidns: bool = True, use_cgroup: bool = True
) -> str:
    """How ``max_processes`` is enforced here: ``"cgroup"`` (a pids cgroup), ``"uid"`` (root:
    the code as a fresh unprivileged uid under ``RLIMIT_NPROC``), ``"rlimit"`` (another user:
    ``RLIMIT_NPROC`` in the run's user namespace), or ``"none"`` (no cap asked).

    Raises:
        ValueError: ``max_processes`` is not an int >= 4 (the sandbox's own processes count).
        RuntimeError: a cap is asked, no pids cgroup can be created, and this non-root user
            cannot run the code in a user namespace of its own.
    """
    if max_processes is None:
        return "none"
    if isinstance(max_processes, bool) or not isinstance(max_processes, int) or max_processes < 4:
        raise ValueError(
            f"PythonInterpreter: expected max_processes an int >= 4 (the sandbox's own launcher "
            f"and init count too) or None for no cap, got {max_processes!r}."
        )
    if use_cgroup and pids_cgroup_parent() is not None:
        return "cgroup"
    if os.geteuid() == 0:
        closed = _closed_to_others(sys.base_prefix)
        if closed is None:
            return "uid"
        raise RuntimeError(
            f"PythonInterpreter: could not cap the code's processes (max_processes="
            f"{max_processes}) here: no pids cgroup can be created (cgroup v2 with the pids "
            f"controller delegated, or a writable cgroup v1 pids hierarchy), and root is exempt "
            f"from RLIMIT_NPROC, so the code would run as an unprivileged uid, which cannot "
            f"reach the interpreter's standard library ({closed} is closed to other users). "
            f"Install Python where every user can read it, give the process a delegated "
            f"cgroup, or pass max_processes=None to run without a cap."
        )
    if use_pidns and pidns_available():
        return "rlimit"
    raise RuntimeError(
        f"PythonInterpreter: could not cap the code's processes (max_processes={max_processes}) "
        f"here: no pids cgroup can be created (cgroup v2 with the pids controller delegated, or "
        f"a writable cgroup v1 pids hierarchy), and RLIMIT_NPROC would count every process of "
        f"uid {os.geteuid()} (no user namespace for the run). Give the process a delegated "
        f"cgroup, or pass max_processes=None to run without a cap."
    )


def _closed_to_others(path: str) -> str | None:
    """The first directory on the way to ``path`` (itself included) that other users cannot
    search (no ``o+x``), None if there is none."""
    current = Path(path).resolve()
    for directory in [*reversed(current.parents), current]:
        try:
            if not directory.stat().st_mode & stat.S_IXOTH:
                return str(directory)
        except OSError:
            return str(directory)
    return None


def read_only_roots() -> list[str]:
    """Directories the child may read and execute from: the interpreter and system libraries."""
    roots = {sys.base_prefix, sys.base_exec_prefix, "/usr/lib", "/usr/lib64", "/lib", "/lib64"}
    return sorted(str(Path(r).resolve()) for r in roots if Path(r).is_dir())


# The init: forks the code's process, waits for it until the deadline, then leaves no process
# of the run alive and reports how the code ended on the status pipe. The code's process sets
# its limits and Landlock, then runs main.py. The init itself is outside Landlock's domain, so
# under the signal scope the code cannot signal it; in a PID namespace it is pid 1, which the
# namespace's processes cannot kill either.
_BOOTSTRAP = r"""
import json, os, select, signal, sys, time
cfg = json.loads(sys.argv[1])
status_fd = cfg["status_fd"]
init_pid = os.getpid()
in_pidns = init_pid == 1
if in_pidns:
    os.setsid()  # leave the launcher's process group: kill(0, ...) then stays inside
else:
    import ctypes
    if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0):  # PR_SET_CHILD_SUBREAPER
        raise SystemExit("sandbox: prctl(PR_SET_CHILD_SUBREAPER) failed")
child = os.fork()
if child == 0:
    import ctypes, resource
    os.close(status_fd)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG: SIGKILL when the init dies
    if os.getppid() != init_pid:
        os._exit(137)
    mem = cfg["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_seconds"], cfg["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_bytes"], cfg["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if cfg["nproc"]:  # no pids cgroup: the count of this (non-root) uid's processes
        resource.setrlimit(resource.RLIMIT_NPROC, (cfg["nproc"], cfg["nproc"]))
    abi = cfg["abi"]
    fs_all = (1 << 13) - 1
    if abi >= 2: fs_all |= 1 << 13
    if abi >= 3: fs_all |= 1 << 14
    if abi >= 5: fs_all |= 1 << 15
    net_all = 3 if abi >= 4 else 0
    scoped = 3 if cfg["signal_scope"] else 0  # abstract Unix sockets | signals
    attr = (ctypes.c_uint64 * 3)(fs_all, net_all, scoped)
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
    work_fd = os.open(cfg["workdir"], os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    if cfg["uid"]:  # root ignores RLIMIT_NPROC: become the run's own unprivileged uid
        os.setgroups([])
        os.setresgid(cfg["uid"], cfg["uid"], cfg["uid"])
        os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
    if libc.prctl(38, 1, 0, 0, 0):  # PR_SET_NO_NEW_PRIVS
        raise SystemExit("sandbox: prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(446, ctypes.c_int(fd), ctypes.c_uint32(0)):
        raise SystemExit("sandbox: landlock_restrict_self failed: " + os.strerror(ctypes.get_errno()))
    os.close(fd)
    os.fchdir(work_fd)  # opened before the uid switch: its parents need not be searchable
    os.close(work_fd)
    del ctypes, json, resource, select, time, libc, attr, PathBeneath, allow, cfg, status_fd
    code = compile(open("main.py").read(), "main.py", "exec")
    exec(code, {"__name__": "__main__"})
else:
    pidfd = os.pidfd_open(child)
    left = cfg["deadline"] - time.monotonic()
    timed_out = not select.select([pidfd], [], [], max(left, 0))[0]
    if timed_out:
        os.kill(child, signal.SIGKILL)
    returncode = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    if not in_pidns:
        # Kill every child until none is left: orphans of the run are adopted by this
        # subreaper, so a process that called setsid() is found once its parent is dead.
        # A pid read from our children list stays ours (unreaped) until waitpid below.
        def children():
            found = []
            for tid in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{tid}/children") as f:
                    found += [int(p) for p in f.read().split()]
            return found
        while True:
            for pid in children():
                os.kill(pid, signal.SIGKILL)
            try:
                os.waitpid(-1, 0)
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                break
    # In a PID namespace the kernel kills every process left when this init exits.
    os.write(status_fd, json.dumps({"returncode": returncode, "timed_out": timed_out}).encode())
    os._exit(0)
"""


@dataclass
class SandboxResult:
    """What a sandboxed run printed and how it ended.

    ``stdout`` holds the head of what was printed and ``stderr`` the tail, each cut to
    ``max_output_chars`` when that was given (``stdout_cut``/``stderr_cut`` say so).
    """

    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool
    stdout_cut: bool = False
    stderr_cut: bool = False


class _Capped:
    """Bytes read from a pipe, keeping at most ``limit`` of them: the first or the last."""

    def __init__(self, limit: int | None, keep_tail: bool) -> None:
        self.limit, self.keep_tail = limit, keep_tail
        self.data = bytearray()
        self.dropped = False

    def add(self, chunk: bytes) -> None:
        if self.limit is None:
            self.data += chunk
        elif self.keep_tail:
            self.data += chunk
            if len(self.data) > 2 * self.limit:
                del self.data[: len(self.data) - self.limit]
                self.dropped = True
        elif len(self.data) < self.limit:
            room = self.limit - len(self.data)
            self.data += chunk[:room]
            self.dropped |= len(chunk) > room
        else:
            self.dropped = True

    def text(self, chars: int | None) -> tuple[str, bool]:
        data = bytes(self.data)
        if chars is None:
            return data.decode("utf-8", errors="replace"), False
        if self.keep_tail:
            cut = self.dropped or len(data) > self.limit
            data = data[-self.limit :]
            while cut and data and (data[0] & 0xC0) == 0x80:  # a character's continuation
                data = data[1:]
            text = data.decode("utf-8", errors="replace")
            return text[-chars:], cut or len(text) > chars
        # final=False leaves out a character whose bytes were cut off at the end.
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(data, final=not self.dropped)
        return text[:chars], self.dropped or len(text) > chars


def run_sandboxed(
    code: str,
    *,
    timeout: float = 5.0,
    memory_mb: int = 256,
    file_mb: int = 16,
    use_netns: bool = True,
    use_pidns: bool = True,
    use_signal_scope: bool = True,
    max_output_chars: int | None = None,
    max_processes: int | None = 64,
    use_cgroup: bool = True,
) -> SandboxResult:
    """Runs ``code`` in a fresh confined child (see the module docstring); never raises on its errors.

    Returns within ``timeout`` + 1.5 s whatever the code does, and no process the code
    started is left when it returns.

    Args:
        code: Python source, run as ``__main__``.
        timeout: the wall-clock limit, in seconds.
        memory_mb: the address-space limit of each of the code's processes.
        file_mb: the largest file the code may write.
        use_netns, use_pidns, use_signal_scope: use the network namespace, the PID namespace,
            Landlock's signal and abstract-socket scope where the machine has them (switches
            for tests of each layer alone).
        max_output_chars: keep the first this many characters of stdout and the last of
            stderr, reading at most four bytes per character (bounded memory); all otherwise.
        max_processes: the most processes and threads the run may hold at once, the sandbox's
            launcher and init included (a fork beyond fails with ``BlockingIOError``); None
            for no cap.
        use_cgroup: use a pids cgroup where one can be created (a switch for tests of the
            ``RLIMIT_NPROC`` fallback).

    Raises:
        ValueError: ``max_processes`` is not None or an int >= 4.
        RuntimeError: the kernel has no Landlock (files could not be confined), or neither a
            PID namespace nor Landlock's signal scope is available (signals could not be
            confined), or neither a network namespace nor Landlock's TCP rule (ABI >= 4) is
            available (no network confinement), or ``max_processes`` cannot be enforced here
            (see :func:`process_cap`).
    """
    check_supported(use_pidns=use_pidns, use_signal_scope=use_signal_scope)
    cap = process_cap(max_processes, use_pidns=use_pidns, use_cgroup=use_cgroup)
    abi = landlock_abi()
    netns = use_netns and netns_available()
    if not netns and abi < 4:
        raise RuntimeError(
            f"PythonInterpreter: no network confinement here (unshare --net is not permitted "
            f"and Landlock ABI {abi} < 4 has no TCP rule); refusing to run."
        )
    pidns = use_pidns and pidns_available()
    scope = use_signal_scope and abi >= 6
    limit = None if max_output_chars is None else 4 * max_output_chars
    start = time.monotonic()
    uid = _UID_BASE + secrets.randbelow(2**20) if cap == "uid" else 0
    # RLIMIT_NPROC where no cgroup caps: in a user namespace unshare and the init count too; a
    # fresh uid counts only the code's processes, so the launcher and the init are left room.
    nproc = 0
    if cap == "rlimit":
        nproc = max_processes
    elif cap == "uid":
        nproc = max_processes - 2
    with tempfile.TemporaryDirectory(prefix="rl_llm_sandbox_") as workdir:
        Path(workdir, "main.py").write_text(code)
        if uid:
            for path in (workdir, Path(workdir, "main.py")):
                os.chown(path, uid, uid)
        cgroup = PidsCgroup(pids_cgroup_parent(), max_processes) if cap == "cgroup" else None
        status_r, status_w = os.pipe()
        cfg = {
            "memory_bytes": memory_mb * 2**20,
            "file_bytes": file_mb * 2**20,
            "cpu_seconds": max(int(timeout) + 1, 1),
            "abi": abi,
            "signal_scope": scope,
            "read_only": read_only_roots(),
            "workdir": str(Path(workdir).resolve()),
            "deadline": start + timeout,
            "status_fd": status_w,
            "nproc": nproc,
            "uid": uid,
        }
        cmd = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, json.dumps(cfg)]
        flags = (["--net"] if netns else []) + (
            ["--pid", "--fork", "--kill-child"] if pidns else []
        )
        if flags:
            # A fresh uid exists only outside a root-mapped user namespace; root needs none.
            cmd = ["unshare", *([] if uid else ["--map-root-user"]), *flags, *cmd]
        if cgroup is not None:
            cmd = cgroup.wrap(cmd)
        try:
            try:
                proc = subprocess.Popen(
                    cmd,
                    cwd=workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(status_w,),
                    start_new_session=True,
                    env={"PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"},
                )
            finally:
                os.close(status_w)
            out, err = _Capped(limit, keep_tail=False), _Capped(limit, keep_tail=True)
            status = _Capped(1 << 12, keep_tail=False)
            sinks = {status_r: status, proc.stdout: out, proc.stderr: err}
            killed = _read_until_closed(proc, sinks, start + timeout + _HOST_MARGIN_S)
        finally:
            if cgroup is not None:  # kills what is left in it, removes it
                cgroup.close()
    report = json.loads(status.data) if status.data and not killed else None
    stdout, stdout_cut = out.text(max_output_chars)
    stderr, stderr_cut = err.text(max_output_chars)
    if report is None:  # the init itself did not finish: the host killed the group
        return SandboxResult(stdout, stderr, None, True, stdout_cut, stderr_cut)
    returncode = None if report["timed_out"] else report["returncode"]
    return SandboxResult(stdout, stderr, returncode, report["timed_out"], stdout_cut, stderr_cut)


def _read_until_closed(proc: subprocess.Popen, sinks: dict[Any, _Capped], deadline: float) -> bool:
    """Reads the pipes into their sinks until all close, then reaps ``proc``.

    At ``deadline`` the host kills ``proc``'s process group if it is still running and reads
    for at most ``_DRAIN_S`` more. Returns whether it had to kill.
    """
    sel = selectors.DefaultSelector()
    for pipe in sinks:
        sel.register(pipe, selectors.EVENT_READ)
    killed = draining = False
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                if draining:
                    break
                if proc.poll() is None:
                    killed = _kill_group(proc)
                draining, deadline = True, time.monotonic() + _DRAIN_S
                continue
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if chunk:
                    sinks[key.fileobj].add(chunk)
                else:
                    sel.unregister(key.fileobj)
    finally:
        sel.close()
        for pipe in sinks:
            if isinstance(pipe, int):
                os.close(pipe)
            else:
                pipe.close()
        try:
            proc.wait(timeout=_DRAIN_S)
        except subprocess.TimeoutExpired:
            killed = _kill_group(proc)
            proc.wait()
    return killed


def _kill_group(proc: subprocess.Popen) -> bool:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    return True
