"""Times the Trainer's loop against the same updates written as a plain torch loop.

Run from the repository root::

    uv run python benchmarks/rl_objectives/bench_trainer.py [--batches 300] [--repeat 5]

Both sides run the same work: for each of ``--batches`` precomputed batches of 256
transitions, one forward of a 64x64 MLP value loss, backward and an Adam step. The trainer
side adds its hook dispatch, frame counting and the per-batch averaging and logging of the
loss terms; it runs with no logger and no progress bar, then with a CSVLogger writing every
batch and the tqdm bar (written to a null stream). Prints the best time of ``--repeat``
interleaved runs per variant and the ratio to the plain loop (1.00 = no overhead).
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time

import torch
from tensordict import TensorDict

from rl_objectives.loggers import CSVLogger
from rl_objectives.trainers import Trainer


class ValueLoss(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(8, 64),
            torch.nn.Tanh(),
            torch.nn.Linear(64, 64),
            torch.nn.Tanh(),
            torch.nn.Linear(64, 1),
        )

    def forward(self, td: TensorDict) -> TensorDict:
        error = self.net(td["observation"]) - td["target"]
        return TensorDict(loss_value=error.pow(2).mean())


def make_batches(n: int) -> list[TensorDict]:
    gen = torch.Generator().manual_seed(0)
    return [
        TensorDict(
            observation=torch.randn(256, 8, generator=gen),
            target=torch.randn(256, 1, generator=gen),
            batch_size=[256],
        )
        for _ in range(n)
    ]


def plain(batches: list[TensorDict]) -> float:
    torch.manual_seed(0)
    loss = ValueLoss()
    optimizer = torch.optim.Adam(loss.parameters(), lr=1e-3)
    start = time.perf_counter()
    for batch in batches:
        losses = loss(batch)
        total = sum(v for k, v in losses.items() if k.startswith("loss"))
        optimizer.zero_grad(set_to_none=True)
        total.backward()
        optimizer.step()
    return time.perf_counter() - start


def with_trainer(batches: list[TensorDict], *, logged: bool) -> float:
    torch.manual_seed(0)
    loss = ValueLoss()
    optimizer = torch.optim.Adam(loss.parameters(), lr=1e-3)
    with tempfile.TemporaryDirectory() as tmp:
        logger = CSVLogger("bench", log_dir=tmp) if logged else None
        trainer = Trainer(
            batches,
            256 * len(batches),
            loss,
            optimizer,
            logger=logger,
            log_interval=1,
            progress_bar=logged,
        )
        if logged:
            import tqdm.auto

            original = tqdm.auto.tqdm.__init__

            def quiet(self, *args, **kwargs):
                original(self, *args, file=io.StringIO(), **kwargs)

            tqdm.auto.tqdm.__init__ = quiet
        try:
            start = time.perf_counter()
            trainer.train()
            return time.perf_counter() - start
        finally:
            if logged:
                tqdm.auto.tqdm.__init__ = original


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    batches = make_batches(args.batches)
    best = {
        "plain loop": float("inf"),
        "Trainer": float("inf"),
        "Trainer + CSV + tqdm": float("inf"),
    }
    for _ in range(args.repeat):
        best["plain loop"] = min(best["plain loop"], plain(batches))
        best["Trainer"] = min(best["Trainer"], with_trainer(batches, logged=False))
        best["Trainer + CSV + tqdm"] = min(
            best["Trainer + CSV + tqdm"], with_trainer(batches, logged=True)
        )
    reference = best["plain loop"]
    for name, seconds in best.items():
        per_step = seconds / args.batches * 1e6
        print(f"{name:22s} {per_step:8.1f} us/step  {seconds / reference:5.2f}x")


if __name__ == "__main__":
    main()
