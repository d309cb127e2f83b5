"""ParallelEnv's transports, worker side: one env's commands, and how its data moves.

:class:`WorkerEnv` holds a worker's env and the root its next step starts from, and carries
out the commands (see :mod:`rl_envs.batched._worker`) the same way whatever the transport;
one subclass per transport reads the inputs and writes the outputs, as the parent side's
implementations (:mod:`rl_envs.batched._transport`) expect them:

- :class:`SharedMemoryWorker`: inputs from the worker's rows of the shared buffers (the
  message says which entries the parent wrote), outputs into them, replies of a status byte.
  Gymnasium envs step straight between the rows where they can (``GymDirectStep``).
- :class:`PipeWorker`: inputs and outputs pickled in the messages.
"""

from __future__ import annotations

import pickle
from abc import ABC, abstractmethod
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core._accel.td_access import TreeBuilder, get_leaf, set_leaf
from rl_core.envs import EnvBase, spec_checks_enabled
from rl_core.keys import DONE, NEXT
from rl_envs._accel.seam import GymDirectStep, numpy_stepper
from rl_envs.batched._meta import Path
from rl_envs.batched._shared import SharedBuffers
from rl_envs.batched._wire import RESET_DONE
from rl_envs.batched.serial import SerialEnv
from rl_envs.libs._gym_stepper import GymNumpyStepper


def numpy_stepper_of(env: EnvBase) -> GymNumpyStepper | None:
    """The gymnasium stepper that steps ``env`` with no TensorDict work around it, or ``None``.

    That of a ``GymWrapper`` itself (see ``rl_envs._accel.seam.numpy_stepper``) or of the
    vector group of a vectorized ``SerialEnv`` (whose sub-env steps hand it out).
    """
    if type(env) is SerialEnv:
        return env._steps.numpy_stepper()
    return numpy_stepper(env)


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


class WorkerEnv(ABC):
    """A worker's env, the root its next step starts from, and the commands' handlers.

    Each handler takes the message's argument bytes and returns the reply's payload.

    Args:
        index: the worker's index.
        env: the worker's env.
        paths: the entry paths of each buffer (``"sent"``, ``"step_outputs"``,
            ``"reset_outputs"``, ``"masks"``).
    """

    def __init__(self, index: int, env: EnvBase, paths: dict[str, list[Path]]) -> None:
        self.index = index
        self.env = env
        self.paths = paths
        self._root: TensorDictBase | None = None
        self.where = f"ParallelEnv worker {index} ({type(env).__name__})"
        self.done_paths = [path for path in paths["step_outputs"] if path[-1] == DONE]
        self.step_mdp = env.step_mdp_plan()

    @property
    def root(self) -> TensorDictBase | None:
        """The root the next step starts from (``None`` before the first reset)."""
        return self._root

    @root.setter
    def root(self, value: TensorDictBase | None) -> None:
        self._root = value

    # -- the transport ----------------------------------------------------------------------
    @abstractmethod
    def write_inputs(self, root: TensorDictBase, payload: bytes) -> None:
        """Writes the entries the parent sent with a step command into ``root``."""

    @abstractmethod
    def emit(self, name: str, td: TensorDictBase) -> bytes:
        """Sends the entries of buffer ``name`` from ``td``; the reply's payload."""

    @abstractmethod
    def fused_reply(self, step_reply: bytes, next_root: TensorDictBase, finished: bool) -> bytes:
        """The reply to ``STEP_AND_RESET``, given that of the step and the next root."""

    @abstractmethod
    def reset_masks(self, masks: list[torch.Tensor | None] | None) -> list[Any]:
        """The ``"_reset"`` masks of a partial reset (``masks``: those of the message)."""

    # -- commands ---------------------------------------------------------------------------
    def _take_inputs(self, payload: bytes) -> TensorDictBase:
        root = self.root
        if root is None:
            raise RuntimeError(f"{self.where}: step before reset; call env.reset() first.")
        self.write_inputs(root, payload)
        return root

    def step(self, payload: bytes) -> bytes:
        """``STEP``: steps from the root with the sent inputs; replies the step outputs."""
        root = self.env.step(self._take_inputs(payload))
        reply = self.emit("step_outputs", root.get(NEXT))
        self.root = self.step_mdp(root)
        return reply

    def step_and_reset(self, payload: bytes) -> bytes:
        """``STEP_AND_RESET``: ``step_and_maybe_reset``; replies as :meth:`fused_reply`."""
        root, next_root = self.env.step_and_maybe_reset(self._take_inputs(payload))
        nxt = root.get(NEXT)
        reply = self.emit("step_outputs", nxt)
        self.root = next_root
        finished = any(bool(get_leaf(nxt, path, None).any()) for path in self.done_paths)
        return self.fused_reply(reply, next_root, finished)

    def reset(self, payload: bytes) -> bytes:
        """``RESET``: a full reset, or a partial one (``"_reset"`` masks) of the root."""
        partial, masks, kwargs = pickle.loads(payload)
        if partial and self.root is not None:
            root = self.root
            for path, mask in zip(self.paths["masks"], self.reset_masks(masks)):
                root.set(path, mask)
            self.root = self.env.reset(root, **kwargs)
        else:
            self.root = self.env.reset(**kwargs)
        return self.emit("reset_outputs", self.root)

    def rollout(self, payload: bytes) -> bytes:
        """``ROLLOUT``: a random rollout from the sent root; replies it pickled."""
        start, steps = pickle.loads(payload)
        self.root = None
        traj = self.env.rollout(
            steps, auto_reset=False, tensordict=start, break_when_any_done=False
        )
        return pickle.dumps(traj)

    def set_root(self, payload: bytes) -> bytes:
        """``ROOT``: the root the next step starts from."""
        self.root = pickle.loads(payload)
        return b""

    def seed(self, payload: bytes) -> bytes:
        """``SEED``: seeds the env and this process's torch RNG; replies the next seed."""
        seed, static_seed = pickle.loads(payload)
        if seed is not None:
            torch.manual_seed(seed)
        return pickle.dumps(self.env.set_seed(seed, static_seed=static_seed))


class SharedMemoryWorker(WorkerEnv):
    """Inputs from and outputs into this worker's rows of the shared buffers.

    After a step of the direct gymnasium path the root is not built: it is the worker's row
    of the shared step (or reset) buffer, copied into a TensorDict only when a command needs
    it.

    Args:
        index: the worker's index.
        env: the worker's env.
        shared: the shared buffers.
        paths: the entry paths of each buffer.
    """

    def __init__(
        self, index: int, env: EnvBase, shared: SharedBuffers, paths: dict[str, list[Path]]
    ) -> None:
        super().__init__(index, env, paths)
        self.views = {name: shared.leaves(name, index) for name in shared.blocks}
        self.direct = GymDirectStep.build(env, numpy_stepper_of(env), paths, self.views)
        # The shared buffer whose row holds the root, when the direct path left it there.
        self._root_row: str | None = None
        self.root_builder = TreeBuilder(paths["reset_outputs"])

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

    def step(self, payload: bytes) -> bytes:
        direct = self._direct(payload)
        if direct is None:
            return super().step(payload)
        direct.step(reset=False)
        self._root, self._root_row = None, "step_outputs"
        return b""

    def step_and_reset(self, payload: bytes) -> bytes:
        direct = self._direct(payload)
        if direct is None:
            return super().step_and_reset(payload)
        finished = direct.step(reset=True)
        self._root = None
        self._root_row = "reset_outputs" if finished else "step_outputs"
        return RESET_DONE if finished else b""

    def write_inputs(self, root: TensorDictBase, payload: bytes) -> None:
        # payload: one byte per sent entry, 1 where the parent wrote it.
        for path, leaf, present in zip(self.paths["sent"], self.views["sent"], payload):
            if not present:
                continue
            if len(path) == 1:
                set_leaf(root, path[0], leaf.clone())
            else:
                root.set(path, leaf.clone())

    def emit(self, name: str, td: TensorDictBase) -> bytes:
        write_leaves(self.views[name], self.paths[name], td, self.where)
        return b""

    def fused_reply(self, step_reply: bytes, next_root: TensorDictBase, finished: bool) -> bytes:
        # The whole next root goes to the reset buffer: when any worker reset a sub-env, the
        # parent takes every worker's row from there in one copy.
        self.emit("reset_outputs", next_root)
        return RESET_DONE if finished else b""

    def reset_masks(self, masks: list[torch.Tensor | None] | None) -> list[torch.Tensor]:
        # The parent wrote the masks into the shared mask buffer.
        return [leaf.clone() for leaf in self.views["masks"]]


class PipeWorker(WorkerEnv):
    """Inputs and outputs pickled in the messages."""

    def write_inputs(self, root: TensorDictBase, payload: bytes) -> None:
        inputs = pickle.loads(payload)
        for path in self.paths["sent"]:
            value = get_leaf(inputs, path, None)
            if value is not None:
                root.set(path, value)

    def emit(self, name: str, td: TensorDictBase) -> bytes:
        return pickle.dumps(td.select(*self.paths[name], strict=False))

    def fused_reply(self, step_reply: bytes, next_root: TensorDictBase, finished: bool) -> bytes:
        # The reset outputs travel only when a sub-env finished.
        second = self.emit("reset_outputs", next_root) if finished else None
        return pickle.dumps((step_reply, second))

    def reset_masks(self, masks: list[torch.Tensor | None] | None) -> list[Any]:
        return list(masks or [])


def worker_env(
    index: int, env: EnvBase, shared: SharedBuffers | None, paths: dict[str, list[Path]]
) -> WorkerEnv:
    """The worker side of the transport the parent chose: shared memory where ``shared`` is
    given, else pipes."""
    if shared is None:
        return PipeWorker(index, env, paths)
    return SharedMemoryWorker(index, env, shared, paths)


__all__ = ["PipeWorker", "SharedMemoryWorker", "WorkerEnv", "worker_env", "write_leaves"]
