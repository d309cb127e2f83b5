"""The suite's workloads through TorchRL, each against the same plain reference, in this env.

Run by ``benchmarks/run.py --peers`` (``uv run --project benchmarks/torchrl_reference python
benchmarks/torchrl_reference/suite_peer.py --group envs --json out.json``). The plain
references are ``benchmarks/suite/plain.py`` (gymnasium, numpy and torch only), timed here
over this environment's torch; workload and variant names match
``benchmarks/suite/workloads.py``, so the driver pairs each row with ours. TorchRL is
configured as its documentation shows for each workload.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "suite"
sys.path.insert(0, str(SUITE))

import plain  # noqa: E402
import report  # noqa: E402

GROUPS = ("envs", "collectors", "buffers", "values", "losses", "imports")


class Suite:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.repeats = 2 if quick else 5
        self.results: list[dict] = []

    def run(self, group, name, variants, *, unit="us/step", clock="cpu", repeats=None,
            notes="") -> None:  # fmt: skip
        before = report.load_average()
        samples = report.measure(variants, repeats or self.repeats)
        result = {
            "group": group, "name": name, "unit": unit, "clock": clock, "reference": "plain",
            "samples": samples, "load": [before, report.load_average()], "notes": notes,
        }  # fmt: skip
        summary = report.summarize(result)
        ratios = ", ".join(f"{k} {v['median']:.2f}x" for k, v in summary["ratios"].items())
        print(f"TorchRL {group:<11} {name}: {ratios}", flush=True)
        self.results.append(result)


def rollout_block(env, steps: int, policy=None, clock=time.process_time) -> Callable[[], float]:
    env.set_seed(0)

    def run() -> float:
        start = clock()
        env.rollout(steps, policy, break_when_any_done=False)
        return (clock() - start) / steps

    return run


def envs(suite: Suite) -> None:
    from torchrl.envs import GymEnv, ParallelEnv, SerialEnv

    steps = 800 if suite.quick else 10_000
    suite.run(
        "envs",
        "CartPole, no policy",
        {"plain": plain.cartpole_random(steps), "GymEnv.rollout": rollout_block(GymEnv("CartPole-v1"), steps)},
    )  # fmt: skip
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    action = env.action_spec.zero()
    action[..., 1] = 1
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
    )
    vsteps = steps // plain.NUM_ENVS

    def cartpole():
        return GymEnv("CartPole-v1")

    suite.run(
        "envs",
        "8 CartPoles, no policy",
        {
            "plain": plain.vector_random(vsteps),
            "GymEnv(num_envs=8)": rollout_block(GymEnv("CartPole-v1", num_envs=8), vsteps),
            "SerialEnv(8)": rollout_block(SerialEnv(8, cartpole), vsteps),
        },
    )
    if not suite.quick:
        parallel = ParallelEnv(2, lambda: SerialEnv(4, cartpole))  # constructors, not envs
        reference = plain.vector_random(vsteps, asynchronous=True)
        suite.run(
            "envs",
            "8 CartPoles in 2 processes (wall clock)",
            {
                "plain": reference,
                "ParallelEnv(2, SerialEnv(4))": rollout_block(
                    parallel, vsteps, clock=time.perf_counter
                ),
            },
            clock="wall",
        )
        parallel.close()
        reference.close()


def collectors(suite: Suite) -> None:
    import torch
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torch import nn
    from torchrl.collectors import Collector as SyncDataCollector  # 0.14 renamed it
    from torchrl.envs import GymEnv, SerialEnv
    from torchrl.modules import OneHotCategorical, ProbabilisticActor, QValueActor, TanhNormal

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

    net = plain.mlp(plain.OBS, 2)
    probe = GymEnv("CartPole-v1")

    def categorical(log_prob: bool) -> ProbabilisticActor:
        return ProbabilisticActor(
            TensorDictModule(net, ["observation"], ["logits"]), ["logits"],
            spec=probe.action_spec, distribution_class=OneHotCategorical,
            return_log_prob=log_prob,
        )  # fmt: skip

    variants = {
        "plain": plain.vector_policy_loop("CartPole-v1", frames, plain.categorical_action(net))
    }
    for env_name, make in envs_of("CartPole-v1").items():
        variants[f"{env_name}, ProbabilisticActor(OneHotCategorical)"] = collect(
            make, categorical(False)
        )
        variants[f"{env_name}, return_log_prob=True"] = collect(make, categorical(True))
    suite.run("collectors", "8 CartPoles, categorical sampling", variants, unit="us/frame")

    pendulum = GymEnv("Pendulum-v1")
    high = float(pendulum.action_spec.space.high.max())
    cnet = plain.mlp(3, 2)

    def tanh_normal(log_prob: bool) -> ProbabilisticActor:
        return ProbabilisticActor(
            TensorDictModule(nn.Sequential(cnet, NormalParamExtractor()), ["observation"], ["loc", "scale"]),
            ["loc", "scale"], spec=pendulum.action_spec, distribution_class=TanhNormal,
            distribution_kwargs={"low": -high, "high": high}, return_log_prob=log_prob,
        )  # fmt: skip

    variants = {
        "plain": plain.vector_policy_loop(
            "Pendulum-v1", frames, plain.tanh_normal_action(cnet, high)
        )
    }
    for env_name, make in envs_of("Pendulum-v1").items():
        variants[f"{env_name}, ProbabilisticActor(TanhNormal)"] = collect(make, tanh_normal(False))
        variants[f"{env_name}, return_log_prob=True"] = collect(make, tanh_normal(True))
    suite.run("collectors", "8 Pendulums, TanhNormal sampling", variants, unit="us/frame")

    qnet = plain.mlp(plain.OBS, 2)

    def greedy(obs):
        return qnet(obs).argmax(-1).numpy()

    qactor = QValueActor(qnet, spec=GymEnv("CartPole-v1", num_envs=8).action_spec)
    suite.run(
        "collectors",
        "8 CartPoles, greedy Q-values",
        {
            "plain": plain.vector_policy_loop("CartPole-v1", frames, greedy),
            "GymEnv(num_envs=8), QValueActor": collect(envs_of("CartPole-v1")["GymEnv(num_envs=8)"], qactor),
        },
        unit="us/frame",
    )  # fmt: skip


def buffers(suite: Suite) -> None:
    from tensordict import TensorDict
    from torchrl.data import LazyMemmapStorage, LazyTensorStorage, TensorDictReplayBuffer

    items = 20_000 if suite.quick else 200_000
    calls = 50 if suite.quick else 200
    tensors = plain.transitions_tensors(items)
    obs, action, next_obs, reward, done, terminated = tensors
    data = TensorDict(
        observation=obs, action=action,
        next=TensorDict(observation=next_obs, reward=reward, done=done, terminated=terminated,
                        batch_size=[items]),
        batch_size=[items],
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as scratch:
        memory = TensorDictReplayBuffer(storage=LazyTensorStorage(items), batch_size=256)
        memmap = TensorDictReplayBuffer(
            storage=LazyMemmapStorage(items, scratch_dir=scratch), batch_size=256
        )
        for buffer in (memory, memmap):
            buffer.extend(data)
        suite.run(
            "buffers",
            f"sample(256) of {items // 1000}k",
            {
                "plain": plain.sample_tensors(tensors, 256, calls),
                "LazyTensorStorage": plain.timed_call(memory.sample, calls),
                "LazyMemmapStorage": plain.timed_call(memmap.sample, calls),
            },
            unit="us/sample",
        )


def values(suite: Suite) -> None:
    import torch
    from torchrl.objectives.value.functional import vec_generalized_advantage_estimate

    shapes = [(64, 1000)] if suite.quick else [(64, 1000), (1024, 128)]
    for batch, steps in shapes:
        inputs = plain.gae_inputs(batch, steps)
        torch.testing.assert_close(
            vec_generalized_advantage_estimate(*inputs)[0], plain.gae_loop(*inputs)[0],
            rtol=1e-4, atol=1e-4,
        )  # fmt: skip
        suite.run(
            "values",
            f"GAE [{batch}, {steps}]",
            {
                "plain": plain.timed_call(lambda inputs=inputs: plain.gae_loop(*inputs), 1),
                "generalized_advantage_estimate": plain.timed_call(
                    lambda inputs=inputs: vec_generalized_advantage_estimate(*inputs), 1
                ),
            },
            unit="ms/call",
            notes="TorchRL: vec_generalized_advantage_estimate (what its GAE module runs).",
        )


def losses(suite: Suite) -> None:
    """ClipPPOLoss on the batch of ``rl_objectives/bench_losses.py``'s PPO case (4096, obs 17,
    action 6, Normal policy, MLPs of 2 x 256 Tanh) against the same update in plain torch."""
    import torch
    from tensordict import TensorDict
    from tensordict.nn import NormalParamExtractor, TensorDictModule
    from torch import nn
    from torch.nn import functional as F
    from torchrl.modules import MLP, IndependentNormal, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss

    torch.manual_seed(0)
    obs, act, batch = 17, 6, 4096

    def mlp(n_out: int) -> nn.Module:
        return MLP(
            in_features=obs, out_features=n_out, depth=2, num_cells=256, activation_class=nn.Tanh
        )

    param_net = nn.Sequential(mlp(2 * act), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(param_net, ["observation"], ["loc", "scale"]), ["loc", "scale"],
        distribution_class=IndependentNormal, return_log_prob=True,
    )  # fmt: skip
    value_net = mlp(1)
    loss = ClipPPOLoss(actor, ValueOperator(value_net, ["observation"]), entropy_coeff=0.01)
    td = TensorDict(
        observation=torch.randn(batch, obs), action=torch.randn(batch, act),
        action_log_prob=torch.randn(batch) - 5, advantage=torch.randn(batch, 1),
        value_target=torch.randn(batch, 1), batch_size=[batch],
    )  # fmt: skip

    def reference() -> torch.Tensor:
        loc, scale = param_net(td["observation"])
        dist = torch.distributions.Normal(loc, scale)
        ratio = (dist.log_prob(td["action"]).sum(-1) - td["action_log_prob"]).exp()
        adv = td["advantage"].squeeze(-1)
        objective = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
        entropy = -0.01 * dist.entropy().sum(-1).mean()
        return (
            objective + entropy + F.smooth_l1_loss(td["value_target"], value_net(td["observation"]))
        )

    def ours() -> torch.Tensor:
        out = loss(td)
        return out["loss_objective"] + out["loss_entropy"] + out["loss_critic"]

    calls = 2 if suite.quick else 10

    def block(fn) -> Callable[[], float]:
        def run() -> float:
            start = time.process_time()
            for _ in range(calls):
                fn().backward()
            return (time.process_time() - start) / calls

        return run

    suite.run(
        "losses",
        "ClipPPOLoss (batch 4096) forward+backward",
        {"plain": block(reference), "ClipPPOLoss": block(ours)},
        unit="ms/call",
        repeats=3 if suite.quick else 9,
    )  # fmt: skip


def imports(suite: Suite) -> None:
    def timed_import(module: str) -> Callable[[], float]:
        def run() -> float:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
            return time.perf_counter() - start

        return run

    suite.run(
        "imports",
        "import in a fresh interpreter (wall clock)",
        {"plain": timed_import("tensordict"), "import torchrl": timed_import("torchrl")},
        unit="s/import",
        clock="wall",
        repeats=1 if suite.quick else 3,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", required=True, help="one group, or several comma-separated")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    import torch
    import torchrl

    torch.set_num_threads(1)
    suite = Suite(args.quick)
    failures = []
    for group in args.group.split(","):
        if group not in GROUPS:
            failures.append(f"{group}: no TorchRL workloads")
            continue
        try:
            globals()[group](suite)
        except Exception:
            traceback.print_exc()
            failures.append(f"{group}: {traceback.format_exc(limit=1).strip().splitlines()[-1]}")
    versions = {**report.machine_info()["versions"], "torchrl": torchrl.__version__}
    args.json.write_text(
        json.dumps({"versions": versions, "results": suite.results, "failures": failures})
    )


if __name__ == "__main__":
    main()
