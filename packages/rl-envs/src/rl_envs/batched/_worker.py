"""The worker process of ParallelEnv: builds one env and serves the parent's commands.

Protocol (one message each way per command, over a ``multiprocessing`` pipe): the first byte
names the command, the rest is a pickled argument where there is one.

- ``STEP``: the inputs (actions, states) are in the shared input buffer, with one byte per
  entry in the message saying whether the parent wrote it (or the inputs are pickled in the
  message); the worker steps and writes the ``"next"`` entries to the shared step buffer.
- ``STEP_AND_RESET``: as ``STEP``, then resets the sub-envs that are done and writes the next
  root (observations, done flags) to the shared reset buffer; replies ``RESET_DONE`` when a
  sub-env was reset. Through the pipes, the next root is sent only then.
- ``RESET``: argument ``(partial, masks, kwargs)``; with ``partial``, the ``"_reset"`` masks
  are ``masks`` or, when that is ``None``, in the shared mask buffer. Writes the reset output to the shared reset buffer.
- ``ROLLOUT``: argument ``(start, steps)``; a rollout with random actions of ``steps`` steps
  from the root ``start`` (finished sub-envs reset), replied pickled. The worker's root is then
  unknown: the parent sends one (``ROOT``) before the next step or partial reset.
- ``ROOT``: argument the root TensorDict the next step starts from.
- ``SEED``: argument ``(seed, static_seed)``; seeds the env and this process's torch RNG (the
  random actions of ``ROLLOUT`` come from it); replies with the next seed.
- ``CLOSE``: closes the env and ends the process.

Replies: ``OK`` (plus a pickled payload where there is one) or ``ERROR`` with a pickled
``(exception type name, message, traceback text)``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import pickle
import select
import time
import traceback
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core.envs import EnvBase, spec_checks_enabled
from rl_core.fast_td import TreeBuilder, get_leaf, set_leaf
from rl_core.keys import DONE, NEXT
from rl_envs.batched._meta import EnvMetadata, Path
from rl_envs.batched._shared import SharedBuffers
from rl_envs.batched._wire import read_frame
from rl_envs.batched._worker_gym import GymDirectStep

STEP = b"s"
STEP_AND_RESET = b"m"
RESET = b"r"
SEED = b"e"
ROLLOUT = b"o"
ROOT = b"t"
CLOSE = b"c"
OK = b"k"
ERROR = b"x"
# In the reply to STEP_AND_RESET (after OK): some sub-env finished and was reset.
RESET_DONE = b"1"
# After a reply, a worker polls its pipe without sleeping for up to this long (yielding its
# CPU to any other runnable process each time) before it blocks: the next command of a
# rollout usually comes sooner, and a command to a worker that is not asleep needs no wake-up.
WORKER_SPIN_SECONDS = 300e-6


def write_leaves(
    dest: list[torch.Tensor], paths: list[Path], source: TensorDictBase, where: str
) -> None:
    """Copies the entries ``paths`` of ``source`` into ``dest`` (in place)."""
    for leaf, path in zip(dest, paths):
        value = get_leaf(source, path, None)
        if value is None:
            raise KeyError(
                f"{where}: the env output lacks {path}, which its specs declare (got keys "
                f"{sorted(map(str, source.keys(True, True)))})."
            )
        leaf.copy_(value)


class _Worker:
    """The worker-side state: the env, the last root it produced and its buffer views.

    After a step of the direct gymnasium path the root is not built: it is the worker's row of
    the shared step (or reset) buffer, copied into a TensorDict only when a command needs it.
    """

    def __init__(
        self,
        index: int,
        env: EnvBase,
        shared: SharedBuffers | None,
        paths: dict[str, list[Path]],
    ) -> None:
        self.index = index
        self.env = env
        self.paths = paths
        self._root: TensorDictBase | None = None
        # The shared buffer whose row holds the root, when the direct path left it there.
        self._root_row: str | None = None
        self.where = f"ParallelEnv worker {index} ({type(env).__name__})"
        self.views = (
            {name: shared.leaves(name, index) for name in shared.blocks}
            if shared is not None
            else None
        )
        self.direct = (
            GymDirectStep.build(env, paths, self.views) if self.views is not None else None
        )
        self.root_builder = TreeBuilder(paths["reset_outputs"])
        self.done_paths = [path for path in paths["step_outputs"] if path[-1] == DONE]
        self.step_mdp = env.step_mdp_plan()

    @property
    def root(self) -> TensorDictBase | None:
        """The root the next step starts from (built from a shared row where it lies there)."""
        row = self._root_row
        if row is not None:
            by_path = dict(zip(self.paths[row], self.views[row]))
            values = [by_path[path].clone() for path in self.paths["reset_outputs"]]
            env = self.env
            self._root = self.root_builder.build(values, env.batch_size, env.device)
            self._root_row = None
        return self._root

    @root.setter
    def root(self, value: TensorDictBase | None) -> None:
        self._root, self._root_row = value, None

    def _direct(self, payload: bytes) -> GymDirectStep | None:
        """The direct path, where it applies to this step (the parent sent the action)."""
        direct = self.direct
        if (
            direct is None
            or payload != b"\x01"
            or (self._root is None and self._root_row is None)
            or spec_checks_enabled()
            or not direct.usable()
        ):
            return None
        return direct

    # -- inputs and outputs ---------------------------------------------------------------
    def _take_inputs(self, payload: bytes) -> TensorDictBase:
        root = self.root
        if root is None:
            raise RuntimeError(f"{self.where}: step before reset; call env.reset() first.")
        if self.views is None:
            inputs = pickle.loads(payload)
            for path in self.paths["sent"]:
                value = get_leaf(inputs, path, None)
                if value is not None:
                    root.set(path, value)
        else:
            # payload: one byte per sent entry, 1 where the parent wrote it.
            for path, leaf, present in zip(self.paths["sent"], self.views["sent"], payload):
                if not present:
                    continue
                if len(path) == 1:
                    set_leaf(root, path[0], leaf.clone())
                else:
                    root.set(path, leaf.clone())
        return root

    def _emit(self, name: str, td: TensorDictBase) -> bytes:
        if self.views is None:
            return pickle.dumps(td.select(*self.paths[name], strict=False))
        write_leaves(self.views[name], self.paths[name], td, self.where)
        return b""

    # -- commands ---------------------------------------------------------------------------
    def step(self, payload: bytes) -> bytes:
        direct = self._direct(payload)
        if direct is not None:
            direct.step(reset=False)
            self._root, self._root_row = None, "step_outputs"
            return b""
        root = self.env.step(self._take_inputs(payload))
        reply = self._emit("step_outputs", root.get(NEXT))
        self.root = self.step_mdp(root)
        return reply

    def step_and_reset(self, payload: bytes) -> bytes:
        direct = self._direct(payload)
        if direct is not None:
            finished = direct.step(reset=True)
            self._root = None
            self._root_row = "reset_outputs" if finished else "step_outputs"
            return RESET_DONE if finished else b""
        root, next_root = self.env.step_and_maybe_reset(self._take_inputs(payload))
        nxt = root.get(NEXT)
        reply = self._emit("step_outputs", nxt)
        self.root = next_root
        finished = any(bool(get_leaf(nxt, path, None).any()) for path in self.done_paths)
        if self.views is not None:
            # The whole next root goes to the reset buffer: when any worker reset a sub-env,
            # the parent takes every worker's row from there in one copy.
            self._emit("reset_outputs", next_root)
            return RESET_DONE if finished else b""
        # Through the pipes, the reset outputs travel only when a sub-env finished.
        second = self._emit("reset_outputs", next_root) if finished else None
        return pickle.dumps((reply, second))

    def reset(self, payload: bytes) -> bytes:
        partial, masks, kwargs = pickle.loads(payload)
        if partial and self.root is not None:
            root = self.root
            if masks is None:
                masks = [leaf.clone() for leaf in self.views["masks"]]
            for path, mask in zip(self.paths["masks"], masks):
                root.set(path, mask)
            self.root = self.env.reset(root, **kwargs)
        else:
            self.root = self.env.reset(**kwargs)
        return self._emit("reset_outputs", self.root)

    def rollout(self, payload: bytes) -> bytes:
        start, steps = pickle.loads(payload)
        self.root = None
        traj = self.env.rollout(
            steps, auto_reset=False, tensordict=start, break_when_any_done=False
        )
        return pickle.dumps(traj)

    def set_root(self, payload: bytes) -> bytes:
        self.root = pickle.loads(payload)
        return b""

    def seed(self, payload: bytes) -> bytes:
        seed, static_seed = pickle.loads(payload)
        if seed is not None:
            torch.manual_seed(seed)
        return pickle.dumps(self.env.set_seed(seed, static_seed=static_seed))


def worker_main(
    index: int,
    conn: multiprocessing.connection.Connection,
    create_env_fn: Any,
    shared: SharedBuffers | None,
    paths: dict[str, list[Path]],
    reference: EnvMetadata,
    num_sub_threads: int,
    torch_seed: int,
) -> None:
    """Entry point of a worker process."""
    torch.set_num_threads(num_sub_threads)
    # Forked workers share the parent's RNG state: each gets its own stream.
    torch.manual_seed(torch_seed)
    _batch_scheduling()
    wait = _waiter(conn, multiprocessing.parent_process())
    if os.name == "posix":
        fd = conn.fileno()

        def receive() -> bytes:
            return read_frame(fd)
    else:
        receive = conn.recv_bytes
    try:
        env = create_env_fn()
        difference = reference.difference(EnvMetadata.from_env(env))
        if difference is not None:
            raise ValueError(
                f"ParallelEnv: the env of worker {index} ({type(env).__name__}) has {difference}, "
                f"unlike the env the specs come from ({reference.env_type}). All workers' envs "
                f"must have the same specs, batch size and device."
            )
        worker = _Worker(index, env, shared, paths)
    except Exception as err:
        conn.send_bytes(ERROR + pickle.dumps(_describe(err)))
        return
    conn.send_bytes(OK)
    handlers = {
        STEP: worker.step,
        STEP_AND_RESET: worker.step_and_reset,
        RESET: worker.reset,
        ROLLOUT: worker.rollout,
        ROOT: worker.set_root,
        SEED: worker.seed,
    }
    while True:
        if not wait():
            break  # the parent process is gone
        try:
            message = receive()
        except (EOFError, OSError):
            break
        command, payload = message[:1], message[1:]
        if command == CLOSE:
            env.close()
            conn.send_bytes(OK)
            break
        try:
            reply = OK + handlers[command](payload)
        except Exception as err:
            reply = ERROR + pickle.dumps(_describe(err))
        conn.send_bytes(reply)
    conn.close()


def _batch_scheduling() -> None:
    """Linux: schedule this worker as a batch task, so that waking it does not preempt the parent.

    The parent wakes the workers one after the other; a woken worker preempting the parent
    would delay the wake-up of the next worker until it yields the CPU.
    """
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None or not hasattr(os, "sched_setscheduler"):
        return
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, policy, os.sched_param(0))


def _waiter(conn: Any, parent: Any) -> Any:
    """A function blocking until a command arrives (True) or the parent process ends (False)."""
    if parent is None:
        return lambda: True
    if hasattr(select, "poll"):
        # One poll object for the worker's life: ~1 µs per wait instead of ~9 µs.
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        poller.register(parent.sentinel, select.POLLIN)
        fd = conn.fileno()

        def wait_poll() -> bool:
            events = poller.poll(0)
            until = time.perf_counter() + WORKER_SPIN_SECONDS
            while not events and time.perf_counter() < until:
                os.sched_yield()
                events = poller.poll(0)
            if not events:
                events = poller.poll()
            return any(ready_fd == fd for ready_fd, _ in events)

        return wait_poll
    watch = [conn, parent.sentinel]
    return lambda: conn in multiprocessing.connection.wait(watch)


def _describe(err: BaseException) -> tuple[str, str, str]:
    return type(err).__name__, str(err), traceback.format_exc()


__all__ = ["worker_main"]
