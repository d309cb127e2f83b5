"""Checks of an env against its own specs: ``check_env_specs`` and the per-step debug checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from rl_core.keys import NEXT, NestedKey
from rl_core.specs import Composite, TensorSpec

if TYPE_CHECKING:
    from rl_core.envs.base import EnvBase


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"shape {tuple(value.shape)}, dtype {value.dtype}, device {value.device}"
    return type(value).__name__


def _same_device(actual: torch.device, expected: torch.device) -> bool:
    """``cuda`` and ``cuda:0`` name the same device when one of them has no index."""
    if actual.type != expected.type:
        return False
    return actual.index is None or expected.index is None or actual.index == expected.index


def _unmasked(spec: TensorSpec) -> TensorSpec:
    """The spec without its action mask: a mask describes the current state only, so values
    recorded at earlier steps are checked against the whole space."""
    if getattr(spec, "mask", None) is None:
        return spec
    spec = spec.clone()
    spec.update_mask(None)
    return spec


def _check_leaf(
    where: str, key: NestedKey, spec: TensorSpec, value: object, *, check_dtype: bool
) -> None:
    spec = _unmasked(spec)
    if not isinstance(value, torch.Tensor):
        # Non-tensor payloads: the spec decides (NonTensor specs accept them).
        if not spec.is_in(value):
            raise ValueError(f"{where}: entry {key!r} ({_describe(value)}) is not in {spec!r}.")
        return
    expected_shape = tuple(spec.shape)
    if tuple(value.shape) != expected_shape:
        raise ValueError(
            f"{where}: entry {key!r} has shape {tuple(value.shape)}, expected {expected_shape} "
            f"(spec {type(spec).__name__}, dtype {spec.dtype}, device {spec.device})."
        )
    if check_dtype and value.dtype != spec.dtype:
        raise ValueError(
            f"{where}: entry {key!r} has dtype {value.dtype}, expected {spec.dtype} "
            f"(shape {expected_shape})."
        )
    if spec.device is not None and not _same_device(value.device, spec.device):
        raise ValueError(
            f"{where}: entry {key!r} is on device {value.device}, expected {spec.device}."
        )
    if check_dtype and not spec.is_in(value):
        try:
            spec.assert_is_in(value)
        except ValueError as err:
            raise ValueError(f"{where}: entry {key!r}: {err}") from None
        raise ValueError(f"{where}: entry {key!r} is not in {spec!r}.")


def _check_against(
    where: str,
    spec: Composite,
    td: TensorDictBase,
    *,
    prefix: tuple[str, ...] = (),
    check_dtype: bool = True,
) -> None:
    for key in spec.keys(include_nested=True, leaves_only=True):
        path = (*prefix, *((key,) if isinstance(key, str) else key))
        leaf = spec[key]
        if leaf is None:
            continue
        value = td.get(path, None)
        if value is None:
            raise ValueError(
                f"{where}: the specs name {path}, which the env did not write "
                f"(got keys {sorted(map(str, td.keys(True, True)))})."
            )
        _check_leaf(where, path, leaf, value, check_dtype=check_dtype)


def check_step_output(env: EnvBase, tensordict: TensorDictBase, next_td: TensorDictBase) -> None:
    """Checks one ``_step`` output against the observation, reward and done specs."""
    where = f"{type(env).__name__}.step"
    _check_against(where, env.full_observation_spec, next_td)
    _check_against(where, env.full_reward_spec, next_td)
    _check_against(where, env.full_done_spec, next_td)


def check_reset_output(env: EnvBase, fresh: TensorDictBase) -> None:
    """Checks one ``_reset`` output against the observation and done specs."""
    where = f"{type(env).__name__}.reset"
    _check_against(where, env.full_observation_spec, fresh)
    _check_against(where, env.full_done_spec, fresh)


def check_env_specs(
    env: EnvBase,
    return_contiguous: bool = True,
    check_dtype: bool = True,
    seed: int | None = None,
    *,
    max_steps: int = 3,
) -> None:
    """Runs a short random rollout and checks every entry against the env's specs.

    The rollout must hold exactly the entries the specs describe (observations, actions,
    states and done flags at the root; observations, reward and done flags under ``"next"``),
    with the spec's shape, dtype and device, and values inside the spec.

    Args:
        env: the env to check.
        return_contiguous: passed to ``rollout``.
        check_dtype: also compare dtypes and bounds.
        seed: seed the env first.
        max_steps: length of the rollout (it does not stop on done).

    Raises:
        ValueError: the first mismatch: key, expected and actual shape/dtype/device.
    """
    if seed is not None:
        env.set_seed(seed)
    name = type(env).__name__
    rollout = env.rollout(max_steps, return_contiguous=return_contiguous, break_when_any_done=False)
    fake = env.fake_tensordict()
    fake_keys = set(fake.keys(include_nested=True, leaves_only=True))
    real_keys = set(rollout.keys(include_nested=True, leaves_only=True))
    if fake_keys != real_keys:
        missing = sorted(map(str, fake_keys - real_keys))
        extra = sorted(map(str, real_keys - fake_keys))
        raise ValueError(
            f"check_env_specs({name}): the rollout and the specs hold different entries. "
            f"In the specs, not in the rollout: {missing}. In the rollout, not in the specs: "
            f"{extra}. Add the missing entries to the env output or the extra ones to its specs."
        )
    time_dim = len(env.batch_size)
    for t, step in enumerate(rollout.unbind(time_dim)):
        where = f"check_env_specs({name}) at step {t}"
        root = Composite(env.full_observation_spec.clone(), shape=env.batch_size, device=env.device)
        root.update(env.full_done_spec)
        root.update(env.full_state_spec)
        root.update(env.full_action_spec)
        _check_against(where, root, step, check_dtype=check_dtype)
        nxt = Composite(env.full_observation_spec.clone(), shape=env.batch_size, device=env.device)
        nxt.update(env.full_reward_spec)
        nxt.update(env.full_done_spec)
        _check_against(where, nxt, step, prefix=(NEXT,), check_dtype=check_dtype)
        done = step.get((NEXT, "done"), None)
        if done is not None:
            expected = step.get((NEXT, "terminated")) | step.get((NEXT, "truncated"))
            if not torch.equal(done, expected):
                raise ValueError(f"{where}: 'done' differs from 'terminated | truncated'.")


__all__ = ["check_env_specs"]
