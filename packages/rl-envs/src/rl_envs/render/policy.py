"""The policy a render run follows: a factory's module, its checkpoint's weights loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase

from rl_core.keys import NestedKey
from rl_envs.render.config import RenderConfig, RenderPolicySpec
from rl_envs.render.loading import call_with_supported_kwargs, import_from_string, infer_state_dict


class TensorDictPolicyAdapter:
    """A plain callable ``observation -> action`` used as a TensorDict policy: reads
    ``obs_key``, writes the result at ``action_key``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_envs.render import TensorDictPolicyAdapter
        >>> policy = TensorDictPolicyAdapter(lambda obs: obs.sum(-1, keepdim=True), "observation", "action")
        >>> policy(TensorDict(observation=torch.ones(2, 3), batch_size=[2]))["action"].squeeze(-1).tolist()
        [3.0, 3.0]
    """

    def __init__(self, policy: Any, obs_key: NestedKey, action_key: NestedKey) -> None:
        if not callable(policy):
            raise TypeError(
                f"TensorDictPolicyAdapter: expected a callable policy, got {type(policy).__name__}."
            )
        self.policy = policy
        self.obs_key = obs_key
        self.action_key = action_key

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = tensordict.get(self.obs_key, None)
        if obs is None:
            raise KeyError(
                f"TensorDictPolicyAdapter: expected the observation at {self.obs_key!r}, got keys "
                f"{sorted(map(str, tensordict.keys(True, True)))}; set obs_key."
            )
        tensordict.set(self.action_key, self.policy(obs))
        return tensordict


def normalize_policy(policy: Any, config: RenderConfig) -> TensorDictPolicyAdapter | Any:
    """A TensorDict policy as it is; a module whose ``forward`` takes a tensor, or a plain
    callable, wrapped in :class:`TensorDictPolicyAdapter` (``obs_key`` -> ``action_key``); a
    module put in eval mode with ``policy_eval``.

    Raises:
        TypeError: ``policy`` is not callable.
    """
    if not callable(policy):
        raise TypeError(
            f"load_render_policy: expected a callable policy, got {type(policy).__name__}."
        )
    if isinstance(policy, torch.nn.Module) and config.policy_eval:
        policy.eval()
    if isinstance(policy, TensorDictModuleBase) or getattr(policy, "in_keys", None) is not None:
        return policy
    return TensorDictPolicyAdapter(policy, config.obs_key, config.action_key)


def load_render_policy(
    config: RenderConfig,
    env: Any | None = None,
    *,
    checkpoint: Any | None = None,
    checkpoint_digest: str | None = None,
) -> Any:
    """The policy of ``config``: its ``policy`` factory (a callable or ``"module:object"``)
    called with the keyword arguments it names among ``env`` (the render env), ``device``,
    ``checkpoint``, ``ckpt_path``, ``env_specs`` (the env's ``full_action_spec``), ``config``
    and ``policy_kwargs`` (or with a :class:`RenderPolicySpec` when it takes one other
    parameter); a module given instead of a factory is used as it is;
    with ``auto_load_policy`` the checkpoint's weights (:func:`infer_state_dict`) are loaded
    into a module policy; then :func:`normalize_policy`. Without a policy, None (the env's
    random policy is rendered).

    Raises:
        KeyError: the checkpoint holds no state dict for a module policy.
    """
    if config.policy is None:
        return None
    source = import_from_string(config.policy) if isinstance(config.policy, str) else config.policy
    device = torch.device(config.device)
    spec = RenderPolicySpec(
        ckpt_path=None if config.ckpt is None else Path(config.ckpt),
        checkpoint=checkpoint,
        checkpoint_hash=checkpoint_digest,
        device=device,
        env_specs=getattr(env, "full_action_spec", None),
        policy_kwargs=dict(config.policy_kwargs),
        config=config,
    )
    if isinstance(source, torch.nn.Module):
        policy = source
    else:
        offered = {
            "env": env,
            "device": device,
            "checkpoint": checkpoint,
            "ckpt_path": spec.ckpt_path,
            "env_specs": spec.env_specs,
            "config": config,
            **spec.policy_kwargs,
        }
        policy = call_with_supported_kwargs(source, spec, offered)
    if isinstance(policy, torch.nn.Module):
        policy = policy.to(device)
        if config.auto_load_policy and checkpoint is not None:
            state = infer_state_dict(checkpoint, config.state_dict_key)
            policy.load_state_dict(state, strict=config.strict_load)
    return normalize_policy(policy, config)
