"""A small SAC run on rl-envs' torch Pendulum, checkpointed every 64 frames; the kill-and-resume
test (test_checkpoint_resume.py) runs it in child processes.

    python _resume_run.py RUN_DIR [--pause SECONDS] [--resume]

Writes ``RUN_DIR/final.pt`` (the loss module's parameters) when it finishes.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from tensordict.nn import NormalParamExtractor, TensorDictModule

from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer
from rl_collectors import SyncDataCollector
from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator
from rl_envs import PendulumEnv
from rl_objectives import SACLoss, SoftUpdate
from rl_objectives.trainers import LRSchedulerHook, RunCheckpointer, SACTrainer

TOTAL_FRAMES = 640
FRAMES_PER_BATCH = 32
INTERVAL = 64


def build(run_dir: Path) -> tuple[SACTrainer, SACLoss, RunCheckpointer]:
    torch.manual_seed(0)
    env = PendulumEnv(batch_size=[2])
    net = torch.nn.Sequential(MLP(3, 2, depth=1, num_cells=32), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]), ["loc", "scale"],
        spec=env.action_spec, distribution_class=TanhNormal,
        distribution_kwargs={"low": -2.0, "high": 2.0}, return_log_prob=True,
    )  # fmt: skip
    qvalue = ValueOperator(MLP(4, 1, depth=1, num_cells=32), ["observation", "action"])
    loss = SACLoss(actor, qvalue, num_qvalue_nets=2, loss_function="l2")
    loss.make_value_estimator(gamma=0.99)
    collector = SyncDataCollector(env, actor, frames_per_batch=FRAMES_PER_BATCH)
    optimizer = torch.optim.Adam(loss.parameters(), lr=3e-3)
    trainer = SACTrainer(
        collector, TOTAL_FRAMES, loss, optimizer,
        replay_buffer=TensorDictReplayBuffer(storage=LazyTensorStorage(1000)), batch_size=32,
        target_net_updater=SoftUpdate(loss, tau=0.05), progress_bar=False, seed=0,
    )  # fmt: skip
    LRSchedulerHook(torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.9)).register(
        trainer
    )
    checkpointer = RunCheckpointer(run_dir / "checkpoints", interval=INTERVAL, keep_last=2)
    checkpointer.register(trainer)
    return trainer, loss, checkpointer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    trainer, loss, checkpointer = build(args.run_dir)
    if args.pause:
        trainer.register_op("post_steps_log", lambda batch: time.sleep(args.pause))
    if args.resume and not checkpointer.restore():
        raise SystemExit(f"{args.run_dir}: no checkpoint to resume from")
    trainer.train()
    torch.save(
        {k: v.detach().clone() for k, v in loss.state_dict().items()}, args.run_dir / "final.pt"
    )


if __name__ == "__main__":
    main()
