"""The derived configs of transforms, TransformedEnv and batched envs: each builds its class with
the arguments given, a TransformedEnv of a Compose built from a YAML config passes
check_env_specs, and bad input fails naming the field."""

import hashlib
import math
import textwrap

import pytest

pytest.importorskip("hydra", reason='needs hydra-core: pip install "rl-envs[hydra]"')

import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, MissingMandatoryValue, ValidationError

import rl_core
from rl_core import Compose, InitTracker, StepCounter, TransformedEnv, Unbounded, check_env_specs
from rl_envs import CartPoleEnv, ParallelEnv, SerialEnv
from rl_envs import configs as C
from rl_envs import transforms as T


def _get(path):
    return {"_target_": "hydra.utils.get_object", "path": path}


# Arguments per config (non-default where the class lets us): the class built from the config
# must equal the class built by hand with the same arguments.
ARGS = {
    "Compose": {"transforms": [{"_target_": "rl_core.StepCounter", "max_steps": 3}]},
    "StepCounter": {"max_steps": 7, "truncated_key": "cut", "update_done": False},
    "InitTracker": {"init_key": "first"},
    "TensorDictPrimer": {
        "primers": {"hidden": {"_target_": "rl_core.Unbounded", "shape": [4]}},
        "default_value": 2.0,
    },
    "RenameTransform": {"in_keys": ["observation"], "out_keys": ["obs"], "create_copy": True},
    "SelectTransform": {"include_keys": ["observation"], "keep_dones": False},
    "ExcludeTransform": {"exclude_keys": ["observation", "other"]},
    "ObservationNorm": {"loc": 1.0, "scale": 2.0, "in_keys": ["observation"], "eps": 0.1},
    "VecNorm": {"in_keys": ["observation"], "decay": 0.5, "eps": 0.01},
    "VecNormV2": {"in_keys": ["observation", "reward"], "decay": 0.5, "reduce_batch_dims": True},
    "CatTensors": {"in_keys": ["a", "b"], "out_key": "ab", "dim": -2},
    "BurnInTransform": {
        "modules": [
            {
                "_target_": "rl_core.modules.GRUModule",
                "input_size": 3,
                "hidden_size": 2,
                "in_key": "obs",
                "out_key": "features",
                "recurrent_mode": True,
            }
        ],
        "burn_in": 4,
    },
    "CatFrames": {"N": 4, "dim": -1, "in_keys": ["observation"], "padding": "constant"},
    "UnsqueezeTransform": {"dim": -1, "in_keys": ["observation"]},
    "SqueezeTransform": {"dim": -1, "in_keys": ["observation"]},
    "FlattenObservation": {"first_dim": -2, "last_dim": -1, "in_keys": ["pixels"]},
    "PermuteTransform": {"dims": [-1, -3, -2], "in_keys": ["pixels"]},
    "ClipTransform": {"in_keys": ["observation"], "low": -1.0, "high": 2.0},
    "SignTransform": {"in_keys": ["reward"]},
    "DTypeCastTransform": {
        "dtype_in": _get("torch.float64"),
        "dtype_out": _get("torch.float32"),
        "in_keys": ["observation"],
    },
    "DoubleToFloat": {"in_keys": ["observation"]},
    "DeviceCastTransform": {"device": "cpu", "in_keys": ["observation"]},
    "Stack": {"in_keys": ["a", "b"], "out_key": "ab", "dim": -2},
    "Hash": {"in_keys": ["text"], "out_keys": ["hash"], "use_raw_nontensor": True},
    "NextObservationDelta": {"in_keys": ["observation"], "drop_delta": False},
    "ExpandAs": {"in_key": "reward", "ref_key": "observation", "out_key": "wide"},
    "ToTensorImage": {"in_keys": ["image"]},
    "Resize": {"w": 20, "h": 10, "interpolation": "nearest"},
    "CenterCrop": {"w": 12, "h": 8},
    "Crop": {"w": 12, "h": 8, "top": 2, "left": 3},
    "GrayScale": {"in_keys": ["image"]},
    "RewardScaling": {"loc": 0.5, "scale": 3.0, "standard_normal": True},
    "RewardClipping": {"clamp_min": -1.0, "clamp_max": 1.0},
    "Reward2GoTransform": {"gamma": 0.9, "in_keys": ["reward"], "out_keys": ["r2g"]},
    "RNDTransform": {
        "target_network": {"_target_": "torch.nn.Linear", "in_features": 3, "out_features": 2},
        "predictor_network": {"_target_": "torch.nn.Linear", "in_features": 3, "out_features": 2},
        "in_keys": ["observation"],
        "obs_clip": 3.0,
    },
    "TrajCounter": {"out_key": "traj"},
    "UnaryTransform": {"in_keys": ["observation"], "out_keys": ["neg"], "fn": _get("torch.neg")},
    "ModuleTransform": {
        "module": {
            "_target_": "tensordict.nn.TensorDictModule",
            "module": {"_target_": "torch.nn.Linear", "in_features": 1, "out_features": 1},
            "in_keys": ["observation"],
            "out_keys": ["lin"],
        },
        "no_grad": True,
    },
    "ConditionalPolicySwitch": {"policy": _get("torch.clone"), "condition": _get("torch.any")},
    "PolicyAgeFilter": {"current_version": 3, "max_policy_lag": 1, "strict": True},
    "R3MTransform": {"model_name": "resnet18", "size": 32, "stack_images": False},
    "VIPTransform": {"model_name": "resnet50", "size": 32},
    "VC1Transform": {"in_keys": ["image"], "out_keys": ["embedding"], "del_keys": False},
    "DecodeVideoTransform": {"in_keys": ["frame"], "out_keys": ["pixels"]},
    "TensorDictRecorder": {"out_file_base": "run", "skip": 2, "in_keys": ["observation"]},
    "VIPRewardTransform": {"model_name": "resnet50", "size": 32},
    "BinarizeReward": {"in_keys": ["reward"]},
    "LineariseRewards": {"in_keys": ["reward"], "weights": [1.0, 2.0]},
    "TargetReturn": {"target_return": 10.0, "mode": "constant"},
    "ActionScaling": {"loc": 1.0, "scale": 2.0, "standard_normal": False},
    "ActionMask": {"mask_key": "mask"},
    "ActionDiscretizer": {"num_intervals": 5, "categorical": False},
    "FlattenAction": {"first_dim": -3, "last_dim": -1},
    "FrameSkipTransform": {"frame_skip": 3},
    "MultiAction": {"dim": 2, "stack_observations": True},
    "ActionChunkTransform": {"chunk_size": 4, "time_dim": -3},
    "ConditionalSkip": {"cond": _get("torch.is_tensor")},
    "DiscreteActionProjection": {"num_actions_effective": 3, "max_actions": 5},
    "RewardSum": {"in_keys": ["reward"], "out_keys": ["ret"]},
    "NoopResetEnv": {"noops": 5, "random": False},
    "AutoResetTransform": {"fill_int": -2, "fill_bool": True},
    "BatchSizeTransform": {"batch_size": [2, 3]},
    "EndOfLifeTransform": {"eol_key": "eol"},
    "TimeMaxPool": {"in_keys": ["observation"], "T": 3},
    "TerminateTransform": {"stop": _get("torch.is_tensor"), "write_done": False},
    "RandomTruncationTransform": {"min_horizon": 2, "max_horizon": 5, "prob": 0.5},
    "Timer": {"time_key": "clock"},
    "MultiStepTransform": {"n_steps": 3, "gamma": 0.9},
    "RandomCropTensorDict": {"sub_seq_len": 4, "sample_dim": -2},
    "NextStateReconstructor": {"strict": False},
    "VideoRecorder": {"tag": "clip", "skip": 2, "fps": 10},
    "PixelRenderTransform": {"out_keys": ["frame"]},
}
# Positional (*args) classes take TorchRL's list field: built by hand with the list unpacked.
VARARGS = {
    "Compose": "transforms",
    "SelectTransform": "include_keys",
    "ExcludeTransform": "exclude_keys",
}


def _by_hand(name):
    """The class built directly from ARGS (nested configs instantiated)."""
    cls = (
        getattr(rl_core, name, None)
        if name in C.TRANSFORM_CONFIGS and hasattr(rl_core, name)
        else None
    )
    cls = cls or getattr(T, name)
    kwargs = instantiate(OmegaConf.create(ARGS.get(name, {})), _convert_="all")
    if name in VARARGS:
        return cls(*kwargs.pop(VARARGS[name]), **kwargs)
    return cls(**kwargs)


def _digest(tensor):
    """A tensor's shape, dtype and bytes, hashed: equal iff the tensors are (a ResNet-50's
    state as Python lists took half a minute per build)."""
    raw = tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return tuple(tensor.shape), tensor.dtype, hashlib.sha256(raw).hexdigest()


def _state(obj):
    """What a transform keeps of its arguments: plain attributes and buffers."""
    plain = (bool, int, float, str, tuple, list, type(None), torch.dtype, torch.device)
    out = {k: v for k, v in vars(obj).items() if isinstance(v, plain) and not k.startswith("__")}
    for k in ("in_keys", "out_keys", "in_keys_inv", "out_keys_inv"):
        out[k] = getattr(obj, k, None)
    out = {k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}
    buffers = (
        {k: _digest(v) for k, v in obj.state_dict().items()} if hasattr(obj, "state_dict") else {}
    )
    return out, buffers, [type(m).__name__ for m in getattr(obj, "transforms", [])]


def test_every_transform_of_both_catalogues_has_a_config():
    core = {"Compose", "StepCounter", "InitTracker", "TensorDictPrimer"}
    catalogue = {
        n
        for n in T.__all__
        if isinstance(getattr(T, n), type) and issubclass(getattr(T, n), rl_core.Transform)
    }
    assert set(C.TRANSFORM_CONFIGS) == core | catalogue
    assert all(cfg.__name__ == f"{n}Config" for n, cfg in C.TRANSFORM_CONFIGS.items())
    assert C.StepCounterConfig is C.TRANSFORM_CONFIGS["StepCounter"]  # a module attribute too


@pytest.mark.parametrize("name", sorted(C.TRANSFORM_CONFIGS))
def test_a_transform_config_builds_its_class_with_the_arguments(name):
    cfg = OmegaConf.merge(OmegaConf.structured(C.TRANSFORM_CONFIGS[name]), ARGS.get(name, {}))
    torch.manual_seed(0)
    built = instantiate(cfg)
    torch.manual_seed(0)
    expected = _by_hand(name)
    assert type(built) is type(expected)
    assert _state(built) == _state(expected)


def test_given_arguments_reach_the_object():
    counter = instantiate(C.StepCounterConfig(max_steps=7, truncated_key="cut"))
    assert (counter.max_steps, counter.truncated_key) == (7, "cut")
    compose = instantiate(OmegaConf.merge(OmegaConf.structured(C.ComposeConfig), ARGS["Compose"]))
    assert isinstance(compose, Compose)
    assert compose[0].max_steps == 3
    primer = instantiate(
        OmegaConf.merge(OmegaConf.structured(C.TensorDictPrimerConfig), ARGS["TensorDictPrimer"])
    )
    assert primer.primers["hidden"] == Unbounded(shape=(4,))


def test_a_transformed_env_of_a_yaml_compose_passes_check_env_specs():
    yaml = textwrap.dedent(
        """
        _target_: rl_envs.configs.transformed_env
        base_env:
          _target_: rl_envs.CartPoleEnv
          batch_size: [2]
        transform:
          _target_: rl_envs.configs.compose
          transforms:
            - {_target_: rl_core.StepCounter, max_steps: 5}
            - {_target_: rl_core.InitTracker}
            - {_target_: rl_envs.transforms.RewardSum}
            - {_target_: rl_envs.transforms.ObservationNorm, loc: 0.0, scale: 2.0,
               in_keys: [observation]}
        """
    )
    cfg = OmegaConf.merge(OmegaConf.structured(C.TransformedEnvConfig), OmegaConf.create(yaml))
    env = instantiate(cfg)
    assert isinstance(env, TransformedEnv)
    assert isinstance(env.base_env, CartPoleEnv)
    assert [type(t) for t in env.transform] == [
        StepCounter,
        InitTracker,
        T.RewardSum,
        T.ObservationNorm,
    ]
    check_env_specs(env)
    rollout = env.rollout(20, break_when_any_done=False)
    assert rollout["next", "step_count"].max().item() == 5  # StepCounter truncates at 5


def test_batched_env_configs_build_serial_and_parallel_envs():
    make = {"_target_": "rl_envs.CartPoleEnv", "_partial_": True}
    serial = instantiate(
        OmegaConf.merge(
            OmegaConf.structured(C.SerialEnvConfig), {"num_workers": 2, "create_env_fn": make}
        )
    )
    assert isinstance(serial, SerialEnv)
    assert tuple(serial.batch_size) == (2,)
    batched = instantiate(
        OmegaConf.merge(
            OmegaConf.structured(C.BatchedEnvConfig),
            {"create_env_fn": make, "num_workers": 3, "batched_env_type": "serial"},
        )
    )
    assert isinstance(batched, SerialEnv)
    assert tuple(batched.batch_size) == (3,)
    check_env_specs(batched)
    parallel = instantiate(
        OmegaConf.merge(
            OmegaConf.structured(C.ParallelEnvConfig), {"num_workers": 2, "create_env_fn": make}
        )
    )
    try:
        assert isinstance(parallel, ParallelEnv)
        assert parallel.rollout(3)["next", "reward"].shape == (2, 3, 1)
    finally:
        parallel.close()


def test_bad_input_fails_naming_the_field():
    with pytest.raises(ConfigKeyError, match=r"Key 'max_step' not in 'StepCounterConfig'"):
        OmegaConf.merge(OmegaConf.structured(C.StepCounterConfig), {"max_step": 3})
    with pytest.raises(
        ValidationError, match=r"(?s)could not be converted to Integer.*full_key: N"
    ):
        OmegaConf.merge(OmegaConf.structured(C.CatFramesConfig), {"N": "four"})
    with pytest.raises(MissingMandatoryValue, match=r"N"):
        instantiate(OmegaConf.structured(C.CatFramesConfig))
    with pytest.raises(TypeError, match=r"BatchedEnvConfig.create_env_fn: expected a callable"):
        C.batched_env(CartPoleEnv(), num_workers=2)
    with pytest.raises(
        ValueError, match=r"batched_env_type: expected 'serial' or 'parallel', got 'async'"
    ):
        C.batched_env(CartPoleEnv, batched_env_type="async")
    with pytest.raises(TypeError, match=r"TransformedEnvConfig.base_env: expected an env"):
        C.transformed_env({"env_name": "CartPole-v1"})
