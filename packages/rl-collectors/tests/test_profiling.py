import json
from functools import partial

import pytest

from rl_collectors import MultiSyncDataCollector, ProfileConfig, SyncDataCollector
from rl_core.testing import CountingEnv


def rollout_ranges(path):
    events = json.loads(path.read_text())["traceEvents"]
    return [e for e in events if e.get("name") == "collector_rollout"]


def test_sync_collector_profiles_the_chosen_rollouts(tmp_path):
    traces = []
    collector = SyncDataCollector(CountingEnv(batch_size=[2]), None, frames_per_batch=4)
    collector.next()  # before enable_profile: not profiled
    config = collector.enable_profile(
        num_rollouts=3,
        warmup_rollouts=1,
        save_path=tmp_path / "trace.json",
        on_trace_ready=traces.append,
    )
    assert isinstance(config, ProfileConfig)
    collector.next()
    collector.next()
    assert not (tmp_path / "trace.json").exists()  # the profile is not over yet
    collector.next()
    # The warm-up rollout is not recorded: two rollout ranges in the trace.
    assert len(rollout_ranges(tmp_path / "trace.json")) == 2
    assert len(traces) == 1
    (tmp_path / "trace.json").unlink()
    collector.next()  # the profile is over: no new trace
    assert not (tmp_path / "trace.json").exists()
    assert len(traces) == 1
    collector.shutdown()


def test_multi_collector_profiles_only_the_chosen_workers(tmp_path):
    make = partial(CountingEnv, batch_size=[2])
    collector = MultiSyncDataCollector([make, make, make], None, frames_per_batch=12)
    try:
        collector.enable_profile(
            workers=[0, 2],
            num_rollouts=1,
            warmup_rollouts=0,
            save_path=tmp_path / "trace.json",
        )
        collector.next()
        written = sorted(p.name for p in tmp_path.iterdir())
        assert written == ["trace_worker0.json", "trace_worker2.json"]
        assert len(rollout_ranges(tmp_path / "trace_worker2.json")) == 1
        with pytest.raises(ValueError, match=r"worker indices below 3, got \[3\]"):
            collector.enable_profile(workers=[3])
    finally:
        collector.shutdown()


def test_config_checks_and_paths():
    assert ProfileConfig().workers == [0]
    assert str(ProfileConfig(save_path="p{worker_idx}.json").trace_path(4)) == "p4.json"
    assert str(ProfileConfig(save_path="out/t.json").trace_path(0)) == "out/t.json"
    assert ProfileConfig().trace_path(0) is None
    with pytest.raises(ValueError, match="warmup_rollouts as an int in"):
        ProfileConfig(num_rollouts=2, warmup_rollouts=2)
    with pytest.raises(ValueError, match="num_rollouts as an int >= 1"):
        ProfileConfig(num_rollouts=0)
    with pytest.raises(ValueError, match="unknown activities"):
        ProfileConfig(activities=["tpu"])
    with pytest.raises(ValueError, match="workers as a list of ints"):
        ProfileConfig(workers=[-1])
