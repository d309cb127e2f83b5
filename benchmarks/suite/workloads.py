"""The suite's workloads through this workspace's packages, one group per process.

Run by ``benchmarks/run.py`` (``python benchmarks/suite/workloads.py --group envs [--quick]
--json out.json``): every workload of the group runs here, in this one process, alternately
with its plain reference from :mod:`plain` (the same code the TorchRL peer times), and the
raw samples are written as JSON for :mod:`report`. Where an existing script under
``benchmarks/`` already does the work (the env rollouts of ``rl_envs/bench_gym.py``, the
batched envs of ``rl_envs/bench_batched.py``, the loss cases of
``rl_objectives/bench_losses.py``, the PPO run of ``examples/bench_ppo_vs_sb3.py``), it is
loaded and called, not rewritten.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parent
sys.path.insert(0, str(HERE))

import plain  # noqa: E402
import report  # noqa: E402

GROUPS = report.GROUPS


def script(relative: str) -> ModuleType:
    """An existing benchmark script under ``benchmarks/``, loaded as a module."""
    path = BENCHMARKS / relative
    name = "bench_" + relative.replace("/", "_").removesuffix(".py")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def per_unit(total: Callable[[], float], units: int) -> Callable[[], float]:
    """A script function returning a block's total seconds, as seconds per unit."""
    return lambda: total() / units


def cpu_block(work: Callable[[], object], units: int) -> Callable[[], float]:
    def run() -> float:
        start = time.process_time()
        work()
        return (time.process_time() - start) / units

    return run


class Suite:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.repeats = 2 if quick else 5
        self.results: list[dict[str, Any]] = []

    def run(
        self,
        group: str,
        name: str,
        variants: dict[str, Callable[[], float]],
        *,
        unit: str = "us/step",
        clock: str = "cpu",
        notes: str = "",
        repeats: int | None = None,
        reference: str = "plain",
        warmup: int = 1,
    ) -> None:
        load_before = report.load_average()
        samples = report.measure(variants, repeats or self.repeats, warmup=warmup)
        result = {
            "group": group,
            "name": name,
            "unit": unit,
            "clock": clock,
            "reference": reference,
            "samples": samples,
            "load": [load_before, report.load_average()],
            "notes": notes,
        }
        summary = report.summarize(result)
        ratios = ", ".join(f"{k} {v['median']:.2f}x" for k, v in summary["ratios"].items())
        print(f"{group:<11} {name}: {ratios}", flush=True)
        self.results.append(result)


# --- envs -------------------------------------------------------------------------------


def envs(suite: Suite) -> None:
    import torch

    from rl_envs import GymEnv, ParallelEnv, SerialEnv

    gym_script = script("rl_envs/bench_gym.py")
    batched = script("rl_envs/bench_batched.py")
    steps = 800 if suite.quick else 10_000
    suite.run(
        "envs",
        "CartPole, no policy",
        {
            "plain": plain.cartpole_random(steps),
            "GymEnv.rollout": per_unit(lambda: gym_script.wrapped_single(steps), steps),
        },
        notes="plain: gymnasium loop, random actions drawn 256 at a time; ours: "
        "GymEnv('CartPole-v1').rollout(n, break_when_any_done=False).",
    )

    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    action = env.action_spec.encode(1)
    state = {"td": env.reset()}

    def policy_loop() -> float:
        td = state["td"]
        start = time.process_time()
        for _ in range(steps):
            _, td = env.step_and_maybe_reset(td.set("action", action))
        state["td"] = td
        return (time.process_time() - start) / steps

    suite.run(
        "envs",
        "CartPole, policy step loop",
        {"plain": plain.cartpole_fixed(steps), "step_and_maybe_reset loop": policy_loop},
        notes="both step one fixed action; ours: td = env.step_and_maybe_reset(policy(td))[1] "
        "with a policy writing the action.",
    )

    # The loops users write by hand with random actions (issue 57), and rand_action alone.
    from rl_core.ted import step_mdp

    loop_state = {"td": env.reset()}

    def rand_loop() -> float:
        td = loop_state["td"]
        start = time.process_time()
        for _ in range(steps):
            td = env.rand_action(td)
            _, td = env.step_and_maybe_reset(td)
        loop_state["td"] = td
        return (time.process_time() - start) / steps

    mdp_state = {"td": env.reset()}

    def step_mdp_loop() -> float:
        td = mdp_state["td"]
        start = time.process_time()
        for _ in range(steps):
            td = env.step(env.rand_action(td))
            td = env.reset() if td["next", "done"].any() else step_mdp(td)
        mdp_state["td"] = td
        return (time.process_time() - start) / steps

    suite.run(
        "envs",
        "CartPole, random-action step loop",
        {
            "plain": plain.cartpole_sampled(steps),
            "rand_action + step_and_maybe_reset loop": rand_loop,
            "rand_action + step + step_mdp loop": step_mdp_loop,
        },
        notes="plain: gymnasium loop, action_space.sample() per step, reset when done; ours: "
        "td = env.rand_action(td); _, td = env.step_and_maybe_reset(td), and td = "
        "env.step(env.rand_action(td)) then env.reset() if done else step_mdp(td).",
    )

    rand_state = {"td": env.reset()}

    def rand_only() -> float:
        td = rand_state["td"]
        start = time.process_time()
        for _ in range(steps):
            env.rand_action(td)
        return (time.process_time() - start) / steps

    suite.run(
        "envs",
        "CartPole, random action alone",
        {"plain": plain.cartpole_sample(steps), "env.rand_action(td)": rand_only},
        unit="us/call",
        notes="plain: action_space.sample(); ours: env.rand_action(td) on the root of a "
        "GymEnv('CartPole-v1').",
    )

    # The same loop with a sampling policy on both sides, called as users call it.
    from tensordict.nn import TensorDictModule

    from rl_core.modules import OneHotCategorical, ProbabilisticActor

    net = plain.mlp(plain.OBS, 2)
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["logits"]),
        ["logits"],
        spec=env.action_spec,
        distribution_class=OneHotCategorical,
    )
    actor_state = {"td": env.reset()}

    def actor_loop() -> float:
        td = actor_state["td"]
        start = time.process_time()
        with torch.no_grad():
            for _ in range(steps):
                _, td = env.step_and_maybe_reset(actor(td))
        actor_state["td"] = td
        return (time.process_time() - start) / steps

    suite.run(
        "envs",
        "CartPole, ProbabilisticActor step loop",
        {
            "plain": plain.cartpole_policy_loop(steps, plain.categorical_action(net)),
            "step_and_maybe_reset(policy(td)) loop": actor_loop,
        },
        notes="plain: gymnasium loop + MLP(64,64) + Categorical.sample under no_grad; ours: "
        "td = env.step_and_maybe_reset(policy(td))[1] with ProbabilisticActor(OneHotCategorical) "
        "called directly, under no_grad.",
    )

    vsteps = steps // plain.NUM_ENVS
    serial = SerialEnv(plain.NUM_ENVS, batched.gym_cartpole)
    vector = GymEnv("CartPole-v1", num_envs=plain.NUM_ENVS)
    variants = {
        "plain": plain.vector_random(vsteps),
        "GymEnv(num_envs=8)": cpu_block(batched.rollout_run(vector, vsteps), vsteps),
        "SerialEnv(8)": cpu_block(batched.rollout_run(serial, vsteps), vsteps),
    }
    suite.run(
        "envs",
        "8 CartPoles, no policy",
        variants,
        notes="plain: SyncVectorEnv(8); ours: rollout(n, break_when_any_done=False).",
    )
    if not suite.quick:
        parallel = ParallelEnv(2, batched.serial_gym_4)
        run = batched.rollout_run(parallel, vsteps)

        def wall() -> float:
            start = time.perf_counter()
            run()
            return (time.perf_counter() - start) / vsteps

        reference = plain.vector_random(vsteps, asynchronous=True)
        suite.run(
            "envs",
            "8 CartPoles in 2 processes (wall clock)",
            {"plain": reference, "ParallelEnv(2, SerialEnv(4))": wall},
            clock="wall",
            notes="plain: AsyncVectorEnv(8) (8 processes); ours: ParallelEnv(2 workers x 4).",
        )
        parallel.close()
        reference.close()


# --- collectors --------------------------------------------------------------------------


def collectors(suite: Suite) -> None:
    import torch
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torch import nn

    from rl_collectors import SyncDataCollector
    from rl_core.modules import OneHotCategorical, ProbabilisticActor, QValueActor, TanhNormal
    from rl_envs import GymEnv, SerialEnv

    torch.manual_seed(0)
    frames = 512 if suite.quick else 4_096
    fpb = 256 if suite.quick else 1_024

    def collect(make_env, policy) -> Callable[[], float]:
        env = make_env()
        env.set_seed(0)
        collector = SyncDataCollector(env, policy, frames_per_batch=fpb, total_frames=-1)
        batches = iter(collector)
        next(batches)

        def run() -> float:
            start = time.process_time()
            for _ in range(frames // fpb):
                next(batches)
            return (time.process_time() - start) / frames

        return run

    def envs_of(env_id: str) -> dict[str, Callable]:
        return {
            "GymEnv(num_envs=8)": lambda: GymEnv(env_id, num_envs=plain.NUM_ENVS),
            "SerialEnv(8)": lambda: SerialEnv(plain.NUM_ENVS, lambda: GymEnv(env_id)),
        }

    # CartPole, categorical sampling (the PPO/A2C path)
    net = plain.mlp(plain.OBS, 2)
    probe = GymEnv("CartPole-v1")

    def categorical(log_prob: bool) -> ProbabilisticActor:
        return ProbabilisticActor(
            TensorDictModule(net, ["observation"], ["logits"]),
            ["logits"],
            spec=probe.action_spec,
            distribution_class=OneHotCategorical,
            return_log_prob=log_prob,
        )

    variants = {
        "plain": plain.vector_policy_loop("CartPole-v1", frames, plain.categorical_action(net))
    }
    for env_name, make in envs_of("CartPole-v1").items():
        variants[f"{env_name}, ProbabilisticActor(OneHotCategorical)"] = collect(
            make, categorical(False)
        )
        variants[f"{env_name}, return_log_prob=True"] = collect(make, categorical(True))
    suite.run(
        "collectors",
        "8 CartPoles, categorical sampling",
        variants,
        unit="us/frame",
        notes="plain: SyncVectorEnv(8) + MLP(64,64) + Categorical.sample under no_grad; ours: "
        f"SyncDataCollector(frames_per_batch={fpb}) with ProbabilisticActor(OneHotCategorical).",
    )

    # Pendulum, TanhNormal (the SAC/PPO continuous path)
    pendulum = GymEnv("Pendulum-v1")
    high = float(pendulum.action_spec.high.max())
    cnet = plain.mlp(3, 2)

    def tanh_normal(log_prob: bool) -> ProbabilisticActor:
        return ProbabilisticActor(
            TensorDictModule(
                nn.Sequential(cnet, NormalParamExtractor()), ["observation"], ["loc", "scale"]
            ),
            ["loc", "scale"],
            spec=pendulum.action_spec,
            distribution_class=TanhNormal,
            distribution_kwargs={"low": -high, "high": high},
            return_log_prob=log_prob,
        )

    variants = {
        "plain": plain.vector_policy_loop(
            "Pendulum-v1", frames, plain.tanh_normal_action(cnet, high)
        )
    }
    for env_name, make in envs_of("Pendulum-v1").items():
        variants[f"{env_name}, ProbabilisticActor(TanhNormal)"] = collect(make, tanh_normal(False))
        variants[f"{env_name}, return_log_prob=True"] = collect(make, tanh_normal(True))
    suite.run(
        "collectors",
        "8 Pendulums, TanhNormal sampling",
        variants,
        unit="us/frame",
        notes="plain: SyncVectorEnv(8) + MLP(64,64) + Normal.sample().tanh() * high; ours: "
        "ProbabilisticActor(TanhNormal(low, high)).",
    )

    # CartPole, greedy Q-values (the DQN path; PolicyCallPlan's fast path)
    qnet = plain.mlp(plain.OBS, 2)

    def greedy(obs: torch.Tensor):
        return qnet(obs).argmax(-1).numpy()

    qactor = QValueActor(qnet, spec=GymEnv("CartPole-v1", num_envs=plain.NUM_ENVS).action_spec)
    suite.run(
        "collectors",
        "8 CartPoles, greedy Q-values",
        {
            "plain": plain.vector_policy_loop("CartPole-v1", frames, greedy),
            "GymEnv(num_envs=8), QValueActor": collect(
                envs_of("CartPole-v1")["GymEnv(num_envs=8)"], qactor
            ),
        },
        unit="us/frame",
        notes="plain: SyncVectorEnv(8) + MLP + argmax; ours: QValueActor.",
    )


# --- buffers -----------------------------------------------------------------------------


def buffers(suite: Suite) -> None:
    import tempfile

    import torch
    from tensordict import TensorDict

    from rl_buffers import LazyMemmapStorage, LazyTensorStorage, TensorDictReplayBuffer

    items = 20_000 if suite.quick else 200_000
    calls = 50 if suite.quick else 200
    tensors = plain.transitions_tensors(items)
    obs, action, next_obs, reward, done, terminated = tensors
    data = TensorDict(
        observation=obs,
        action=action,
        next=TensorDict(
            observation=next_obs, reward=reward, done=done, terminated=terminated,
            batch_size=[items],
        ),
        batch_size=[items],
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        memory = TensorDictReplayBuffer(storage=LazyTensorStorage(items), batch_size=256)
        memmap = TensorDictReplayBuffer(
            storage=LazyMemmapStorage(items, scratch_dir=scratch), batch_size=256
        )
        for buffer in (memory, memmap):
            buffer.extend(data)
        torch.manual_seed(0)
        suite.run(
            "buffers",
            f"sample(256) of {items // 1000}k",
            {
                "plain": plain.sample_tensors(tensors, 256, calls),
                "LazyTensorStorage": plain.timed_call(memory.sample, calls),
                "LazyMemmapStorage": plain.timed_call(memmap.sample, calls),
            },
            unit="us/sample",
            notes="plain: torch.randint + index_select on each preallocated tensor; ours: "
            "TensorDictReplayBuffer(storage, batch_size=256).sample().",
        )


# --- values ------------------------------------------------------------------------------


def values(suite: Suite) -> None:
    import torch

    from rl_objectives.value.functional import generalized_advantage_estimate

    shapes = [(64, 1000)] if suite.quick else [(64, 1000), (1024, 128)]
    for batch, steps in shapes:
        inputs = plain.gae_inputs(batch, steps)
        expected = plain.gae_loop(*inputs)[0]
        got = generalized_advantage_estimate(*inputs)[0]
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
        suite.run(
            "values",
            f"GAE [{batch}, {steps}]",
            {
                "plain": plain.timed_call(lambda inputs=inputs: plain.gae_loop(*inputs), 1),
                "generalized_advantage_estimate": plain.timed_call(
                    lambda inputs=inputs: generalized_advantage_estimate(*inputs), 1
                ),
            },
            unit="ms/call",
            notes="plain: a Python loop over time in torch; results checked equal first.",
        )


# --- losses ------------------------------------------------------------------------------


def losses(suite: Suite) -> None:
    import math

    import torch

    cases = script("rl_objectives/bench_losses.py")
    calls = 2 if suite.quick else 10
    for make in (cases.ppo_case, cases.sac_case, cases.dqn_case):
        torch.manual_seed(0)
        name, reference, ours = make()
        torch.manual_seed(1)
        a = reference().item()
        torch.manual_seed(1)
        b = ours().item()
        if not math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5):
            raise AssertionError(f"{name}: plain torch gives {a}, the loss {b}")

        def block(fn) -> Callable[[], float]:
            return lambda: sum(cases.one_call(fn) for _ in range(calls)) / calls

        suite.run(
            "losses",
            f"{name} forward+backward",
            {"plain": block(reference), name.split(" ")[0]: block(ours)},
            unit="ms/call",
            repeats=3 if suite.quick else 9,
            notes="" if "PPO" not in name else (
                "plain: the same equations in torch with the same modules "
                "(benchmarks/rl_objectives/bench_losses.py), values checked equal."
            ),
        )  # fmt: skip


# --- imports -----------------------------------------------------------------------------


def imports(suite: Suite) -> None:
    modules = ["rl_core"] if suite.quick else [
        "rl_core", "rl_envs", "rl_buffers", "rl_collectors", "rl_objectives",
    ]  # fmt: skip

    def timed_import(module: str) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
            return time.perf_counter() - start

        return run

    variants = {"plain": timed_import("tensordict")}
    variants.update({f"import {m}": timed_import(m) for m in modules})
    suite.run(
        "imports",
        "import in a fresh interpreter (wall clock)",
        variants,
        unit="s/import",
        clock="wall",
        repeats=1 if suite.quick else 3,
        notes="plain: `python -c 'import tensordict'` (torch included).",
    )


# --- ppo ---------------------------------------------------------------------------------


def ppo(suite: Suite) -> None:
    import tempfile

    import torch

    sys.path.insert(0, str(BENCHMARKS.parent / "examples"))  # ppo.py imports _recipe
    bench = script("examples/bench_ppo_vs_sb3.py")
    example = bench.load_ppo_example()
    torch.set_num_threads(1)
    try:
        import stable_baselines3  # noqa: F401

        has_sb3 = True
    except ImportError:
        has_sb3 = False
    if suite.quick:

        def short() -> float:
            with tempfile.TemporaryDirectory() as out:
                cfg = example.parse_config(
                    ["--total-frames", "1024", "--out-dir", out, "--exp-name", "bench", "--no-plot"]
                )
                start = time.perf_counter()
                example.train(cfg)
                return time.perf_counter() - start

        suite.run(
            "ppo",
            "examples/ppo.py, 1 024 frames (wall clock)",
            {"examples/ppo.py": short},
            unit="s/run",
            clock="wall",
            repeats=1,
            warmup=0,
            reference="examples/ppo.py",
            notes="--quick: a smoke run of the example, no target.",
        )
        return
    seeds = iter(range(100))
    variants: dict[str, Callable[[], float]] = {
        "examples/ppo.py": lambda: bench.run_ours(example, next(seeds) % 3)[0]
    }
    if has_sb3:
        sb3_seeds = iter(range(100))
        variants = {"SB3 PPO": lambda: bench.run_sb3(next(sb3_seeds) % 3)[0], **variants}
    suite.run(
        "ppo",
        "PPO CartPole-v1 to a return of 475 (wall clock)",
        variants,
        unit="s/run",
        clock="wall",
        repeats=3,
        warmup=0,
        reference="SB3 PPO" if has_sb3 else "examples/ppo.py",
        notes="seeds 0, 1, 2 (median); SB3 with its defaults "
        "(benchmarks/examples/bench_ppo_vs_sb3.py)"
        + ("" if has_sb3 else "; SB3 absent: run with --peers (uv run --group bench)"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", required=True, help="one group, or several comma-separated")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    suite = Suite(args.quick)
    groups = args.group.split(",")
    for group in groups:
        if group not in GROUPS:
            parser.error(f"--group: expected groups among {', '.join(GROUPS)}, got {group!r}.")
    failures = []
    for group in groups:
        try:
            globals()[group](suite)
        except Exception:  # the other groups still run; the driver reports this one
            traceback.print_exc()
            failures.append(f"{group}: {traceback.format_exc(limit=1).strip().splitlines()[-1]}")
    versions = report.machine_info()["versions"]
    args.json.write_text(
        json.dumps({"versions": versions, "results": suite.results, "failures": failures})
    )


if __name__ == "__main__":
    main()
