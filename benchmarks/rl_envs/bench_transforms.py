"""The cost of transforms: transformed envs against the bare env, stepped the same way.

Three comparisons, each a ratio measured in this process (best of ``REPEATS`` runs, CPU time
of this process with ``time.process_time``; the runs of the reference and of the transformed
env alternate, so that a change of the machine's load hits both alike):

1. ``TransformedEnv(GymEnv("CartPole-v1"), Compose(ObservationNorm, RewardSum, StepCounter))``
   against ``GymEnv("CartPole-v1")``, both stepped by ``rollout`` with a policy writing a
   fixed action (the step-by-step loop every policy takes). Target: at most 1.5x.
2. The Atari pipeline (``ToTensorImage``, ``GrayScale``, ``Resize(84, 84)``, ``CatFrames(4)``,
   ``RewardClipping``, ``NoopResetEnv``, ``StepCounter``) on ``ALE/Pong-v5`` against the bare
   Pong env, the same way: the cost per step is reported.
3. The first comparison again with a policy network instead of the fixed action: the
   discrete actor of ``examples/ppo.py`` (a ``ProbabilisticActor`` over a two-layer tanh
   ``MLP`` of 64 cells, ``OneHotCategorical``), sampling as collectors do
   (``ExplorationType.RANDOM``), one instance for both envs, so both loops pay the same
   policy: the ratio of a training rollout.
4. The first comparison with two more transforms, ``InitTracker`` and ``RewardScaling``
   (a recurrent policy's flag and a scaled reward), stepped the same way: the numpy-row
   lane and the fused step-and-reset serve them too.
5. Rollouts without a policy: the bare GymEnv hands them to its gymnasium loop
   (its step plan's ``random_rollout``); the TransformedEnv's plan runs that loop too and then replays its
   transforms step by step on the trajectory (they are ``fusable``), still one TensorDict
   step at a time for the transforms. The ratio says how much that costs.

With a policy, CartPole under these three transforms steps through the base env's fused
step-and-reset (the transforms are ``fusable``); the empty ``Compose`` line is the wrapper's
own cost.

Run: ``uv run python benchmarks/rl_envs/bench_transforms.py``
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
from tensordict.nn import TensorDictModule

from rl_core import (
    Compose,
    EnvBase,
    ExplorationType,
    StepCounter,
    TransformedEnv,
    set_exploration_type,
)
from rl_core.modules import MLP, OneHotCategorical, ProbabilisticActor
from rl_core.transforms import InitTracker
from rl_envs import (
    CatFrames,
    GrayScale,
    GymEnv,
    NoopResetEnv,
    ObservationNorm,
    Resize,
    RewardClipping,
    RewardScaling,
    ToTensorImage,
)
from rl_envs.transforms import RewardSum

CARTPOLE_STEPS = 5_000
PONG_STEPS = 400
REPEATS = 5


def cartpole() -> EnvBase:
    return GymEnv("CartPole-v1")


def cartpole_transformed() -> EnvBase:
    norm = ObservationNorm(loc=torch.zeros(4), scale=torch.ones(4), standard_normal=True)
    return TransformedEnv(GymEnv("CartPole-v1"), Compose(norm, RewardSum(), StepCounter()))


def cartpole_five() -> EnvBase:
    norm = ObservationNorm(loc=torch.zeros(4), scale=torch.ones(4), standard_normal=True)
    return TransformedEnv(
        GymEnv("CartPole-v1"),
        Compose(norm, RewardSum(), StepCounter(), InitTracker(), RewardScaling(0.0, 0.1)),
    )


def cartpole_empty() -> EnvBase:
    return TransformedEnv(GymEnv("CartPole-v1"), Compose())


def pong() -> EnvBase:
    return GymEnv("ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0)


def pong_transformed() -> EnvBase:
    obs = ["observation"]
    return TransformedEnv(
        pong(),
        Compose(
            NoopResetEnv(30),
            ToTensorImage(in_keys=obs),
            GrayScale(in_keys=obs),
            Resize(84, 84, in_keys=obs),
            CatFrames(4, -3, in_keys=obs),
            RewardClipping(-1.0, 1.0),
            StepCounter(),
        ),
    )


def ppo_actor(env: EnvBase) -> ProbabilisticActor:
    """The discrete actor of ``examples/ppo.py`` (64 cells) for ``env``."""
    torch.manual_seed(0)
    obs_dim = env.observation_spec["observation"].shape[-1]
    net = MLP(
        obs_dim, env.action_spec.shape[-1], depth=2, num_cells=64, activation_class=torch.nn.Tanh
    )
    return ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["logits"]),
        ["logits"],
        spec=env.action_spec,
        distribution_class=OneHotCategorical,
        return_log_prob=True,
    )


def timed(
    make: Callable[[], EnvBase], steps: int, *, policy: bool | Callable[..., object]
) -> float:
    """CPU seconds per step of ``env.rollout``: ``policy`` True writes one fixed action,
    False takes random actions (no policy), a callable is the policy."""
    env = make()
    env.set_seed(0)
    torch.manual_seed(0)
    action = env.action_spec.rand()  # one fixed valid action (a one-hot of zeros is invalid)
    fn = None
    if callable(policy):
        fn = policy
    elif policy:
        fn = lambda td: td.set("action", action)  # noqa: E731
    env.rollout(10, fn, break_when_any_done=False)  # warm-up: specs, caches
    start = time.process_time()
    env.rollout(steps, fn, break_when_any_done=False)
    elapsed = time.process_time() - start
    env.close()
    return elapsed / steps


def best_pair(
    reference: Callable[[], EnvBase],
    ours: Callable[[], EnvBase],
    steps: int,
    *,
    policy: bool | Callable[..., object],
) -> tuple[float, float]:
    """Best of ``REPEATS`` runs of each, the runs of the two alternating."""
    ref, out = [], []
    for _ in range(REPEATS):
        ref.append(timed(reference, steps, policy=policy))
        out.append(timed(ours, steps, policy=policy))
    return min(ref), min(out)


def line(name: str, ref: float, ours: float) -> None:
    print(
        f"{name:<58} reference {ref * 1e6:8.1f} us/step   ours {ours * 1e6:8.1f} us/step"
        f"   ratio {ours / ref:5.2f}x"
    )


def main() -> None:
    torch.set_num_threads(1)
    ref, ours = best_pair(cartpole, cartpole_transformed, CARTPOLE_STEPS, policy=True)
    line("CartPole + (ObservationNorm, RewardSum, StepCounter), policy", ref, ours)
    actor = ppo_actor(cartpole())
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        ref, ours = best_pair(cartpole, cartpole_transformed, CARTPOLE_STEPS, policy=actor)
    line("CartPole + (ObservationNorm, RewardSum, StepCounter), PPO actor", ref, ours)
    ref, empty = best_pair(cartpole, cartpole_empty, CARTPOLE_STEPS, policy=True)
    line("CartPole + empty Compose (TransformedEnv alone), policy", ref, empty)
    ref, ours = best_pair(cartpole, cartpole_five, CARTPOLE_STEPS, policy=True)
    line("CartPole + the three, InitTracker, RewardScaling, policy", ref, ours)
    ref, ours = best_pair(pong, pong_transformed, PONG_STEPS, policy=True)
    line("Pong + Atari pipeline, policy", ref, ours)
    ref, ours = best_pair(cartpole, cartpole_transformed, CARTPOLE_STEPS, policy=False)
    line("CartPole + (ObservationNorm, RewardSum, StepCounter), no policy", ref, ours)


if __name__ == "__main__":
    main()
