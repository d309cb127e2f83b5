"""Where the hand-written loop's time goes: a ladder from gymnasium to ``GymEnv``'s loop.

Every rung steps one ``CartPole-v1`` as the plain loop does and adds one piece of the work a
``GymEnv`` step does, written out with numpy and torch (no rl-* code) up to the last plain rung;
then the loops themselves (issue 57). All rungs run in one process, alternately, block by
block (CPU time of the process, one torch thread); each figure is the median over the repeats
of microseconds per step, with its ratio to the plain loop of the same repeat.

Rungs:

- ``plain``: gymnasium with ``action_space.sample()`` per step, reset when done (the suite's
  reference for the hand-written loops);
- ``fixed action``: the same stepping one fixed action (no sampling);
- ``+ one torch draw``: one ``index.random_(0, 2)`` per step (the kernel of ``torch.randint``:
  what ``rand_action`` must draw to give ``OneHot.rand``'s values and random state, with the
  cheapest call that does);
- ``+ 6 tensor views``: the step's outputs as tensors: the numpy row writes and one tensor
  view each for the action, observation, reward and three done flags, cut from blocks of 64
  rows in one ``unbind`` per block (how ``GymEnv`` hands them out);
- ``+ 2 TensorDicts``: the ``"next"`` TensorDict and the next root, built without checks
  (``rl_core._accel.td_access.build_tensordict``, a dict copy and an object each);
- ``GymEnv: fixed action + step_and_maybe_reset``, ``GymEnv: rand_action +
  step_and_maybe_reset``, ``GymEnv: rand_action + step + step_mdp``: the loops;
- ``fixed action + td["next", "done"].any()``: the user's own done test of the ``step_mdp``
  loop, on a TensorDict like the one ``env.step`` returns, next to a gymnasium step.

Run: ``uv run python benchmarks/rl_envs/bench_loop_split.py [--steps 10000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from rl_core._accel.td_access import build_tensordict
from rl_core.ted import step_mdp
from rl_envs import GymEnv

ROWS = 64


def _gym(seed: int = 0) -> gym.Env:
    env = gym.make("CartPole-v1")
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


def rung(steps: int, *, sample: bool, draw: bool, views: bool, tds: bool) -> Callable[[], float]:
    """One rung of the ladder (see the module docstring): seconds per step."""
    env = _gym()
    index = torch.empty(1, dtype=torch.int64)
    index_np = index.numpy()
    index_np[0] = 1
    actions = np.arange(2, dtype=np.int64)
    size = torch.Size([])

    def run() -> float:
        space = env.action_space
        row = ROWS
        blocks: tuple = ()
        cut: tuple = ()
        root: dict = {}
        start = time.process_time()
        for _ in range(steps):
            if draw:
                index.random_(0, 2)
            k = int(index_np[0])
            obs, reward, terminated, truncated, _ = env.step(
                space.sample() if sample else actions[k]
            )
            done = terminated or truncated
            if views:
                if row == ROWS:
                    blocks = (
                        np.zeros((ROWS, 2), np.float32),
                        np.zeros((ROWS, 4), np.float32),
                        np.zeros((ROWS, 1), np.float32),
                        np.zeros((3, ROWS, 1), np.bool_),
                    )
                    flags = torch.from_numpy(blocks[3])
                    cut = (
                        *(torch.from_numpy(b).unbind(0) for b in blocks[:3]),
                        *(f.unbind(0) for f in flags.unbind(0)),
                    )
                    row = 0
                i, row = row, row + 1
                act_b, obs_b, rew_b, flag_b = blocks
                act_b[i, k] = 1
                obs_b[i] = obs
                rew_b[i] = reward
                flag_b[0, i], flag_b[1, i], flag_b[2, i] = done, terminated, truncated
                a_t, o_t, r_t, d_t, te_t, tr_t = (c[i] for c in cut)
                if tds:
                    root["action"] = a_t
                    nxt = {"observation": o_t, "reward": r_t}
                    nxt.update(done=d_t, terminated=te_t, truncated=tr_t)
                    root["next"] = build_tensordict(nxt, size)
                    root = {"observation": o_t, "done": d_t, "terminated": te_t}
                    root["truncated"] = tr_t
                    build_tensordict(root, size)
            if done:
                env.reset()
        return (time.process_time() - start) / steps

    return run


def ours(steps: int, kind: str) -> Callable[[], float]:
    """The loops through ``GymEnv``: seconds per step."""
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    action = env.action_spec.encode(1)
    state = {"td": env.reset()}

    def run() -> float:
        td = state["td"]
        start = time.process_time()
        if kind == "fixed":
            for _ in range(steps):
                td["action"] = action
                _, td = env.step_and_maybe_reset(td)
        elif kind == "rand":
            for _ in range(steps):
                td = env.rand_action(td)
                _, td = env.step_and_maybe_reset(td)
        else:
            for _ in range(steps):
                td = env.step(env.rand_action(td))
                td = env.reset() if td["next", "done"].any() else step_mdp(td)
        state["td"] = td
        return (time.process_time() - start) / steps

    return run


def done_test(steps: int) -> Callable[[], float]:
    """A gymnasium step with a fixed action and the user's ``td["next", "done"].any()``."""
    env = _gym()
    genv = GymEnv("CartPole-v1")
    td = genv.rand_step(genv.reset())

    def run() -> float:
        start = time.process_time()
        for _ in range(steps):
            _, _, terminated, truncated, _ = env.step(1)
            td["next", "done"].any()
            if terminated or truncated:
                env.reset()
        return (time.process_time() - start) / steps

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10_000, help="steps per block")
    parser.add_argument("--repeats", type=int, default=5, help="blocks per rung")
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = args.steps
    rungs = {
        "plain (action_space.sample())": rung(n, sample=True, draw=False, views=False, tds=False),
        "fixed action": rung(n, sample=False, draw=False, views=False, tds=False),
        "+ one torch draw": rung(n, sample=False, draw=True, views=False, tds=False),
        "+ 6 tensor views": rung(n, sample=False, draw=True, views=True, tds=False),
        "+ 2 TensorDicts": rung(n, sample=False, draw=True, views=True, tds=True),
        "GymEnv: fixed action + step_and_maybe_reset": ours(n, "fixed"),
        "GymEnv: rand_action + step_and_maybe_reset": ours(n, "rand"),
        "GymEnv: rand_action + step + step_mdp": ours(n, "mdp"),
        'fixed action + td["next", "done"].any()': done_test(n),
    }
    for run in rungs.values():
        run()  # warm up
    samples: dict[str, list[float]] = {name: [] for name in rungs}
    load = os.getloadavg()[0]
    for _ in range(args.repeats):
        for name, run in rungs.items():
            samples[name].append(run() * 1e6)
    reference = samples["plain (action_space.sample())"]
    print(
        f"load average {load:.2f} -> {os.getloadavg()[0]:.2f}; us per step, median of {args.repeats}"
    )
    for name, values in samples.items():
        ratio = statistics.median(v / p for v, p in zip(values, reference, strict=True))
        print(f"{name:<46} {statistics.median(values):7.2f} us  {ratio:5.2f}x")


if __name__ == "__main__":
    main()
