"""DataLoadingPrimer: a transform that feeds each reset from a data loader, and
RayDataLoadingPrimer, the same fed by a data loader that lives in a Ray actor.

Both live in this module because ``DataLoadingPrimer(..., use_ray_service=True)`` builds the
Ray primer, which is itself a ``DataLoadingPrimer``: in two modules they imported each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from rl_core import Transform
from rl_llm.data.utils import as_nested_tensor, as_padded_tensor

_STACKS: dict[str, Callable[[list[torch.Tensor]], torch.Tensor]] = {
    "as_padded_tensor": as_padded_tensor,
    "as_nested_tensor": as_nested_tensor,
}


def _maybe_dense_stack(values: list[torch.Tensor]) -> torch.Tensor:
    if len({tuple(v.shape) for v in values}) == 1:
        return torch.stack(values)
    return as_padded_tensor(values)


class _ServiceChoice(type(Transform)):
    """Builds a :class:`~rl_llm.envs.RayDataLoadingPrimer` for ``DataLoadingPrimer(...,
    use_ray_service=True)``: the choice is made before ``__init__``, so each class keeps a
    plain constructor."""

    def __call__(
        cls,
        *args: Any,
        use_ray_service: bool = False,
        service_backend: str | None = None,
        service_backend_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        if service_backend not in (None, "ray"):
            raise ValueError(
                f"{cls.__name__}: expected service_backend None or 'ray' (the one backend "
                f"built), got {service_backend!r}."
            )
        if (use_ray_service or service_backend == "ray") and cls is DataLoadingPrimer:
            options = dict(service_backend_options or {})
            clash = sorted(set(options) & set(kwargs))
            if clash:
                raise ValueError(
                    f"DataLoadingPrimer: {clash} given both as arguments and in "
                    f"service_backend_options; give each once."
                )
            return RayDataLoadingPrimer(*args, **options, **kwargs)
        if service_backend_options is not None:
            raise ValueError(
                f"{cls.__name__}: service_backend_options apply with use_ray_service=True; got "
                f"{dict(service_backend_options)!r} without it."
            )
        return super().__call__(*args, **kwargs)


class DataLoadingPrimer(Transform, metaclass=_ServiceChoice):
    """Draws the rows of each reset from a data loader and hands them to the base env.

    The data loader yields mappings: one item (``{"query": "...", "answer": "..."}``; any
    string value marks a single item) or a batch of items (every value a list or a tensor
    with the batch along its first dim, as a ``torch.utils.data.DataLoader`` gives). At each reset the primer takes the next
    ``B // repeats`` items, repeats each ``repeats`` times in a row (GRPO groups), resets the
    base env with them (a :class:`~rl_llm.envs.ChatEnv` or :class:`~rl_llm.envs.LLMEnv` reads
    ``"query"``) and writes every field into the reset output. When the loader is exhausted it
    starts over (a new ``iter``, so a shuffling loader reshuffles). The primer must be the
    first transform of the env.

    Args:
        dataloader: an iterable of mappings (a list, a ``DataLoader``); optional with
            ``dataloader_factory``.
        primers: ignored when ``None``; reserved for specs of the loaded keys.
        stack_method: how tensors of one key are stacked: ``"as_padded_tensor"``,
            ``"as_nested_tensor"``, a callable, or ``None`` (stack, padding ragged ones).
        repeats: how many successive dialogs share each item (default 1).
        batch_size: the number of items per reset (default: the env's batch size / repeats).
        group_repeats: accepted for TorchRL compatibility; repeats are always grouped.
        dataloader_factory: a callable returning a fresh data loader.
        use_ray_service: build a :class:`~rl_llm.envs.RayDataLoadingPrimer` instead (the data
            loader served by a Ray actor and shared by every env that names it).
        service_backend: ``None`` or ``"ray"`` (the same as ``use_ray_service=True``).
        service_backend_options: the Ray primer's own options (``actor_name``, ``num_cpus``,
            ``num_gpus``, ``ray_init_config``).

    Examples:
        >>> from rl_core import TransformedEnv
        >>> from rl_llm.envs import DataLoadingPrimer, LLMEnv
        >>> data = [{"query": "a", "answer": "1"}, {"query": "b", "answer": "2"}]
        >>> env = TransformedEnv(LLMEnv(batch_size=(4,)), DataLoadingPrimer(data, repeats=2))
        >>> td = env.reset()
        >>> list(td["query"]), list(td["answer"])
        (['a', 'a', 'b', 'b'], ['1', '1', '2', '2'])
    """

    def __init__(
        self,
        dataloader: Iterable[Mapping[str, Any]] | None = None,
        *,
        primers: Any = None,
        stack_method: str | Callable[[list[torch.Tensor]], torch.Tensor] | None = None,
        repeats: int | None = None,
        batch_size: int | None = None,
        group_repeats: bool = True,
        dataloader_factory: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
    ) -> None:
        super().__init__()
        if dataloader is None and dataloader_factory is None:
            raise ValueError("DataLoadingPrimer: pass a dataloader or a dataloader_factory.")
        if isinstance(stack_method, str):
            if stack_method not in _STACKS:
                raise ValueError(
                    f"DataLoadingPrimer: expected stack_method in {sorted(_STACKS)} or a "
                    f"callable, got {stack_method!r}."
                )
            stack_method = _STACKS[stack_method]
        self.stack_method = stack_method or _maybe_dense_stack
        self.repeats = 1 if repeats is None else int(repeats)
        if self.repeats < 1:
            raise ValueError(f"DataLoadingPrimer: expected repeats >= 1, got {repeats}.")
        self.batch_size = batch_size
        self.primers = primers
        self.group_repeats = group_repeats
        self.dataloader_factory = dataloader_factory
        self.dataloader = dataloader if dataloader is not None else dataloader_factory()
        self._iter: Iterator[Mapping[str, Any]] | None = None
        self._pending: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ data
    def _fresh_iter(self) -> Iterator[Mapping[str, Any]]:
        if self.dataloader_factory is not None and self._iter is not None:
            self.dataloader = self.dataloader_factory()
        return iter(self.dataloader)

    def _next_batch_items(self) -> list[dict[str, Any]]:
        """The items of the loader's next element (one item, or a batch split into items)."""
        if self._iter is None:
            self._iter = self._fresh_iter()
        try:
            element = next(self._iter)
        except StopIteration:
            self._iter = self._fresh_iter()
            try:
                element = next(self._iter)
            except StopIteration:
                raise RuntimeError("DataLoadingPrimer: the data loader yields nothing.") from None
        return split_items(element)

    def next_items(self, n: int) -> list[dict[str, Any]]:
        """The next ``n`` items of the data loader (across its batches and epochs)."""
        while len(self._pending) < n:
            self._pending.extend(self._next_batch_items())
        out, self._pending = self._pending[:n], self._pending[n:]
        return out

    def reset_dataloader(self) -> None:
        """Starts the data loader over (drops buffered items)."""
        self._iter, self._pending = None, []

    def _collate(self, items: list[dict[str, Any]], batch_size: torch.Size) -> TensorDict:
        keys = list(items[0])
        out = TensorDict(batch_size=batch_size)
        for key in keys:
            values = [item[key] for item in items for _ in range(self.repeats)]
            if all(isinstance(v, torch.Tensor) for v in values):
                out.set(key, self.stack_method(values))
            elif all(isinstance(v, (int, float, bool)) for v in values):
                out.set(key, torch.tensor(values))
            else:
                out.set(key, [v if isinstance(v, str) else str(v) for v in values])
        return out

    def load(self, batch_size: torch.Size) -> TensorDict:
        """A TensorDict of ``batch_size`` rows: the next items, each repeated ``repeats`` times."""
        rows = batch_size[0] if batch_size else 1
        if rows % self.repeats:
            raise ValueError(
                f"DataLoadingPrimer: the env's batch of {rows} dialogs is not a multiple of "
                f"repeats={self.repeats}."
            )
        n = rows // self.repeats
        if self.batch_size is not None and self.batch_size != n:
            raise ValueError(
                f"DataLoadingPrimer: batch_size={self.batch_size} items per reset, but the env "
                f"needs {n} ({rows} dialogs / repeats={self.repeats})."
            )
        return self._collate(self.next_items(n), batch_size)

    # ------------------------------------------------------------------ env hooks
    def intercept_reset(self, tensordict: TensorDictBase | None) -> TensorDictBase | None:
        env = self.parent
        if env is None:
            raise RuntimeError("DataLoadingPrimer: put the primer in a TransformedEnv first.")
        data = self.load(env.batch_size)
        out = env.reset(data.clone())
        for key in data.keys():
            if key not in out.keys():
                out.set(key, data.get(key))
        return out

    def _reset(self, tensordict: Any, tensordict_reset: TensorDictBase) -> TensorDictBase:
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict


def split_items(element: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One mapping of a loader as a list of items (a batch is split along its first dim)."""
    if isinstance(element, TensorDictBase):
        element = element.to_dict()
    if not isinstance(element, Mapping):
        raise TypeError(
            f"DataLoadingPrimer: expected the data loader to yield mappings (dicts), got "
            f"{type(element).__name__}."
        )
    values = list(element.values())
    batched = (
        values
        and not any(isinstance(v, str) for v in values)
        and all(
            isinstance(v, (list, tuple)) or (isinstance(v, torch.Tensor) and v.ndim > 0)
            for v in values
        )
    )
    if not batched:
        return [dict(element)]
    lengths = {len(v) for v in values}
    if len(lengths) != 1:
        raise ValueError(
            f"DataLoadingPrimer: a batch of the data loader has fields of different lengths "
            f"{ {k: len(v) for k, v in element.items()} }."
        )
    (n,) = lengths
    return [{k: v[i] for k, v in element.items()} for i in range(n)]


def _data_server_class() -> Any:
    import ray

    @ray.remote
    class _DataServer:
        """Holds the data loader; hands out the next items to every primer that asks."""

        def __init__(self, dataloader: Any, dataloader_factory: Any) -> None:
            self.primer = DataLoadingPrimer(dataloader, dataloader_factory=dataloader_factory)

        def next_items(self, n: int) -> list[dict[str, Any]]:
            return self.primer.next_items(n)

        def reset_dataloader(self) -> None:
            self.primer.reset_dataloader()

    return _DataServer


class RayDataLoadingPrimer(DataLoadingPrimer):
    """A :class:`DataLoadingPrimer` fed by one data loader served from a Ray actor.

    The data loader (or ``dataloader_factory``, called inside the actor) lives in a named
    Ray actor; every primer built with the same ``actor_name`` (in this process or in Ray
    workers running envs) draws the next items from it, so parallel envs share one pass over
    the data without overlap. The first primer creates the actor; later ones connect to it.
    Ray must be running (``ray.init``) or is started with ``ray_init_config``.

    Args:
        dataloader: an iterable of mappings (see :class:`DataLoadingPrimer`), sent to the actor.
        dataloader_factory: a callable building the loader inside the actor instead.
        actor_name: the Ray actor's name (default ``"rl_llm_data_loader"``).
        num_cpus: CPUs reserved for the actor; default the loader's ``num_workers`` when it
            has one (a ``torch.utils.data.DataLoader``), else 1.
        num_gpus: GPUs reserved for the actor (default 0).
        ray_init_config: ``ray.init`` keyword arguments when Ray is not running.
        **kwargs: ``repeats``, ``stack_method``, ``batch_size`` as for :class:`DataLoadingPrimer`.

    Raises:
        ModuleNotFoundError: Ray is not installed.
    """

    def __init__(
        self,
        dataloader: Iterable[Mapping[str, Any]] | None = None,
        *,
        dataloader_factory: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
        actor_name: str = "rl_llm_data_loader",
        num_cpus: float | None = None,
        num_gpus: float = 0,
        ray_init_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            import ray
        except ModuleNotFoundError:
            raise ModuleNotFoundError(
                'RayDataLoadingPrimer needs Ray: pip install "ray"', name="ray"
            ) from None
        # The local loader stays empty: items come from the actor.
        super().__init__([{}], **kwargs)
        self.dataloader = None
        if not ray.is_initialized():
            ray.init(**(ray_init_config or {}))
        self.actor_name = actor_name
        try:
            self.server = ray.get_actor(actor_name)
        except ValueError:
            if dataloader is None and dataloader_factory is None:
                raise ValueError(
                    f"RayDataLoadingPrimer: no actor named {actor_name!r} is running; pass a "
                    f"dataloader or a dataloader_factory to create it."
                ) from None
            if num_cpus is None:
                num_cpus = getattr(dataloader, "num_workers", 0) or 1
            if num_cpus < 0 or num_gpus < 0:
                raise ValueError(
                    f"RayDataLoadingPrimer: expected num_cpus >= 0 and num_gpus >= 0, got "
                    f"num_cpus={num_cpus}, num_gpus={num_gpus}."
                ) from None
            self.server = (
                _data_server_class()
                .options(name=actor_name, get_if_exists=True, num_cpus=num_cpus, num_gpus=num_gpus)
                .remote(dataloader, dataloader_factory)
            )

    def next_items(self, n: int) -> list[dict[str, Any]]:
        import ray

        return ray.get(self.server.next_items.remote(n))

    def reset_dataloader(self) -> None:
        import ray

        ray.get(self.server.reset_dataloader.remote())
