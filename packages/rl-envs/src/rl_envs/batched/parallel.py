"""ParallelEnv: envs stepped in worker processes that exchange data through shared memory."""

from __future__ import annotations

import multiprocessing
import pickle
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDictBase

from rl_core._accel.td_access import get_leaf
from rl_core.envs import EnvBase, StepPlan
from rl_core.keys import DONE
from rl_envs.batched import _wire
from rl_envs.batched._factories import as_env_factories
from rl_envs.batched._meta import Path, rows_to_reset
from rl_envs.batched._pool import WorkerPool, default_start_method
from rl_envs.batched._shared import SharedBuffers
from rl_envs.batched._transport import (
    PartialReset,
    PipeTransport,
    SharedMemoryTransport,
    Transport,
)
from rl_envs.batched.base import BatchedEnvBase

_BUFFERS = ("sent", "step_outputs", "reset_outputs", "masks")


class ParallelEnv(BatchedEnvBase):
    """Runs ``num_workers`` envs in worker processes, as one env of batch ``[n, *sub_batch]``.

    Each worker process builds its own env (all workers start at once; the parent builds one
    env first, through :attr:`EnvCreator.meta_data`, to read the specs). Data moves through
    shared-memory buffers allocated once: each step the parent writes the actions (and state
    entries) in place, sends each worker a one-byte command over a pipe, the workers step and
    write their outputs in place, and the parent copies the outputs out (one copy per buffer).
    ``step_and_maybe_reset`` (used by ``rollout`` and collectors) resets finished sub-envs
    inside the workers in the same round trip. Workers hold their own observations: the
    parent sends only the entries of ``action_spec`` and ``state_spec``. A worker whose env is
    a ``GymEnv``/``GymWrapper`` (or a ``SerialEnv`` of them) with one array observation and
    one action steps gymnasium straight from and into the shared buffers, without
    TensorDicts; the outputs are the same.

    Start method: ``"fork"`` (the default on Linux while CUDA is not initialised in this
    process) starts workers in milliseconds; each worker limits torch to ``num_sub_threads``
    threads, which keeps torch's thread pools usable after the fork. A parent running other
    threads that hold locks (some GUI or logging libraries) can deadlock a forked child: pass
    ``mp_start_method="spawn"`` (safe, but each worker re-imports torch, seconds per start).
    With ``"spawn"`` or ``"forkserver"`` the env factories are pickled; lambdas work through
    :class:`EnvCreator` when cloudpickle is installed.

    Errors: an exception in a worker is raised here, with the worker's traceback in the message,
    as the same type for ``ValueError``, ``TypeError``, ``KeyError``, ``IndexError``,
    ``RuntimeError`` and ``NotImplementedError`` and as ``RuntimeError`` otherwise; the worker
    lives on. A worker that dies (killed, crashed) makes the next call raise a
    ``RuntimeError`` naming the worker and its exit code; the env is then closed. ``close()``
    stops and joins every worker (terminating any that does not stop), so no process is left
    behind; it also runs when the env is garbage-collected.

    Scheduling: on Linux, workers run under the ``SCHED_BATCH`` policy, so that waking one
    does not preempt the parent before it has woken the others. Waiting for a message, each
    process first polls without sleeping for a few hundred microseconds (a worker after its
    reply, the parent for the replies), yielding its CPU to any other runnable process, and
    then blocks: in a rollout the next message usually comes within that time, and a message
    to a process that is awake needs no wake-up (tens of microseconds on virtual machines).

    Args:
        num_workers: the number of worker processes (one env each).
        create_env_fn: a callable returning an env (a class, a function, an
            :class:`EnvCreator`), or a list of ``num_workers`` of them with the same specs.
            It may return a batched env (e.g. ``SerialEnv(4, ...)``): the batch size is then
            ``[num_workers, 4]``.
        create_env_kwargs: keyword arguments for ``create_env_fn``, or one dict per worker.
        num_sub_threads: torch threads in each worker. Defaults to 1, so that the workers
            together do not oversubscribe the cores.
        num_threads: torch threads of this (the parent) process, set with
            ``torch.set_num_threads`` when the env is built; ``None`` (the default) leaves them
            as they are.
        mp_start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"``; ``None`` picks as above.
        shared_memory: exchange data through shared memory (fast). ``False`` pickles it
            through the pipes instead, for outputs whose shapes vary.
        device: the device of the batched env (outputs are moved there); defaults to the
            sub-envs' device, which must be the CPU.
        timeout: seconds to wait for a worker's reply before raising ``TimeoutError``;
            ``None`` waits as long as the workers live.

    Raises:
        ValueError: bad ``num_workers``/``num_sub_threads``/``num_threads``/``timeout``/
            ``mp_start_method``, envs not on the CPU, entries that are not tensors with
            ``shared_memory=True``, or workers whose envs have different specs.
        RuntimeError: a worker died while building its env, or its env raised an error type
            other than those listed above (the message holds the worker's traceback).

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_envs.batched import ParallelEnv
        >>> env = ParallelEnv(2, CountingEnv, create_env_kwargs={"max_count": 4})
        >>> env.batch_size
        torch.Size([2])
        >>> env.set_seed(0)
        2
        >>> env.rollout(10, break_when_any_done=False).batch_size
        torch.Size([2, 10])
        >>> env.close()
    """

    def __init__(
        self,
        num_workers: int,
        create_env_fn: Callable[..., EnvBase] | Sequence[Callable[..., EnvBase]],
        *,
        create_env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        num_sub_threads: int = 1,
        num_threads: int | None = None,
        mp_start_method: str | None = None,
        shared_memory: bool = True,
        device: torch.device | str | int | None = None,
        timeout: float | None = None,
    ) -> None:
        factories = as_env_factories(num_workers, create_env_fn, create_env_kwargs, "ParallelEnv")
        for name, value in (("num_sub_threads", num_sub_threads), ("num_threads", num_threads)):
            if value is None and name == "num_threads":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ParallelEnv: expected {name} >= 1, got {value!r}.")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"ParallelEnv: expected timeout > 0 or None, got {timeout!r}.")
        method = mp_start_method or default_start_method()
        if method not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"ParallelEnv: mp_start_method {method!r} is not available here; choose one of "
                f"{multiprocessing.get_all_start_methods()}."
            )
        meta_data = factories[0].meta_data
        if meta_data.device is not None and meta_data.device.type != "cpu":
            raise ValueError(
                f"ParallelEnv: the envs are on {meta_data.device}; workers exchange data through "
                f"CPU shared memory. Build the envs on the CPU and pass device="
                f"{str(meta_data.device)!r} to ParallelEnv to get the outputs there."
            )
        super().__init__(num_workers, meta_data, device=device)
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        self.__dict__.update(
            num_sub_threads=num_sub_threads,
            mp_start_method=method,
            shared_memory=shared_memory,
            timeout=timeout,
            # After a rollout run inside the workers, the next root comes from the caller.
            _stale_roots=False,
        )
        paths = {name: self._paths(name) for name in _BUFFERS}
        transport: Transport
        if shared_memory:
            transport = SharedMemoryTransport(
                self._allocate(paths), paths, self.batch_size, self.device
            )
        else:
            transport = PipeTransport(paths, self.batch_size, self.device)
        self.__dict__["_transport"] = transport
        self._start(factories, transport.shared, paths, multiprocessing.get_context(method))

    # ------------------------------------------------------------------ set-up
    def _leaf_spec(self, path: Path) -> Any:
        out, inp = self.meta_data.output_spec, self.meta_data.input_spec
        for group in (*out.values(), *inp.values()):
            try:
                return group[path]
            except KeyError:
                continue
        raise KeyError(f"ParallelEnv: no spec for {path}.")

    def _allocate(self, paths: dict[str, list[Path]]) -> SharedBuffers:
        """Zero-filled CPU buffers of batch ``[n, *sub_batch]`` in shared memory."""
        n = self.num_workers
        templates = {}
        for name, leaf_paths in paths.items():
            values = []
            for path in leaf_paths:
                if name == "masks":
                    spec = self._leaf_spec((*path[:-1], DONE))
                    value = torch.zeros(spec.shape, dtype=torch.bool)
                else:
                    spec = self._leaf_spec(path)
                    value = spec.zero()
                    if not isinstance(value, torch.Tensor):
                        raise ValueError(
                            f"ParallelEnv: the entry {path} holds {type(value).__name__} values "
                            f"(spec {type(spec).__name__}), which cannot live in shared memory. "
                            f"Pass shared_memory=False to send such entries through the pipes."
                        )
                values.append(value.expand(n, *value.shape))
            templates[name] = values
        return SharedBuffers(templates, paths)

    def _start(
        self,
        factories: list[Callable[[], EnvBase]],
        shared: SharedBuffers | None,
        paths: dict[str, list[Path]],
        context: Any,
    ) -> None:
        pool = WorkerPool(context, self.timeout)
        # Seeds of the workers' torch RNGs, drawn here so that they follow torch.manual_seed.
        seeds = torch.randint(0, 2**62, (len(factories),)).tolist()
        self.__dict__["_pool"] = pool
        # The finalizer holds the pool, not the env: collecting the env stops the workers.
        self.__dict__["_finalizer"] = weakref.finalize(self, pool.close)
        try:
            pool.start(
                [
                    (factory, shared, paths, self.meta_data, self.num_sub_threads, seed)
                    for factory, seed in zip(factories, seeds)
                ]
            )
            self._send(range(self.num_workers), None, "building its env")
        except BaseException:
            self.close()
            raise

    def _send(
        self, indices: Any, messages: bytes | list[bytes] | None, what: str
    ) -> dict[int, bytes]:
        """One message to (and one reply from) each worker in ``indices``."""
        pool = self._pool
        try:
            return pool.exchange(indices, messages, what)
        finally:
            if pool.closed and not self.is_closed:
                # A worker died or hung: the pool shut down, and so does the env.
                super().close()

    # ------------------------------------------------------------------ data
    def _send_roots(self, tensordict: TensorDictBase) -> None:
        """Gives every worker its row of ``tensordict`` as the root to step from."""
        roots = tensordict.select(*self._paths("reset_outputs"), strict=False).to("cpu")
        messages = [_wire.ROOT + pickle.dumps(roots[i]) for i in range(self.num_workers)]
        self._send(range(self.num_workers), messages, "taking the next root")
        self.__dict__["_stale_roots"] = False

    # ------------------------------------------------------------------ contract
    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        if self._stale_roots:
            self._send_roots(tensordict)
        message = self._transport.inputs(_wire.STEP, tensordict)
        replies = self._send(range(self.num_workers), message, "stepping")
        return self._transport.outputs("step_outputs", replies)

    def _make_step_plan(self) -> StepPlan:
        """One round trip per step-and-reset, one per random rollout; see
        :class:`~rl_core.envs.StepPlan`."""
        return ParallelStepPlan(self)

    def _reset(self, tensordict: TensorDictBase | None, **kwargs: Any) -> TensorDictBase:
        n = self.num_workers
        masks: list[torch.Tensor | None] = []
        if tensordict is not None:
            masks = [get_leaf(tensordict, path, None) for path in self._paths("masks")]
        rows = rows_to_reset(masks, n)
        if rows is None or bool(rows.all()):
            message = _wire.RESET + pickle.dumps((False, None, kwargs))
            replies = self._send(range(n), message, "resetting")
            self.__dict__["_stale_roots"] = False
            return self._transport.outputs("reset_outputs", replies)
        targets = rows.nonzero().flatten().tolist()
        if self._stale_roots:
            self._send_roots(tensordict)
        request = PartialReset(tensordict, masks, targets, kwargs)
        return self._transport.partial_reset(self._send, request)

    def _seed_sub_envs(self, seed: int | None, static_seed: bool) -> int | None:
        for i in range(self.num_workers):
            reply = self._send([i], _wire.SEED + pickle.dumps((seed, static_seed)), "seeding")
            seed = pickle.loads(reply[i])
        return seed

    def close(self) -> None:
        """Stops and joins every worker; calling it twice is harmless."""
        finalizer = self.__dict__.get("_finalizer")
        if finalizer is not None:
            finalizer()
        super().close()


class ParallelStepPlan(StepPlan):
    """The step plan of a :class:`ParallelEnv`: steps and resets in one round trip, random
    rollouts inside the workers.

    Args:
        env: the ParallelEnv.
    """

    def __init__(self, env: ParallelEnv) -> None:
        super().__init__(env)
        self.parallel = env

    def random_rollout(
        self,
        start: TensorDictBase,
        max_steps: int,
        *,
        break_when_any_done: bool,
        break_when_all_done: bool,
    ) -> TensorDictBase | None:
        """Without a stopping rule across workers, each worker rolls its env out by itself.

        Every worker runs ``rollout`` with random actions (its own torch RNG, seeded with its
        env seed by ``set_seed``) from its row of ``start`` and sends the trajectory back: one
        round trip instead of one per step. Not used with ``break_when_any_done``,
        ``break_when_all_done`` or a ``timeout`` (a long rollout would exceed it).
        """
        env = self.parallel
        if break_when_any_done or break_when_all_done or env.timeout is not None:
            return None
        rows = start.to("cpu")
        messages = [
            _wire.ROLLOUT + pickle.dumps((rows[i], max_steps)) for i in range(env.num_workers)
        ]
        env.__dict__["_stale_roots"] = True
        replies = env._send(range(env.num_workers), messages, "rolling out")
        out = torch.stack([pickle.loads(replies[i]) for i in range(env.num_workers)], 0)
        return out.to(env.device) if env.device is not None else out

    def step_and_reset(self, tensordict: TensorDictBase) -> tuple[TensorDictBase, Any]:
        """Steps, and resets the finished sub-envs inside the workers, in one round trip.

        The route behind ``step_and_maybe_reset``: returns the step outputs
        and the workers that reset (with pipes, their reset outputs), for
        :meth:`merge_reset_rows`.
        """
        env = self.parallel
        if env._stale_roots:
            env._send_roots(tensordict)
        message = env._transport.inputs(_wire.STEP_AND_RESET, tensordict)
        replies = env._send(range(env.num_workers), message, "stepping")
        return env._transport.fused_outputs(replies)

    def merge_reset_rows(
        self, next_root: TensorDictBase, pending: dict[int, Any]
    ) -> TensorDictBase:
        """``next_root`` with the reset outputs of the workers in ``pending`` in their rows
        (with shared memory every worker wrote its whole next root: taken whole, in one copy).
        """
        return self.parallel._transport.merge_reset_rows(next_root, pending)


__all__ = ["ParallelEnv"]
