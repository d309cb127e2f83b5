"""MultiSyncDataCollector (``MultiSyncCollector``): one collector per worker process, one batch gathered from all."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from tensordict import TensorDictBase

from rl_collectors._multi import MultiCollectorBase


class MultiSyncDataCollector(MultiCollectorBase):
    """Runs a ``SyncDataCollector`` in each of ``len(create_env_fn)`` worker processes and
    yields, per iteration, one batch from every worker stacked along a new first dim.

    ``MultiSyncCollector`` (TorchRL 0.14's name) is the same class.

    Each worker collects ``frames_per_batch / num_workers`` frames with its own env and a copy
    of the policy; batches come back through shared memory (one copy, into the stacked
    output). ``update_policy_weights_()`` publishes the policy's weights in shared memory and
    bumps a version counter; each worker loads them before its next batch and every frame
    carries the version that produced it in ``("collector", "policy_version")``. Trajectory
    ids (``track_traj_ids``/``split_trajs``) are made unique across workers. A worker that
    raises or dies makes the parent raise ``RuntimeError`` with the worker's traceback (or
    its exit code); the other workers are shut down.

    Args:
        create_env_fn: one env factory per worker (picklable under ``"spawn"``).
        policy: as in ``SyncDataCollector``; an ``nn.Module`` with weights gets them shared.
        frames_per_batch: frames per yielded batch, over all workers (a multiple of
            ``num_workers`` times each env's batch numel).
        total_frames: as in ``SyncDataCollector``.
        mp_start_method: ``"fork"`` or ``"spawn"`` (a context is used; the global start
            method is untouched). Defaults to ``"fork"`` where available and CUDA is not
            initialised, else ``"spawn"``.
        create_env_kwargs: keyword arguments for the env factories: one dict for all, or a
            list of one dict per worker, as TorchRL.
        cat_results: how the workers' batches are joined, as TorchRL: ``"stack"`` (or
            ``None``, the default) along a new first dim; an int concatenates them along that
            batch dim (``0`` the envs' batch dim, or time for unbatched envs; ``-1`` time).
        **kwargs: the other keyword arguments of ``SyncDataCollector`` (``split_trajs``,
            ``postproc`` and ``replay_buffer`` apply in the parent; ``init_random_frames`` is
            shared among the workers); workers run with one torch thread each.

    Raises:
        TypeError: ``create_env_fn`` is not a list of factories.
        ValueError: a bad frame count or start method.
        RuntimeError: a worker failed or died.

    Examples:
        >>> from functools import partial
        >>> from rl_core.testing import CountingEnv
        >>> from rl_collectors import MultiSyncDataCollector
        >>> make = partial(CountingEnv, max_count=4, batch_size=[2])
        >>> collector = MultiSyncDataCollector([make, make], None, frames_per_batch=20, total_frames=40)
        >>> [batch.batch_size for batch in collector]
        [torch.Size([2, 2, 5]), torch.Size([2, 2, 5])]
        >>> collector.shutdown()
    """

    def _frames_per_worker(self, frames_per_batch: int) -> int:
        if frames_per_batch % self.num_workers:
            raise ValueError(
                f"{type(self).__name__}: expected frames_per_batch as a multiple of the "
                f"{self.num_workers} workers, got {frames_per_batch}."
            )
        return frames_per_batch // self.num_workers

    def _check_cat_results(self, where: str, cat_results: object) -> str | int | None:
        if cat_results is None or cat_results == "stack":
            return cat_results
        if isinstance(cat_results, bool) or not isinstance(cat_results, int):
            raise ValueError(
                f"{where}: expected cat_results to be 'stack', None or an int (the batch dim "
                f"to concatenate the workers' batches along), got {cat_results!r}."
            )
        return cat_results

    def __iter__(self) -> Iterator[TensorDictBase | None]:
        workers = torch.arange(self.num_workers)
        while self.total_frames < 0 or self._frames < self.total_frames:
            self._check_open("__iter__")
            for i in range(self.num_workers):
                self._send(i, "collect")
            parts = []
            for i in range(self.num_workers):
                self._wait_any([i])
                parts.append(self._take(i, self._reply(i)))
            self._frames += self.frames_per_batch
            self._iter += 1
            if isinstance(self.cat_results, int):
                dim = self.cat_results
                batch = torch.cat(parts, dim)
                # each frame's policy version and worker, joined as the frames are
                versions = torch.cat(
                    [torch.full(p.batch_size, v) for p, v in zip(parts, self._versions)], dim
                )
                owners = torch.cat([torch.full(p.batch_size, i) for i, p in enumerate(parts)], dim)
                self._label(batch, versions, owners)
                yield self._finish(batch)
                continue
            batch = torch.stack(parts, 0)
            self._label(batch, torch.tensor(self._versions), workers)
            yield self._finish(batch)


MultiSyncCollector = MultiSyncDataCollector

__all__ = ["MultiSyncCollector", "MultiSyncDataCollector"]
