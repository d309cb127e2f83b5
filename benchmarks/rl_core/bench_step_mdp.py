"""Cost of one ``step_mdp`` call, next to the cheapest TensorDict operations it is made of.

Run: ``uv run python benchmarks/rl_core/bench_step_mdp.py``
"""

import time

import torch
from tensordict import TensorDict

from rl_core.ted import step_mdp


def _flag(batch):
    return torch.zeros(batch, 1, dtype=torch.bool)


def transition(batch: int = 8) -> TensorDict:
    return TensorDict(
        observation=torch.zeros(batch, 4),
        action=torch.zeros(batch, 1),
        done=_flag(batch),
        terminated=_flag(batch),
        truncated=_flag(batch),
        step_count=torch.zeros(batch, 1, dtype=torch.int64),
        next=TensorDict(
            observation=torch.zeros(batch, 4),
            reward=torch.zeros(batch, 1),
            done=_flag(batch),
            terminated=_flag(batch),
            truncated=_flag(batch),
            step_count=torch.zeros(batch, 1, dtype=torch.int64),
            batch_size=[batch],
        ),
        batch_size=[batch],
    )


def multi_agent_transition(batch: int = 8, agents: int = 3) -> TensorDict:
    group = transition(batch * agents).reshape(batch, agents)
    return TensorDict(
        agents=group.exclude("next"),
        next=TensorDict(agents=group["next"], batch_size=[batch]),
        batch_size=[batch],
    )


def per_call_us(fn, n: int = 20_000) -> float:
    for _ in range(200):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    td = transition()
    nxt = td["next"]
    rows = [
        ("step_mdp(td)                       ", per_call_us(lambda: step_mdp(td))),
        (
            "step_mdp(td, keep_other=False)     ",
            per_call_us(lambda: step_mdp(td, keep_other=False)),
        ),
        (
            "step_mdp(multi-agent group)        ",
            per_call_us(lambda: step_mdp(multi_agent_transition_td)),
        ),
        ("reference: td['next'].exclude('reward')", per_call_us(lambda: nxt.exclude("reward"))),
        ("reference: td['next'].clone(False) ", per_call_us(lambda: nxt.clone(False))),
    ]
    for name, us in rows:
        print(f"{name:<42} {us:7.2f} µs/call")


multi_agent_transition_td = multi_agent_transition()

if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
