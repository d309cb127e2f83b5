"""rl_collectors.helpers: TorchRL's collector builders of torchrl.trainers.helpers."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest

from rl_collectors import Collector, MultiAsyncCollector, MultiStep, MultiSyncCollector
from rl_collectors.helpers import (
    make_collector_offpolicy,
    make_collector_onpolicy,
    sync_async_collector,
    sync_sync_collector,
)
from rl_core import ExplorationType
from rl_core.testing import CountingEnv


def test_one_collector_runs_in_this_process_with_bound_kwargs():
    collector = sync_sync_collector(
        CountingEnv, {"max_count": 7}, 1, 1, frames_per_batch=4, total_frames=8
    )
    assert type(collector) is Collector
    assert collector.env.max_count == 7
    assert [batch.numel() for batch in collector] == [4, 4]
    collector.shutdown()


def test_torchrl_minus_one_max_frames_per_traj_means_no_limit():
    collector = sync_sync_collector(
        CountingEnv, None, 1, 1, frames_per_batch=2, max_frames_per_traj=-1
    )
    assert collector.max_frames_per_traj is None
    collector.shutdown()


def test_two_collectors_run_in_worker_processes():
    fns = [functools.partial(CountingEnv, 3), functools.partial(CountingEnv, 4)]
    collector = sync_sync_collector(fns, None, num_env_per_collector=1, frames_per_batch=4,
                                    total_frames=8)  # fmt: skip
    try:
        assert type(collector) is MultiSyncCollector
        assert collector.num_workers == 2
        assert sum(batch.numel() for batch in collector) == 8
    finally:
        collector.shutdown()


def test_async_collector():
    collector = sync_async_collector(CountingEnv, None, 1, 1, frames_per_batch=2, total_frames=4)
    try:
        assert type(collector) is MultiAsyncCollector
        assert sum(batch.numel() for batch in collector) == 4
    finally:
        collector.shutdown()


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((CountingEnv, None, 2, 1), {}, ValueError, "2 envs per collector need batched_env"),
        ((CountingEnv, None, None, 1), {}, ValueError, "needs both num_env_per_collector"),
        (([CountingEnv] * 3, None, 1, 2), {}, ValueError, r"num_env_per_collector \* num_coll"),
        (([CountingEnv, 3], None, 1, 2), {}, TypeError, r"env_fns\[1\] is not callable"),
        (("CountingEnv", None, 1, 1), {}, TypeError, "must be an env factory or a list"),
        ((CountingEnv, [{}], 1, 2), {}, ValueError, "env_kwargs must be None, a dict, or one"),
        ((CountingEnv, None, 0, 1), {}, ValueError, "num_env_per_collector must be an int >= 1"),
    ],
)
def test_bad_arguments_are_refused_by_name(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        sync_sync_collector(*args, frames_per_batch=2, **kwargs)


def test_offpolicy_collector_takes_torchrl_settings():
    cfg = {"num_workers": 1, "env_per_collector": 1, "frames_per_batch": 4, "total_frames": 8,
           "init_random_frames": 4, "multi_step": True, "gamma": 0.5, "n_steps_return": 2,
           "max_frames_per_traj": 3, "exploration_type": "deterministic", "seed": 1,
           "collector_device": ["cpu"]}  # fmt: skip
    collector = make_collector_offpolicy(CountingEnv, None, cfg, {"max_count": 10})
    try:
        assert type(collector) is Collector
        assert isinstance(collector.postproc, MultiStep)
        assert (collector.postproc.gamma, collector.postproc.n_steps) == (0.5, 2)
        assert collector.init_random_frames == 4
        assert collector.max_frames_per_traj == 3
        assert collector.split_trajs is True
        assert collector.exploration_type is ExplorationType.DETERMINISTIC
        batches = list(collector)
        assert len(batches) == 2
        assert ("collector", "mask") in batches[0].keys(True)  # split into trajectories
    finally:
        collector.shutdown()


def test_onpolicy_collector_has_no_warmup_nor_multistep():
    cfg = SimpleNamespace(num_workers=1, env_per_collector=1, frames_per_batch=4,
                          total_frames=4, multi_step=True, init_random_frames=100)  # fmt: skip
    collector = make_collector_onpolicy(CountingEnv, None, cfg)
    assert collector.postproc is None
    assert collector.init_random_frames == 0
    collector.shutdown()


def test_workers_over_env_per_collector_make_that_many_collectors():
    cfg = {"num_workers": 3, "env_per_collector": 2, "frames_per_batch": 2, "total_frames": 4,
           "init_random_frames": 0, "async_collection": True}  # fmt: skip
    collector = make_collector_offpolicy(CountingEnv, None, cfg)
    try:
        assert type(collector) is MultiAsyncCollector
        assert collector.num_workers == 2  # ceil(3 / 2)
    finally:
        collector.shutdown()


@pytest.mark.parametrize(
    ("cfg", "error", "match"),
    [
        ({"frames_per_batch": "4"}, TypeError, r"cfg.frames_per_batch must be int, got str"),
        ({"async_collection": "no"}, TypeError, r"cfg.async_collection must be bool"),
        ({"exploration_type": "greedy"}, ValueError, r"cfg.exploration_type must be one of"),
        ({"num_workers": 0}, ValueError, r"cfg.num_workers must be an int >= 1, got 0"),
        ({"collector_device": ["cpu", "cpu"]}, ValueError, "must name one device here"),
    ],
)
def test_bad_settings_are_refused_by_name(cfg, error, match):
    cfg = {"num_workers": 1, "env_per_collector": 1, **cfg}
    with pytest.raises(error, match=match):
        make_collector_offpolicy(CountingEnv, None, cfg)
    with pytest.raises(TypeError, match="make_env must be an env factory"):
        make_collector_onpolicy(None, None, {})


def test_collector_configs_are_torchrl_typed_dataclasses():
    omegaconf = pytest.importorskip("omegaconf", reason='pip install "rl-collectors[hydra]"')
    from rl_collectors.helpers import OffPolicyCollectorConfig, OnPolicyCollectorConfig

    on = OnPolicyCollectorConfig()
    assert (on.collector_device, on.frames_per_batch, on.total_frames, on.num_workers,
            on.env_per_collector, on.seed, on.exploration_type, on.async_collection) == (
        ["cpu"], 1000, 50_000_000, 32, 8, 42, "random", False)  # fmt: skip
    off = OffPolicyCollectorConfig()
    assert (off.multi_step, off.n_steps_return, off.init_random_frames) == (False, 3, 50_000)
    cfg = omegaconf.OmegaConf.structured(
        OffPolicyCollectorConfig(num_workers=1, env_per_collector=1, frames_per_batch=2,
                                 total_frames=4, init_random_frames=2)
    )  # fmt: skip
    collector = make_collector_offpolicy(CountingEnv, None, cfg)
    assert sum(batch.numel() for batch in collector) == 4
    collector.shutdown()
    with pytest.raises(omegaconf.errors.ValidationError, match="num_workers"):
        omegaconf.OmegaConf.merge(cfg, {"num_workers": "two"})
    with pytest.raises(omegaconf.errors.ConfigKeyError, match="num_worker"):
        omegaconf.OmegaConf.merge(cfg, {"num_worker": 2})
