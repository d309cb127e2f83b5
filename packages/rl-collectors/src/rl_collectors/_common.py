"""Argument checks and small helpers shared by the collectors."""

from __future__ import annotations

import contextlib
import copy
import traceback
from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_collectors.weight_sync import WeightSyncScheme
from rl_core import EnvBase, StepCounter, TransformedEnv
from rl_core.keys import DONE, NEXT, TRUNCATED, key_path

EnvFactory = Callable[[], EnvBase]


def check_positive_int(where: str, name: str, value: Any, *, allow_zero: bool = False) -> int:
    low = 0 if allow_zero else 1
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{where}: expected {name} as an int >= {low}, got {value!r}.")
    return value


def check_total_frames(where: str, total_frames: Any) -> int:
    if not isinstance(total_frames, int) or isinstance(total_frames, bool) or total_frames == 0:
        raise ValueError(
            f"{where}: expected total_frames as a positive int or -1 (no end), got "
            f"{total_frames!r}."
        )
    return total_frames if total_frames > 0 else -1


def check_schemes(where: str, schemes: Any, weight_updater: Any) -> dict[str, WeightSyncScheme]:
    """``weight_sync_schemes`` checked: a dict ``{model_id: WeightSyncScheme}`` (``{}`` for
    ``None``), not given together with a ``weight_updater``."""
    if schemes is None:
        return {}
    if not isinstance(schemes, dict):
        raise TypeError(
            f"{where}: expected weight_sync_schemes as a dict {{model_id: WeightSyncScheme}} "
            f"(e.g. {{'policy': SharedMemWeightSyncScheme()}}), got {type(schemes).__name__}."
        )
    for model_id, scheme in schemes.items():
        if not isinstance(model_id, str) or not isinstance(scheme, WeightSyncScheme):
            raise TypeError(
                f"{where}: expected weight_sync_schemes to map model ids (str) to "
                f"WeightSyncScheme instances, got {model_id!r}: {type(scheme).__name__}."
            )
    if schemes and weight_updater is not None:
        raise ValueError(
            f"{where}: pass weight_updater or weight_sync_schemes, not both (got "
            f"{type(weight_updater).__name__} and schemes for {sorted(schemes)})."
        )
    return dict(schemes)


def make_env(
    where: str,
    create_env_fn: EnvFactory | EnvBase,
    max_frames_per_traj: int | None,
    create_env_kwargs: dict[str, Any] | None = None,
) -> EnvBase:
    """Builds the env (or takes the instance) and adds the step limit.

    Raises:
        TypeError: ``create_env_kwargs`` is not a dict, or is given with an env instance.
    """
    if create_env_kwargs is not None and not isinstance(create_env_kwargs, dict):
        raise TypeError(
            f"{where}: expected create_env_kwargs to be a dict of keyword arguments for "
            f"create_env_fn, got {type(create_env_kwargs).__name__}."
        )
    if create_env_kwargs and isinstance(create_env_fn, EnvBase):
        raise TypeError(
            f"{where}: create_env_kwargs={create_env_kwargs!r} was given with an env instance; "
            f"pass a factory (a callable building the env) to receive them."
        )
    if isinstance(create_env_fn, EnvBase):
        env = create_env_fn
    else:
        env = create_env_fn(**(create_env_kwargs or {}))
    if not isinstance(env, EnvBase):
        raise TypeError(
            f"{where}: expected create_env_fn to be an EnvBase or a callable returning one, got "
            f"{type(env).__name__}."
        )
    if max_frames_per_traj is not None:
        check_positive_int(where, "max_frames_per_traj", max_frames_per_traj)
        env = TransformedEnv(env, StepCounter(max_steps=max_frames_per_traj))
    return env


def serve_env_calls(
    conn: Any,
    make: Callable[[], EnvBase],
    bind: Callable[[EnvBase], Callable[[str, Any], Any]],
    ok: str,
) -> None:
    """The loop of a worker process that owns an env and answers its parent over ``conn``.

    Builds the env (``make()``) and the answering function (``bind(env)``), then answers each
    ``(command, args)`` message with ``(ok, answer(command, args))``, or ``("error",
    traceback)`` when the answer raises, until a ``"close"`` command. A setup that fails is
    reported as the answer to the first call the parent makes; a parent gone (EOF) ends the
    loop quietly; the env is closed on the way out.

    Args:
        conn: the worker's end of the pipe.
        make: builds the env, in the worker.
        bind: returns the answering function of that env.
        ok: the tag of a successful answer.
    """
    torch.set_num_threads(1)
    env = None
    try:
        env = make()
        answer = bind(env)
        while True:
            command, args = conn.recv()
            if command == "close":
                return
            try:
                conn.send((ok, answer(command, args)))
            except Exception:
                conn.send(("error", traceback.format_exc()))
    except (EOFError, OSError, KeyboardInterrupt):
        return
    except Exception:
        with contextlib.suppress(OSError, ValueError):
            conn.recv()  # the call that waits for an answer
            conn.send(("error", traceback.format_exc()))
    finally:
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()


def as_device(device: Any) -> torch.device | None:
    return None if device is None else torch.device(device)


def module_device(policy: Any) -> torch.device | None:
    """The device of a module's first parameter (or buffer), None for anything else."""
    if not isinstance(policy, nn.Module):
        return None
    for tensor in policy.parameters():
        return tensor.device
    for tensor in policy.buffers():
        return tensor.device
    return None


def policy_on_device(policy: Any, device: torch.device | None) -> Any:
    """``policy`` itself, or a copy of it on ``device`` when its parameters live elsewhere."""
    current = module_device(policy)
    if device is None or current is None or current == device:
        return policy
    return copy.deepcopy(policy).to(device)


def load_weights(where: str, policy: Any, weights: Any) -> None:
    """Copies ``weights`` (a TensorDict from ``TensorDict.from_module`` or a state dict) into
    the policy's parameters and buffers, in place."""
    if not isinstance(policy, nn.Module):
        raise TypeError(
            f"{where}: the policy is a {type(policy).__name__}, not an nn.Module; it has no "
            f"weights to update."
        )
    if isinstance(weights, TensorDictBase):
        with torch.no_grad():
            TensorDict.from_module(policy).update_(weights.to(module_device(policy)))
    elif isinstance(weights, dict):
        policy.load_state_dict(weights)
    else:
        raise TypeError(
            f"{where}: expected weights as a TensorDict (TensorDict.from_module(policy)) or a "
            f"state dict, got {type(weights).__name__}."
        )


def done_paths(env: EnvBase) -> list[tuple[str, ...]]:
    """The ``("next", ..., "done")`` path of every level of the env holding done flags."""
    paths = []
    for key in env.done_keys:
        path = key_path(key)
        if path[-1] == DONE:
            paths.append((NEXT, *path))
    return paths


def finished(td: TensorDictBase, paths: list[tuple[str, ...]], batch_dims: int) -> torch.Tensor:
    """One flag per sub-env: any of its ``done`` flags (at any level) is set."""
    flags = None
    for path in paths:
        value = td.get(path)
        value = value.reshape(*value.shape[:batch_dims], -1).any(-1)
        flags = value if flags is None else flags | value
    return flags


def mark_last_truncated(batch: TensorDictBase, paths: list[tuple[str, ...]]) -> None:
    """Sets ``truncated`` and ``done`` on the last step of each sub-env not done there.

    The flags are replaced by new tensors, never written in place, so the TensorDicts the env
    keeps stepping from are untouched.
    """
    last = (slice(None),) * (batch.batch_dims - 1) + (-1,)
    for done_path in paths:
        trunc_path = (*done_path[:-1], TRUNCATED)
        done, truncated = batch.get(done_path).clone(), batch.get(trunc_path).clone()
        cut = ~done[last]
        truncated[last] |= cut
        done[last] |= cut
        batch.set(done_path, done)
        batch.set(trunc_path, truncated)
