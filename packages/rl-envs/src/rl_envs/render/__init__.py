"""Rendering policies: rollouts to MP4, GIF, PNG frames, arrays, JSON lines or a notebook.

``render_policy(RenderConfig(...))`` (or the ``rl-render`` command) loads a checkpoint, builds
the env and the policy, rolls out and writes the artifact. Writing images needs the ``video``
extra (``pip install "rl-envs[video]"``: pillow for PNG and GIF, PyAV for MP4). TorchRL's
MuJoCo WASM viewer helpers are not built here.
"""

from rl_envs.render.artifacts import write_render_artifact
from rl_envs.render.backends import (
    EnvRenderBackend,
    NullRenderBackend,
    RenderBackend,
    TensorDictPixelsBackend,
)
from rl_envs.render.config import (
    CameraLayout,
    EnvBackendName,
    ExplorationMode,
    FrameBundle,
    NotebookRenderBackendName,
    NotebookRolloutMode,
    RenderBackendName,
    RenderConfig,
    RenderEnvSpec,
    RenderFormat,
    RenderPolicySpec,
    RenderResult,
    key_to_string,
    parse_nested_key,
)
from rl_envs.render.env import add_step_counter, make_render_env, normalize_env, seed_env
from rl_envs.render.loading import (
    call_with_supported_kwargs,
    checkpoint_hash,
    import_from_string,
    infer_state_dict,
    load_checkpoint,
    save_render_checkpoint,
)
from rl_envs.render.notebook import build_notebook, write_render_notebook
from rl_envs.render.policy import TensorDictPolicyAdapter, load_render_policy, normalize_policy
from rl_envs.render.rollout import collect_render_rollouts
from rl_envs.render.run import render_policy
from rl_envs.render.video import (
    compose_frame_grid,
    encode_gif,
    encode_video,
    normalize_frame,
    normalize_frame_output,
    write_png,
)

__all__ = [
    "CameraLayout",
    "EnvBackendName",
    "ExplorationMode",
    "FrameBundle",
    "NotebookRenderBackendName",
    "NotebookRolloutMode",
    "RenderBackendName",
    "RenderConfig",
    "RenderEnvSpec",
    "RenderFormat",
    "RenderPolicySpec",
    "RenderResult",
    "TensorDictPolicyAdapter",
    "RenderBackend",
    "EnvRenderBackend",
    "NullRenderBackend",
    "TensorDictPixelsBackend",
    "add_step_counter",
    "build_notebook",
    "call_with_supported_kwargs",
    "checkpoint_hash",
    "collect_render_rollouts",
    "compose_frame_grid",
    "encode_gif",
    "encode_video",
    "import_from_string",
    "infer_state_dict",
    "key_to_string",
    "load_checkpoint",
    "load_render_policy",
    "make_render_env",
    "normalize_env",
    "normalize_frame",
    "normalize_frame_output",
    "normalize_policy",
    "parse_nested_key",
    "render_policy",
    "save_render_checkpoint",
    "seed_env",
    "write_png",
    "write_render_artifact",
    "write_render_notebook",
]
