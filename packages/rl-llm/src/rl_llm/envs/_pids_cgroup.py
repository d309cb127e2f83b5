"""A pids cgroup per sandboxed run: the kernel refuses a fork or clone beyond ``pids.max``.

The run's first process writes itself into the cgroup before it execs the sandbox, so every
process (and thread) of the run is counted, whatever it does later: a new session, a new
process group, a new PID namespace do not leave a cgroup. Used where this process may create
a child cgroup with a writable ``pids.max``: on cgroup v2 when the pids controller can be
enabled below this process's cgroup (the root cgroup, or a delegated one), on a cgroup v1
``pids`` hierarchy when its directory is writable (root, usually).
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import signal
import time
from pathlib import Path

PREFIX = "rl_llm_sandbox_"
# Moves the shell into the cgroup ("$0" is the cgroup.procs file), then execs the command in
# place: the pid, hence the cgroup membership, stays with the command. The shell's own PWD and
# OLDPWD are unset so that the command gets exactly the environment it was given.
_JOIN = 'echo $$ > "$0" && unset PWD OLDPWD && exec "$@"'


def _own_cgroup_dirs() -> list[Path]:
    """Directories of this process's cgroups that may hold a pids child: v2 first, then v1."""
    own: dict[str, str] = {}  # controller ("" for the v2 hierarchy) -> path
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    dirs = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, mount, fstype, options = fields[3], fields[4], tail[0], tail[2].split(",")
        if fstype == "cgroup2" and "" in own:
            path = own[""]
        elif fstype == "cgroup" and "pids" in options and "pids" in own:
            path = own["pids"]
        else:
            continue
        if root != "/":  # a bind mount of part of the hierarchy (containers)
            if path != root and not path.startswith(root + "/"):
                continue
            path = path[len(root) :]
        d = Path(mount, path.lstrip("/"))
        dirs.insert(0 if fstype == "cgroup2" else len(dirs), d)
    return dirs


def _usable(parent: Path) -> bool:
    """Whether a child cgroup of ``parent`` can be made with a writable ``pids.max``."""
    controllers = parent / "cgroup.subtree_control"
    if controllers.exists() and "pids" not in controllers.read_text().split():
        try:  # cgroup v2: enable the controller for the children (fails if not allowed)
            controllers.write_text("+pids")
        except OSError:
            return False
    probe = parent / f"{PREFIX}probe_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        (probe / "pids.max").write_text("8")
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


@functools.cache
def pids_cgroup_parent() -> Path | None:
    """The cgroup directory under which runs get their pids cgroup here, None if there is none."""
    try:
        dirs = _own_cgroup_dirs()
    except OSError:  # no /proc (not Linux)
        return None
    return next((d for d in dirs if d.is_dir() and _usable(d)), None)


class PidsCgroup:
    """One run's cgroup: at most ``max_processes`` processes and threads at any time.

    Args:
        parent: the directory to create it in (:func:`pids_cgroup_parent`).
        max_processes: the value written to ``pids.max``.
    """

    def __init__(self, parent: Path, max_processes: int) -> None:
        self.path = parent / f"{PREFIX}{os.getpid()}_{secrets.token_hex(6)}"
        self.path.mkdir()
        try:
            (self.path / "pids.max").write_text(str(max_processes))
        except BaseException:
            self.path.rmdir()
            raise

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` started so that its first process joins the cgroup before it runs."""
        return ["/bin/sh", "-c", _JOIN, str(self.path / "cgroup.procs"), *cmd]

    def pids(self) -> list[int]:
        """The processes in the cgroup now."""
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def close(self, wait: float = 2.0) -> None:
        """Kills whatever is still in the cgroup and removes it (waits up to ``wait`` s)."""
        deadline = time.monotonic() + wait
        while True:
            for pid in self.pids():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()  # EBUSY until the last member is gone and reaped
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.01)
