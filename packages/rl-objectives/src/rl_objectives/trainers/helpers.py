"""Builders of the networks an algorithm trainer needs, fitted to an env's specs: the
``make_*`` helpers that rl-train's model configs point at."""

from __future__ import annotations

from typing import Any

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential

from rl_core.envs import EnvBase
from rl_core.keys import ACTION, OBSERVATION
from rl_core.modules import (
    MLP,
    EGreedyModule,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)

_ACTIVATIONS = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "elu": torch.nn.ELU}


def _check(owner: str, env: Any, activation: str) -> type[torch.nn.Module]:
    if not isinstance(env, EnvBase):
        raise TypeError(f"{owner}: env must be an rl-core EnvBase, got {type(env).__name__}.")
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"{owner}: activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}."
        )
    if OBSERVATION not in env.observation_spec.keys():
        raise ValueError(
            f"{owner}: the env has no {OBSERVATION!r} entry in its observation spec (it has "
            f"{sorted(map(str, env.observation_spec.keys()))}); flatten or rename it first."
        )
    return _ACTIVATIONS[activation]


def _policy(env: EnvBase, num_cells: int, depth: int, activation: type) -> ProbabilisticActor:
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    spec = env.action_spec
    n_out = spec.shape[-1]
    if not spec.dtype.is_floating_point:
        net = MLP(obs_dim, n_out, depth=depth, num_cells=num_cells, activation_class=activation)
        body = TensorDictModule(net, [OBSERVATION], ["logits"])
        return ProbabilisticActor(
            body, ["logits"], spec=spec, distribution_class=OneHotCategorical,
            return_log_prob=True,
        )  # fmt: skip
    net = torch.nn.Sequential(
        MLP(obs_dim, 2 * n_out, depth=depth, num_cells=num_cells, activation_class=activation),
        NormalParamExtractor(),
    )
    body = TensorDictModule(net, [OBSERVATION], ["loc", "scale"])
    low = spec.low.reshape(-1, n_out)[0]
    high = spec.high.reshape(-1, n_out)[0]
    return ProbabilisticActor(
        body, ["loc", "scale"], spec=spec, distribution_class=TanhNormal,
        distribution_kwargs={"low": low, "high": high}, return_log_prob=True,
    )  # fmt: skip


def make_ppo_models(
    env: EnvBase, *, num_cells: int = 64, depth: int = 2, activation: str = "tanh"
) -> dict[str, Any]:
    """A stochastic policy fitted to the action space (one-hot categorical for discrete
    actions, tanh-Gaussian over the action box otherwise) and a state-value network, both
    MLPs of ``depth`` hidden layers of ``num_cells``.

    Returns:
        ``{"policy": actor, "actor_network": actor, "critic_network": critic}``: the policy
        the collector runs, and the loss's networks by their argument names.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        ValueError: an unknown activation, or no ``"observation"`` entry.

    Examples:
        >>> from rl_core.testing import CountingEnv
        >>> from rl_objectives.trainers.helpers import make_ppo_models
        >>> models = make_ppo_models(CountingEnv(), num_cells=8)
        >>> print(sorted(models))
        ['actor_network', 'critic_network', 'policy']
    """
    act = _check("make_ppo_models", env, activation)
    actor = _policy(env, num_cells, depth, act)
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    critic = ValueOperator(
        MLP(obs_dim, 1, depth=depth, num_cells=num_cells, activation_class=act), [OBSERVATION]
    )
    return {"policy": actor, "actor_network": actor, "critic_network": critic}


def make_sac_models(
    env: EnvBase, *, num_cells: int = 256, depth: int = 2, activation: str = "relu"
) -> dict[str, Any]:
    """A tanh-Gaussian policy over the action box and a Q-network on ``(observation,
    action)``, both MLPs of ``depth`` hidden layers of ``num_cells``.

    Returns:
        ``{"policy": actor, "actor_network": actor, "qvalue_network": qvalue}``.

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        ValueError: discrete actions (SAC here is continuous), an unknown activation, or no
            ``"observation"`` entry.
    """
    act = _check("make_sac_models", env, activation)
    if not env.action_spec.dtype.is_floating_point:
        raise ValueError(
            f"make_sac_models: SAC needs continuous actions, got a {env.action_spec.dtype} "
            f"action spec; use DiscreteSACLoss with a categorical policy."
        )
    actor = _policy(env, num_cells, depth, act)
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    n_act = env.action_spec.shape[-1]
    qvalue = ValueOperator(
        MLP(obs_dim + n_act, 1, depth=depth, num_cells=num_cells, activation_class=act),
        [OBSERVATION, ACTION],
    )
    return {"policy": actor, "actor_network": actor, "qvalue_network": qvalue}


def make_dqn_models(
    env: EnvBase,
    *,
    num_cells: int = 256,
    depth: int = 2,
    activation: str = "relu",
    eps_init: float = 1.0,
    eps_end: float = 0.05,
    annealing_num_steps: int = 10_000,
) -> dict[str, Any]:
    """A Q-network MLP over the discrete actions (a ``QValueActor``) and an epsilon-greedy
    exploration module after it.

    Returns:
        ``{"policy": actor then exploration, "value_network": actor, "exploration": module}``:
        the collector runs the policy; ``exploration.step(frames)`` anneals epsilon (rl-train
        calls it on every collected batch).

    Raises:
        TypeError: ``env`` is not an ``EnvBase``.
        ValueError: continuous actions, an unknown activation, or no ``"observation"`` entry.
    """
    act = _check("make_dqn_models", env, activation)
    if env.action_spec.dtype.is_floating_point:
        raise ValueError(
            "make_dqn_models: DQN needs discrete actions, got a floating action spec; use a "
            "continuous-control algorithm (SAC) or discretise the actions."
        )
    obs_dim = env.observation_spec[OBSERVATION].shape[-1]
    n_actions = env.action_spec.shape[-1]
    net = MLP(obs_dim, n_actions, depth=depth, num_cells=num_cells, activation_class=act)
    actor = QValueActor(net, in_keys=[OBSERVATION], spec=env.action_spec)
    explore = EGreedyModule(
        env.action_spec, eps_init=eps_init, eps_end=eps_end,
        annealing_num_steps=annealing_num_steps,
    )  # fmt: skip
    policy = TensorDictSequential(actor, explore)
    return {"policy": policy, "value_network": actor, "exploration": explore}
