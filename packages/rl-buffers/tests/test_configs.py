"""rl-buffers' Hydra configs: typed, they build the buffer they name (storage, sampler and
writer included), and register_configs stores the ``replay_buffer`` group."""

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-buffers[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError
from tensordict import TensorDict

import rl_buffers
from rl_buffers import (
    LazyTensorStorage,
    PrioritizedSampler,
    SamplerEnsemble,
    StorageEnsemble,
    TensorDictReplayBuffer,
    WriterEnsemble,
)
from rl_buffers.configs import (
    REPLAY_BUFFER_CONFIGS,
    SAMPLER_CONFIGS,
    STORAGE_CONFIGS,
    WRITER_CONFIGS,
    PrioritizedReplayBufferConfig,
    PrioritizedSliceSamplerConfig,
    SamplerEnsembleConfig,
    StorageEnsembleConfig,
    TensorDictReplayBufferConfig,
    WriterEnsembleConfig,
    register_configs,
)


def test_builds_a_working_buffer():
    cfg = OmegaConf.merge(
        OmegaConf.structured(TensorDictReplayBufferConfig),
        {"storage": {"max_size": 10}, "batch_size": 4},
    )
    buffer = instantiate(cfg)
    assert isinstance(buffer, TensorDictReplayBuffer)
    assert isinstance(buffer.storage, LazyTensorStorage)
    buffer.extend(TensorDict(x=torch.arange(6.0), batch_size=[6]))
    assert buffer.sample().batch_size == torch.Size([4])
    prioritized = instantiate(OmegaConf.structured(PrioritizedReplayBufferConfig))
    assert isinstance(prioritized.sampler, PrioritizedSampler)


def test_unknown_key_and_wrong_type_fail_naming_the_key():
    cfg = OmegaConf.structured(TensorDictReplayBufferConfig)
    with pytest.raises(ConfigKeyError, match=r"Key 'maxsize' not in 'LazyTensorStorageConfig'"):
        OmegaConf.merge(cfg, {"storage": {"maxsize": 10}})
    with pytest.raises(ValidationError, match=r"(?s)full_key: storage\.max_size"):
        OmegaConf.merge(cfg, {"storage": {"max_size": "big"}})


def test_register_configs_stores_the_replay_buffer_group():
    stored = {}

    class Store:
        def store(self, group=None, name=None, node=None, provider=None):
            stored[(group, name)] = node

    register_configs(Store())
    for name, node in REPLAY_BUFFER_CONFIGS.items():  # stored with a defaults list
        assert issubclass(stored.pop(("replay_buffer", name)), node)
    expected = {}
    for group, options in [
        ("storage", STORAGE_CONFIGS),
        ("sampler", SAMPLER_CONFIGS),
        ("writer", WRITER_CONFIGS),
    ]:
        expected.update({(f"replay_buffer/{group}", n): c for n, c in options.items()})
    assert stored == expected


# What each option needs besides its defaults; the rest build from their defaults alone.
_REQUIRED = {
    "tensor": {"max_size": 8},
    "ensemble_storage": {"storages": [{"_target_": "rl_buffers.ListStorage", "max_size": 4}]},
    "prioritized_slice": {"max_capacity": 8, "alpha": 0.7, "beta": 0.5, "slice_len": 2},
    "streaming_slice": {"slice_len": 2},
    "slice": {"slice_len": 2},
    "slice_without_replacement": {"slice_len": 2},
    "ensemble_sampler": {"samplers": [{"_target_": "rl_buffers.RandomSampler"}]},
    "ensemble_writer": {"writers": [{"_target_": "rl_buffers.RoundRobinWriter"}]},
}
_CLASSES = {
    "StorageEnsembleConfig": StorageEnsemble,
    "SamplerEnsembleConfig": SamplerEnsemble,
    "WriterEnsembleConfig": WriterEnsemble,
}


@pytest.mark.parametrize(
    ("kind", "option"),
    [(k, o) for k, opts in [("storage", STORAGE_CONFIGS), ("sampler", SAMPLER_CONFIGS),
                            ("writer", WRITER_CONFIGS)] for o in opts],
)  # fmt: skip
def test_every_storage_sampler_and_writer_config_builds_its_class(kind, option):
    config = {"storage": STORAGE_CONFIGS, "sampler": SAMPLER_CONFIGS, "writer": WRITER_CONFIGS}
    node = config[kind][option]
    required = _REQUIRED.get(f"{option}_{kind}", _REQUIRED.get(option, {}))
    built = instantiate(OmegaConf.merge(OmegaConf.structured(node), required))
    name = node.__name__.removesuffix("Config")
    assert type(built) is _CLASSES.get(node.__name__, getattr(rl_buffers, name, None))


def test_a_mandatory_field_left_out_is_named():
    cfg = OmegaConf.structured(PrioritizedSliceSamplerConfig)
    assert OmegaConf.missing_keys(cfg) == {"max_capacity", "alpha", "beta"}
    with pytest.raises(Exception, match=r"Missing mandatory value: max_capacity"):
        instantiate(cfg)
    with pytest.raises(ValidationError, match=r"(?s)full_key: alpha"):
        OmegaConf.merge(cfg, {"alpha": "high"})


def test_ensemble_configs_build_the_ensembles_of_their_members():
    storages = instantiate(
        OmegaConf.merge(
            OmegaConf.structured(StorageEnsembleConfig),
            {"storages": [{"_target_": "rl_buffers.ListStorage", "max_size": 3},
                          {"_target_": "rl_buffers.LazyTensorStorage", "max_size": 5}]},
        )
    )  # fmt: skip
    assert [s.max_size for s in (storages[0], storages[1])] == [3, 5]
    samplers = instantiate(
        OmegaConf.merge(
            OmegaConf.structured(SamplerEnsembleConfig),
            {"samplers": [{"_target_": "rl_buffers.RandomSampler"}] * 2, "p": [0.25, 0.75]},
        )
    )
    assert len(samplers) == 2
    writers = instantiate(
        OmegaConf.merge(
            OmegaConf.structured(WriterEnsembleConfig),
            {"writers": [{"_target_": "rl_buffers.RoundRobinWriter"}]},
        )
    )
    assert len(writers) == 1
    with pytest.raises(Exception, match=r"WriterEnsembleConfig\.writers: expected a list"):
        instantiate({"_target_": "rl_buffers.configs.writer_ensemble", "writers": "rr"})


def _compose(*overrides):
    from hydra import compose, initialize
    from hydra.core.config_store import ConfigStore

    register_configs()
    ConfigStore.instance().store(
        name="h51_buffer_test", node={"defaults": [{"replay_buffer": "tensordict"}, "_self_"]}
    )
    with initialize(version_base=None):
        return compose("h51_buffer_test", overrides=list(overrides)).replay_buffer


def test_a_group_override_swaps_the_writer_and_the_max_value_writer_keeps_the_highest():
    cfg = _compose(
        "replay_buffer/writer=tensordict_max_value",
        "replay_buffer.writer.rank_key=score",
        "replay_buffer.storage.max_size=3",
    )
    buffer = instantiate(cfg)
    assert isinstance(buffer.storage, LazyTensorStorage)
    buffer.extend(TensorDict(score=torch.tensor([5.0, 1.0, 7.0, 3.0, 9.0, 0.0]), batch_size=[6]))
    assert sorted(buffer.storage.get(torch.arange(3))["score"].tolist()) == [5.0, 7.0, 9.0]


def test_a_group_override_swaps_the_sampler_and_keeps_its_fields_typed():
    cfg = _compose("replay_buffer/sampler=slice", "replay_buffer.sampler.slice_len=2")
    buffer = instantiate(cfg)
    assert type(buffer.sampler) is rl_buffers.SliceSampler
    with pytest.raises(
        Exception, match=r"Could not override 'replay_buffer\.sampler\.slice_lenght'"
    ):
        _compose("replay_buffer/sampler=slice", "replay_buffer.sampler.slice_lenght=2")
    with pytest.raises(Exception, match=r"replay_buffer\.storage\.max_size=big"):
        _compose("replay_buffer.storage.max_size=big")
