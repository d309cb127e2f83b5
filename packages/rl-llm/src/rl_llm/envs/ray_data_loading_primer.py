"""RayDataLoadingPrimer: a DataLoadingPrimer whose data loader lives in a Ray actor."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rl_llm.envs.data_loading_primer import DataLoadingPrimer


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
