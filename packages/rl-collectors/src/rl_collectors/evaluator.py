"""Evaluator: runs evaluation episodes of a policy, blocking or in the background (a thread,
a process of its own or a Ray actor), and logs the results."""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import multiprocessing.connection
import queue
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_collectors._common import check_positive_int, make_env, serve_env_calls
from rl_collectors._multi import default_start_method
from rl_collectors.weight_update import as_weights
from rl_core import EnvBase, ExplorationType, set_exploration_type
from rl_core.keys import as_key_list

__all__ = ["Evaluator"]

BACKENDS = ("thread", "process", "ray")
BUSY_POLICIES = ("skip", "error")
# Seconds shutdown() waits for a stopped evaluation's thread after the grace period: the
# child process or Ray actor was killed, or the thread backend's loop checks its stop flag
# at every step.
STOP_WAIT = 2.0


def run_episodes(
    env: EnvBase,
    policy: Callable[[TensorDictBase], TensorDictBase] | None,
    num_trajectories: int,
    reward_key: Any,
    done_key: Any,
    exploration_type: ExplorationType,
    stop: threading.Event | None = None,
) -> TensorDict:
    """Steps ``env`` with ``policy`` until ``num_trajectories`` episodes ended; returns
    ``[num_trajectories]`` entries ``"reward"`` (each episode's summed reward) and
    ``"episode_length"``, episodes in the order they ended (sub-envs in order within a step).

    The reward and done entries are reduced over the dims after the env's batch dims (sum
    and any), so multi-agent rewards add up. A ``stop`` event set while it runs ends it with
    a ``RuntimeError`` at the next step."""
    batch_dims = len(env.batch_size)
    flat = max(env.batch_size.numel(), 1)
    returns = torch.zeros(flat, dtype=torch.float64)
    lengths = torch.zeros(flat, dtype=torch.int64)
    ended_returns: list[torch.Tensor] = []
    ended_lengths: list[torch.Tensor] = []
    count = 0
    td = env.reset()
    with torch.no_grad(), set_exploration_type(exploration_type, thread_local=True):
        while count < num_trajectories:
            if stop is not None and stop.is_set():
                raise RuntimeError(
                    f"Evaluator: the evaluation was stopped by shutdown() after {count} of "
                    f"{num_trajectories} episodes ended."
                )
            td = env.rand_action(td) if policy is None else policy(td)
            td, next_td = env.step_and_maybe_reset(td)
            reward = td.get(reward_key)
            reward = reward.reshape(*reward.shape[:batch_dims], -1).sum(-1).reshape(flat)
            done = td.get(done_key)
            done = done.reshape(*done.shape[:batch_dims], -1).any(-1).reshape(flat)
            returns += reward.to(torch.float64).cpu()
            lengths += 1
            ended = done.cpu().nonzero().squeeze(-1)
            if ended.numel():
                ended_returns.append(returns[ended].clone())
                ended_lengths.append(lengths[ended].clone())
                returns[ended] = 0.0
                lengths[ended] = 0
                count += ended.numel()
            td = next_td
    return TensorDict(
        {
            "reward": torch.cat(ended_returns)[:num_trajectories],
            "episode_length": torch.cat(ended_lengths)[:num_trajectories],
        },
        batch_size=[num_trajectories],
    )


def _one_key(where: str, name: str, keys: Any) -> Any:
    """The single key of ``keys`` (a key, or a list holding one)."""
    if not isinstance(keys, str | tuple | list):
        raise TypeError(
            f"{where}: expected {name} as a key (a str or a tuple of str), got "
            f"{type(keys).__name__}."
        )
    found = as_key_list(keys, f"{where}: {name}")
    if len(found) != 1:
        raise ValueError(f"{where}: expected {name} as one key, got {keys!r}.")
    return found[0]


def _as_exploration_type(where: str, value: Any) -> ExplorationType:
    """An ``ExplorationType``, or one of its names (``"random"``, ...) as one."""
    if isinstance(value, ExplorationType):
        return value
    names = [member.value for member in ExplorationType]
    if isinstance(value, str) and value in names:
        return ExplorationType(value)
    raise ValueError(
        f"{where}: expected exploration_type as an ExplorationType or one of {names}, got "
        f"{value!r}."
    )


class _ProcessRunner:
    """The ``"process"`` backend: one child process holds the env and a policy copy; each
    evaluation sends it the weights and gets the episodes back."""

    def __init__(self, env_fn: Any, policy: Any, policy_factory: Any, settings: dict) -> None:
        context = multiprocessing.get_context(default_start_method())
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_process_main,
            args=(child, env_fn, policy, policy_factory, settings),
            name="Evaluator-process",
            daemon=True,
        )
        self.process.start()
        child.close()

    def run(self, weights: TensorDictBase | None) -> TensorDict:
        try:
            self.conn.send(("eval", weights))
            ready = multiprocessing.connection.wait([self.conn, self.process.sentinel])
            if self.conn not in ready and not self.conn.poll():
                raise EOFError
            status, payload = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(1.0)
            raise RuntimeError(
                f"Evaluator: the evaluation process (pid {self.process.pid}) died with exit "
                f"code {self.process.exitcode} (killed, or out of memory?)."
            ) from None
        if status == "error":
            raise RuntimeError(f"Evaluator: the evaluation process failed:\n{payload}")
        return payload

    def stop(self) -> None:
        """Kills the child: the evaluation it runs ends, and ``run`` reports its death."""
        self.process.kill()

    def close(self, timeout: float) -> None:
        """Asks the child to close its env and end; kills it after ``timeout`` seconds."""
        with contextlib.suppress(OSError, EOFError, ValueError, BrokenPipeError):
            self.conn.send(("close", None))
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class _EvalActor:
    """The ``"ray"`` backend's actor: holds the env and the policy where Ray placed it."""

    def __init__(self, env_fn: Any, policy: Any, policy_factory: Any, settings: dict) -> None:
        torch.set_num_threads(1)
        if settings["init_fn"] is not None:
            settings["init_fn"]()
        self.settings = settings
        self.env = make_env("Evaluator", env_fn, settings["max_steps"])
        self.policy = policy_factory() if policy_factory is not None else policy

    def run(self, weights: TensorDictBase | None) -> TensorDict:
        if weights is not None:
            with torch.no_grad():
                TensorDict.from_module(self.policy).update_(weights)
        settings = self.settings
        return run_episodes(
            self.env,
            self.policy,
            settings["num_trajectories"],
            settings["reward_key"],
            settings["done_key"],
            settings["exploration_type"],
        )

    def close(self) -> None:
        self.env.close()


class _RayRunner:
    """The ``"ray"`` backend: one Ray actor holds the env and a policy copy; each evaluation
    is one actor call with the weights."""

    def __init__(
        self,
        env_fn: Any,
        policy: Any,
        policy_factory: Any,
        settings: dict,
        num_gpus: int,
        ray_kwargs: dict[str, Any],
    ) -> None:
        try:
            import ray
        except ImportError as err:
            raise ImportError(
                'Evaluator(backend="ray") needs ray: pip install "rl-collectors[ray]"'
            ) from err
        self.ray = ray
        if not ray.is_initialized():
            ray.init()
        gpus = ray.cluster_resources().get("GPU", 0)
        if num_gpus > gpus:
            raise ValueError(
                f"Evaluator: backend='ray' asks for num_gpus={num_gpus} (TorchRL's default is "
                f"1) but the Ray cluster has {gpus:g} GPUs; the actor would wait forever. "
                f"Pass num_gpus=0 on a CPU-only cluster."
            )
        options = {"num_cpus": 1, "num_gpus": num_gpus, **ray_kwargs}
        self.actor = ray.remote(**options)(_EvalActor).remote(
            env_fn, policy, policy_factory, settings
        )

    def run(self, weights: TensorDictBase | None) -> TensorDict:
        ray = self.ray
        try:
            return ray.get(self.actor.run.remote(weights))
        except ray.exceptions.RayActorError as err:
            raise RuntimeError(
                f"Evaluator: the evaluation Ray actor died (killed, or its node lost?): {err}"
            ) from None
        except ray.exceptions.RayTaskError as err:
            raise RuntimeError(f"Evaluator: the evaluation Ray actor failed:\n{err}") from None

    def stop(self) -> None:
        """Kills the actor: the evaluation it runs ends, and ``run`` reports its death."""
        with contextlib.suppress(Exception):
            self.ray.kill(self.actor)

    def close(self, timeout: float) -> None:
        """Asks the actor to close its env (up to ``timeout`` seconds), then kills it."""
        ray = self.ray
        with contextlib.suppress(Exception):
            ray.get(self.actor.close.remote(), timeout=timeout)
        with contextlib.suppress(Exception):
            ray.kill(self.actor)


def _process_main(conn: Any, env_fn: Any, policy: Any, policy_factory: Any, settings: dict) -> None:
    def make() -> EnvBase:
        if settings["init_fn"] is not None:
            settings["init_fn"]()
        return make_env("Evaluator", env_fn, settings["max_steps"])

    def bind(env: EnvBase) -> Callable[[str, Any], Any]:
        owned = policy_factory() if policy_factory is not None else policy

        def evaluate(command: str, weights: Any) -> TensorDict:
            if weights is not None:
                with torch.no_grad():
                    TensorDict.from_module(owned).update_(weights)
            return run_episodes(
                env,
                owned,
                settings["num_trajectories"],
                settings["reward_key"],
                settings["done_key"],
                settings["exploration_type"],
            )

        return evaluate

    serve_env_calls(conn, make, bind, "result")


class Evaluator:
    """Runs evaluation episodes of a policy, blocking (``evaluate``) or in the background
    (``trigger_eval``, then ``poll``/``wait``), and logs the results.

    Each evaluation steps the env (batched envs step all their sub-envs) until
    ``num_trajectories`` episodes have ended and returns a TensorDict of scalars:
    ``"{log_prefix}/reward"`` (the mean episode return), ``"{log_prefix}/reward_min"``,
    ``"{log_prefix}/reward_max"``, ``"{log_prefix}/episode_length"`` (mean),
    ``"{log_prefix}/num_episodes"``, ``"{log_prefix}/time"`` (seconds) and
    ``"{log_prefix}/step"`` (the ``step`` given to the call, ``-1`` if none), plus what
    ``metrics_fn`` returns. Episodes longer than ``max_steps`` are truncated there.

    The evaluator owns its ``policy`` (or builds it with ``policy_factory``); ``weights``
    given to ``evaluate``/``trigger_eval`` (a module such as the training policy, a
    TensorDict or a state dict) are copied into it when the call is made, so training may
    go on changing the source while the evaluation runs.

    Backends: ``"thread"`` runs evaluations in a background thread of this process (the env
    is built there at the first evaluation); ``"process"`` runs them in a child process of
    its own (the env factory, and the policy or ``policy_factory``, must be picklable under
    the ``"spawn"`` start method, which is used where CUDA is initialised), weights sent
    with each evaluation; ``"ray"`` runs them in a Ray actor (``ray.remote(num_cpus=1,
    num_gpus=num_gpus, **ray_kwargs)``, on the running Ray instance or one ``ray.init()``
    starts; the env factory and the policy or ``policy_factory`` travel to it), weights sent
    with each evaluation. One evaluation runs at a time: ``busy_policy="skip"`` ignores a
    ``trigger_eval`` made while one is pending (returns ``False``), ``"error"`` raises.

    Results are passed to ``on_result(result)`` and, when ``logger`` is given (any object
    with ``log_scalar(name, value, step=None)``, such as rl-objectives' loggers), each
    scalar but the step is logged with ``step``; both are called from the background thread
    when it finishes.

    Args:
        env: an ``EnvBase`` (``"thread"`` backend only) or a callable returning one.
        policy: the evaluation policy (``None``: random actions, or ``policy_factory``).

    Keyword Args:
        policy_factory: a callable building the policy where the evaluation runs.
        num_trajectories: episodes per evaluation. Defaults to 10.
        max_steps: truncate episodes after this many steps (a ``StepCounter``).
        log_prefix: the prefix of the result keys. Defaults to ``"eval"``.
        reward_keys: the reward entry, summed over its non-batch dims.
        done_keys: the done entry, reduced with ``any`` over its non-batch dims.
        exploration_type: the exploration type of the policy calls. Defaults to
            ``ExplorationType.DETERMINISTIC``.
        metrics_fn: ``metrics_fn(episodes) -> dict`` of extra scalars, where ``episodes``
            holds ``"reward"`` and ``"episode_length"`` per episode; its keys get the prefix.
        on_result: called with each result.
        busy_policy: ``"skip"`` (the default) or ``"error"``.
        backend: ``"thread"`` (the default), ``"process"`` or ``"ray"``.
        init_fn: called once where the evaluations run, before the first one.
        num_gpus: (``"ray"`` only) GPUs the actor asks for. Defaults to 1, as TorchRL's;
            more than the cluster has raises (pass 0 on CPU-only clusters).
        ray_kwargs: (``"ray"`` only) more ``ray.remote`` options (``resources``, ...).
        logger: an object with ``log_scalar(name, value, step=None)``.

    Raises:
        ValueError: an unknown backend, busy policy or exploration type, a count that is not
            an int >= 1 (``num_trajectories``, ``max_steps``), an empty ``log_prefix``,
            ``reward_keys``/``done_keys`` not one key, or ``num_gpus`` < 0; each error names
            its argument.
        TypeError: both ``policy`` and ``policy_factory``, an env instance for the
            ``"process"`` or ``"ray"`` backend, or an argument of the wrong type (a callback
            that is not callable, a logger without ``log_scalar``, ...).
        ImportError: ``backend="ray"`` without Ray installed.

    Examples:
        >>> import torch
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors import Evaluator
        >>> count_up = lambda td: td.set("action", torch.ones(1, dtype=torch.int64))
        >>> evaluator = Evaluator(lambda: CountingEnv(max_count=3), count_up, num_trajectories=2)
        >>> result = evaluator.evaluate(step=100)
        >>> float(result["eval/reward"]), int(result["eval/step"])
        (3.0, 100)
        >>> evaluator.shutdown()
    """

    def __init__(
        self,
        env: EnvBase | Callable[[], EnvBase],
        policy: Callable[[TensorDictBase], TensorDictBase] | None = None,
        *,
        policy_factory: Callable[[], Any] | None = None,
        num_trajectories: int = 10,
        max_steps: int | None = None,
        log_prefix: str = "eval",
        reward_keys: str | tuple[str, ...] = ("next", "reward"),
        done_keys: str | tuple[str, ...] = ("next", "done"),
        exploration_type: ExplorationType = ExplorationType.DETERMINISTIC,
        metrics_fn: Callable[[TensorDictBase], dict[str, float]] | None = None,
        on_result: Callable[[TensorDictBase], None] | None = None,
        busy_policy: str = "skip",
        backend: str = "thread",
        init_fn: Callable[[], None] | None = None,
        num_gpus: int = 1,
        ray_kwargs: dict[str, Any] | None = None,
        logger: Any = None,
    ) -> None:
        where = "Evaluator"
        if backend not in BACKENDS:
            raise ValueError(f"{where}: expected backend in {BACKENDS}, got {backend!r}.")
        if busy_policy not in BUSY_POLICIES:
            raise ValueError(
                f"{where}: expected busy_policy in {BUSY_POLICIES}, got {busy_policy!r}."
            )
        check_positive_int(where, "num_trajectories", num_trajectories)
        if max_steps is not None:
            check_positive_int(where, "max_steps", max_steps)
        if not isinstance(env, EnvBase) and not callable(env):
            raise TypeError(
                f"{where}: expected env as an EnvBase or a callable returning one, got "
                f"{type(env).__name__}."
            )
        if backend != "thread" and isinstance(env, EnvBase):
            raise TypeError(
                f"{where}: the {backend!r} backend builds its env where it runs; expected "
                f"an env factory (a callable returning an EnvBase), got an "
                f"{type(env).__name__} instance."
            )
        if policy is not None and policy_factory is not None:
            raise TypeError(f"{where}: pass policy or policy_factory, not both.")
        for name, value in (
            ("policy", policy),
            ("policy_factory", policy_factory),
            ("metrics_fn", metrics_fn),
            ("on_result", on_result),
            ("init_fn", init_fn),
        ):
            if value is not None and not callable(value):
                raise TypeError(
                    f"{where}: expected {name} as a callable or None, got {type(value).__name__}."
                )
        if not isinstance(log_prefix, str):
            raise TypeError(
                f"{where}: expected log_prefix as a str, got {type(log_prefix).__name__}."
            )
        if not log_prefix:
            raise ValueError(
                f"{where}: expected log_prefix as a non-empty str (the result keys are "
                f"'{{log_prefix}}/reward', ...), got {log_prefix!r}."
            )
        exploration_type = _as_exploration_type(where, exploration_type)
        if isinstance(num_gpus, bool) or not isinstance(num_gpus, int | float) or num_gpus < 0:
            raise ValueError(f"{where}: expected num_gpus as a number >= 0, got {num_gpus!r}.")
        if ray_kwargs is not None and not isinstance(ray_kwargs, dict):
            raise TypeError(
                f"{where}: expected ray_kwargs as a dict of ray.remote options, got "
                f"{type(ray_kwargs).__name__}."
            )
        if logger is not None and not callable(getattr(logger, "log_scalar", None)):
            raise TypeError(
                f"{where}: expected logger to have a log_scalar(name, value, step) method, got "
                f"{type(logger).__name__}."
            )
        reward_key = _one_key(where, "reward_keys", reward_keys)
        done_key = _one_key(where, "done_keys", done_keys)
        self.num_trajectories = num_trajectories
        self.max_steps = max_steps
        self.log_prefix = log_prefix
        self.reward_key = reward_key
        self.done_key = done_key
        self.exploration_type = exploration_type
        self.metrics_fn = metrics_fn
        self.on_result = on_result
        self.busy_policy = busy_policy
        self.backend = backend
        self.logger = logger
        self._env_fn = env
        self._init_fn = init_fn
        self.policy = policy
        self._policy_factory = policy_factory
        self._env: EnvBase | None = None
        self._runner: _ProcessRunner | _RayRunner | None = None
        if backend != "thread":
            settings = {
                "num_trajectories": num_trajectories,
                "max_steps": max_steps,
                "reward_key": self.reward_key,
                "done_key": self.done_key,
                "exploration_type": exploration_type,
                "init_fn": init_fn,
            }
            if backend == "process":
                self._runner = _ProcessRunner(env, policy, policy_factory, settings)
            else:
                self._runner = _RayRunner(
                    env, policy, policy_factory, settings, num_gpus, dict(ray_kwargs or {})
                )
        self._jobs: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._pending = False
        self._done = threading.Event()
        self._result: TensorDict | None = None
        self._error: str | None = None
        self._closed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="Evaluator", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ public API
    @property
    def pending(self) -> bool:
        """Whether an evaluation is running (or its result has not been collected)."""
        return self._pending and not self._done.is_set()

    def trigger_eval(self, weights: Any = None, step: int | None = None) -> bool:
        """Starts an evaluation in the background with ``weights`` (copied now); returns
        ``False`` when one is pending and ``busy_policy="skip"``."""
        self._check_open("trigger_eval")
        with self._lock:
            if self.pending:
                if self.busy_policy == "error":
                    raise RuntimeError(
                        "Evaluator.trigger_eval: an evaluation is still running; wait() for "
                        "it, or build the evaluator with busy_policy='skip'."
                    )
                return False
            snapshot = self._snapshot(weights)
            self._done.clear()
            self._result, self._error = None, None
            self._pending = True
            self._jobs.put((snapshot, -1 if step is None else int(step)))
        return True

    def poll(self) -> TensorDict | None:
        """The result of the last evaluation if it finished (once), else ``None``."""
        if not self._pending or not self._done.is_set():
            return None
        return self._collect()

    def wait(self, timeout: float | None = None) -> TensorDict | None:
        """Blocks until the pending evaluation ends and returns its result (``None`` if none
        is pending); raises ``TimeoutError`` after ``timeout`` seconds, or the evaluation's
        error."""
        if not self._pending:
            return None
        if not self._done.wait(timeout):
            raise TimeoutError(f"Evaluator.wait: no result within {timeout} s.")
        return self._collect()

    def evaluate(self, weights: Any = None, step: int | None = None) -> TensorDict:
        """Runs one evaluation and returns its result (blocking)."""
        self._check_open("evaluate")
        if self.pending:
            raise RuntimeError(
                "Evaluator.evaluate: a background evaluation is still running; wait() for it first."
            )
        self.poll()  # a finished, uncollected result is dropped
        self.trigger_eval(weights, step)
        return self.wait()

    def shutdown(self, grace: float = 5.0) -> None:
        """Stops the background thread, the process backend's process or the Ray backend's
        actor, and closes the env; idempotent.

        A running evaluation may finish for up to ``grace`` seconds; after that it is stopped
        (the process backend's child is killed, the Ray actor is killed, the thread backend's
        loop ends at its next env step) and its result, collected with ``wait``/``poll``,
        is an error. Returns within about ``grace`` seconds plus a few more to close the
        env, even when the episodes never end (a thread backend's env whose ``step`` itself
        never returns is left to its daemon thread, unclosed).

        Args:
            grace: seconds a running evaluation, then the child closing its env, may take.
                Defaults to 5.

        Raises:
            ValueError: ``grace`` is not a finite number >= 0.
        """
        if (
            isinstance(grace, bool)
            or not isinstance(grace, int | float)
            or not math.isfinite(grace)
            or grace < 0
        ):
            raise ValueError(
                f"Evaluator.shutdown: expected grace as a finite number of seconds >= 0, got "
                f"{grace!r}."
            )
        if self._closed:
            return
        self._closed = True
        deadline = time.monotonic() + grace
        self._jobs.put(None)
        self._thread.join(grace)
        if self._thread.is_alive():
            self._stop.set()
            if self._runner is not None:
                self._runner.stop()
            self._thread.join(STOP_WAIT)
        if self._runner is not None:
            self._runner.close(max(deadline - time.monotonic(), 0.0))
        thread_env = self._env is not None and not isinstance(self._env_fn, EnvBase)
        if thread_env and not self._thread.is_alive():
            self._env.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.shutdown()

    # ------------------------------------------------------------------ internals
    def _check_open(self, what: str) -> None:
        if self._closed:
            raise RuntimeError(f"Evaluator.{what}: the evaluator was shut down.")

    def _snapshot(self, weights: Any) -> TensorDictBase | None:
        """The weights to evaluate, copied now (the source may change while it runs)."""
        if weights is None:
            if self.backend != "thread" and isinstance(self.policy, nn.Module):
                return TensorDict.from_module(self.policy).data.clone()
            return None
        return as_weights("Evaluator", weights).clone()

    def _collect(self) -> TensorDict:
        self._pending = False
        if self._error is not None:
            error, self._error = self._error, None
            raise RuntimeError(f"Evaluator: the evaluation failed:\n{error}")
        result, self._result = self._result, None
        return result

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            weights, step = job
            try:
                result = self._run(weights, step)
                self._result = result
                self._publish(result)
            except Exception:
                self._error = traceback.format_exc()
                if self._stop.is_set():
                    self._error += "(stopped by Evaluator.shutdown after its grace period)\n"
            finally:
                self._done.set()

    def _run(self, weights: TensorDictBase | None, step: int) -> TensorDict:
        start = time.perf_counter()
        if self._runner is not None:
            episodes = self._runner.run(weights)
        else:
            if self._env is None:
                if self._init_fn is not None:
                    self._init_fn()
                self._env = make_env("Evaluator", self._env_fn, self.max_steps)
                if self._policy_factory is not None:
                    self.policy = self._policy_factory()
            if weights is not None:
                if not isinstance(self.policy, nn.Module):
                    raise TypeError(
                        f"Evaluator: weights were given but the policy is a "
                        f"{type(self.policy).__name__}, not an nn.Module."
                    )
                with torch.no_grad():
                    TensorDict.from_module(self.policy).update_(weights)
            episodes = run_episodes(
                self._env,
                self.policy,
                self.num_trajectories,
                self.reward_key,
                self.done_key,
                self.exploration_type,
                self._stop,
            )
        elapsed = time.perf_counter() - start
        return self._metrics(episodes, step, elapsed)

    def _metrics(self, episodes: TensorDict, step: int, elapsed: float) -> TensorDict:
        p = self.log_prefix
        rewards = episodes["reward"]
        values = {
            f"{p}/reward": rewards.mean(),
            f"{p}/reward_min": rewards.min(),
            f"{p}/reward_max": rewards.max(),
            f"{p}/episode_length": episodes["episode_length"].to(torch.float64).mean(),
            f"{p}/num_episodes": torch.tensor(len(rewards)),
            f"{p}/time": torch.tensor(elapsed, dtype=torch.float64),
            f"{p}/step": torch.tensor(step),
        }
        if self.metrics_fn is not None:
            for key, value in self.metrics_fn(episodes).items():
                values[f"{p}/{key}"] = torch.as_tensor(value)
        return TensorDict(values, batch_size=[])

    def _publish(self, result: TensorDict) -> None:
        step_key = f"{self.log_prefix}/step"
        if self.logger is not None:
            step = int(result[step_key])
            for key, value in result.items():
                if key != step_key:
                    self.logger.log_scalar(key, float(value), step=None if step < 0 else step)
        if self.on_result is not None:
            self.on_result(result)
