"""rl_buffers.helpers.make_replay_buffer: TorchRL's builder from a settings object."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict

from rl_buffers import LazyMemmapStorage, PrioritizedSampler, RandomSampler, TensorDictReplayBuffer
from rl_buffers.helpers import _DEFAULTS, make_replay_buffer


def _data(n: int) -> TensorDict:
    return TensorDict(obs=torch.arange(float(n))[:, None], batch_size=[n])


def test_uniform_buffer_on_memmap_storage_in_scratch_dir(tmp_path):
    cfg = {"buffer_size": 8, "batch_size": 3, "buffer_prefetch": 0, "buffer_scratch_dir": tmp_path}
    rb = make_replay_buffer("cpu", cfg)
    assert isinstance(rb, TensorDictReplayBuffer)
    assert isinstance(rb.sampler, RandomSampler)
    assert isinstance(rb.storage, LazyMemmapStorage)
    assert rb.storage.max_size == 8
    rb.extend(_data(10))
    assert len(rb) == 8  # a ring of buffer_size items
    assert rb.sample().shape == torch.Size([3])
    assert any(tmp_path.rglob("*")), "the storage is memory-mapped under buffer_scratch_dir"


def test_prioritized_buffer_takes_torchrl_exponents(tmp_path):
    cfg = SimpleNamespace(buffer_size=16, batch_size=4, prb=True, buffer_prefetch=0,
                          buffer_scratch_dir=str(tmp_path))  # fmt: skip
    rb = make_replay_buffer(torch.device("cpu"), cfg)
    assert isinstance(rb.sampler, PrioritizedSampler)
    assert (rb.sampler.max_capacity, rb.sampler.alpha, rb.sampler.beta) == (16, 0.7, 0.5)
    rb.extend(_data(4))
    rb.update_priority(torch.arange(4), torch.tensor([0.0, 0.0, 0.0, 5.0]))
    # alpha=0.7 on a priority of 5 against 1e-8: item 3 is all but always drawn
    assert (rb.sample()["obs"].squeeze(-1) == 3).all()


def test_prefetching_buffer_samples(tmp_path):
    rb = make_replay_buffer("cpu", {"batch_size": 2, "buffer_size": 4, "buffer_prefetch": 2,
                                    "buffer_scratch_dir": tmp_path})  # fmt: skip
    rb.extend(_data(4))
    assert [rb.sample().shape for _ in range(3)] == [torch.Size([2])] * 3


def test_defaults_are_torchrl_replay_args():
    assert _DEFAULTS == {"buffer_size": 1_000_000, "prb": False,
                               "buffer_scratch_dir": None, "buffer_prefetch": 10,
                               "batch_size": None}  # fmt: skip


def test_batch_size_is_required():
    with pytest.raises(KeyError, match="make_replay_buffer: cfg has no 'batch_size'"):
        make_replay_buffer("cpu", {"buffer_size": 4})


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"batch_size": "4"}, r"cfg.batch_size must be int, got str \('4'\)"),
        ({"batch_size": 4, "prb": "yes"}, r"cfg.prb must be bool, got str"),
        ({"batch_size": True}, r"cfg.batch_size must be int, got a bool"),
        ({"batch_size": 4, "buffer_scratch_dir": 3}, r"cfg.buffer_scratch_dir must be str or"),
    ],
)
def test_wrong_type_names_the_setting(cfg, match):
    with pytest.raises(TypeError, match=match):
        make_replay_buffer("cpu", cfg)


@pytest.mark.parametrize(
    ("cfg", "match"),
    [
        ({"batch_size": 0}, r"cfg.batch_size must be >= 1, got 0"),
        ({"batch_size": 2, "buffer_size": 0}, r"cfg.buffer_size must be >= 1, got 0"),
        ({"batch_size": 2, "buffer_prefetch": -1}, r"cfg.buffer_prefetch must be >= 0, got -1"),
    ],
)
def test_bad_values_are_refused(cfg, match):
    with pytest.raises(ValueError, match=match):
        make_replay_buffer("cpu", cfg)


def test_bad_device_is_refused():
    with pytest.raises(TypeError, match="make_replay_buffer: device must be"):
        make_replay_buffer(object(), {"batch_size": 2})


def test_replay_args_config_is_typed_and_feeds_the_builder(tmp_path):
    omegaconf = pytest.importorskip("omegaconf", reason='pip install "rl-buffers[hydra]"')
    from dataclasses import dataclass

    from rl_buffers.helpers import ReplayArgsConfig

    assert ReplayArgsConfig() == ReplayArgsConfig(1_000_000, False, None, 10)  # TorchRL's

    @dataclass
    class RunConfig(ReplayArgsConfig):
        batch_size: int = 2

    cfg = omegaconf.OmegaConf.structured(
        RunConfig(buffer_size=6, buffer_prefetch=0, buffer_scratch_dir=str(tmp_path))
    )
    rb = make_replay_buffer("cpu", cfg)
    assert rb.storage.max_size == 6
    with pytest.raises(omegaconf.errors.ValidationError, match="prb"):
        omegaconf.OmegaConf.merge(omegaconf.OmegaConf.structured(ReplayArgsConfig), {"prb": "x"})
    with pytest.raises(omegaconf.errors.ConfigKeyError, match="buffer_sise"):
        omegaconf.OmegaConf.merge(
            omegaconf.OmegaConf.structured(ReplayArgsConfig), {"buffer_sise": 3}
        )
