"""The per-sub-env factories that SerialEnv and ParallelEnv build from their arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rl_core.envs import EnvBase
from rl_envs.batched.env_creator import EnvCreator


def as_env_factories(
    num_workers: int,
    create_env_fn: Callable[..., EnvBase] | Sequence[Callable[..., EnvBase]],
    create_env_kwargs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
    where: str,
) -> list[Callable[[], EnvBase]]:
    """One zero-argument env factory per sub-env, from a function (or a list of them).

    Raises:
        ValueError: ``num_workers`` < 1, or a list whose length is not ``num_workers``.
        TypeError: a factory that is not callable, or kwargs that are not mappings.
    """
    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise ValueError(f"{where}: expected num_workers >= 1, got {num_workers!r}.")
    fns = _per_worker(num_workers, create_env_fn, "create_env_fn", where)
    if create_env_kwargs is None:
        kwargs_list: list[Mapping[str, Any]] = [{}] * num_workers
    else:
        kwargs_list = _per_worker(num_workers, create_env_kwargs, "create_env_kwargs", where)
    factories = []
    for i, (fn, kwargs) in enumerate(zip(fns, kwargs_list)):
        if not callable(fn):
            raise TypeError(
                f"{where}: create_env_fn[{i}] is a {type(fn).__name__}, expected a callable "
                f"returning an env (a class, a function or an EnvCreator)."
            )
        if not isinstance(kwargs, Mapping):
            raise TypeError(
                f"{where}: create_env_kwargs[{i}] is a {type(kwargs).__name__}, expected a dict."
            )
        factories.append(_bind(fn, dict(kwargs)))
    return factories


def _per_worker(num_workers: int, value: Any, name: str, where: str) -> list[Any]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        if len(value) != num_workers:
            raise ValueError(
                f"{where}: got {len(value)} {name} for num_workers={num_workers}; pass one per "
                f"sub-env, or a single one for all."
            )
        return list(value)
    return [value] * num_workers


def _bind(fn: Callable[..., EnvBase], kwargs: dict[str, Any]) -> Callable[[], EnvBase]:
    if isinstance(fn, EnvCreator):
        return (
            fn if not kwargs else EnvCreator(fn.create_env_fn, {**fn.create_env_kwargs, **kwargs})
        )
    return EnvCreator(fn, kwargs)


__all__ = ["as_env_factories"]
