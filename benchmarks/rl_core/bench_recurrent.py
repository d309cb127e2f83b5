"""Training-time cost of an LSTM on a ``[256, 64]`` batch of sequences with resets inside.

Forward and backward of a one-layer LSTM (32 inputs, 128 hidden) on 256 sequences of 64 steps,
each with ``is_init`` resets drawn at ``--reset-prob`` per step, timed for:

- ``torch loop``: the plain ``torch.nn.LSTM`` baseline that handles resets, a Python loop over
  time that zeroes the state where ``is_init`` is set and runs one step at a time;
- ``LSTMModule`` in sequence mode: one fused ``nn.LSTM`` call when the slice has no reset inside
  it; otherwise one fused call per chunk of time between distinct reset times on CPU, and
  one call on packed segments cut at the resets on CUDA;
- ``LSTMModule(python_based=True)``: the plain-PyTorch ``LSTM`` restarting the state inside its
  own time loop.

Every variant computes the same outputs (checked before timing).

Run: ``uv run python benchmarks/rl_core/bench_recurrent.py`` (``--device cuda`` on a GPU;
``--threads 1`` on a busy shared CPU, where two threads waiting on each other slow every
variant down many times over).
"""

from __future__ import annotations

import argparse
import time

import torch
from tensordict import TensorDict
from torch import nn

from rl_core.modules import LSTMModule


def torch_loop(lstm: nn.LSTM, x: torch.Tensor, is_init: torch.Tensor) -> torch.Tensor:
    """The baseline: one ``nn.LSTM`` step at a time, zeroing the state at each reset."""
    n, t, _ = x.shape
    h = x.new_zeros(lstm.num_layers, n, lstm.hidden_size)
    c = torch.zeros_like(h)
    outputs = []
    for step in range(t):
        keep = (~is_init[:, step]).to(x.dtype).view(1, n, 1)
        h, c = h * keep, c * keep
        y, (h, c) = lstm(x[:, step : step + 1], (h, c))
        outputs.append(y)
    return torch.cat(outputs, 1)


def _time(fn, repeats: int, device: str) -> float:
    fn()  # warm-up
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--time", type=int, default=64)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--reset-prob", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch CPU threads (default: torch's own)"
    )
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = args.device
    n, t = args.batch, args.time

    fused = LSTMModule(
        args.features, args.hidden, in_key="x", out_key="y", device=device, recurrent_mode=True
    )
    python = LSTMModule(
        args.features,
        args.hidden,
        in_key="x",
        out_key="y",
        device=device,
        recurrent_mode=True,
        python_based=True,
    )
    python.load_state_dict(fused.state_dict())
    x = torch.randn(n, t, args.features, device=device)
    with_resets = torch.rand(n, t, device=device) < args.reset_prob
    with_resets[:, 0] = True
    no_resets = torch.zeros(n, t, dtype=torch.bool, device=device)
    no_resets[:, 0] = True

    def module_call(module, is_init):
        td = TensorDict(x=x, is_init=is_init.unsqueeze(-1), batch_size=[n, t], device=device)
        return module(td)["y"]

    def fwd_bwd(fn):
        def run():
            fn().square().mean().backward()

        return run

    print(
        f"LSTM 1 layer, {args.features} -> {args.hidden}, batch [{n}, {t}], device {device} "
        f"({torch.get_num_threads()} CPU threads), forward + backward, mean of {args.repeats} runs"
    )
    for label, is_init in (
        (f"resets at p={args.reset_prob} ({int(with_resets[:, 1:].sum())} inside)", with_resets),
        ("no reset inside the slices", no_resets),
    ):
        baseline = torch_loop(fused.lstm, x, is_init)
        for module in (fused, python):
            torch.testing.assert_close(module_call(module, is_init), baseline, atol=1e-5, rtol=1e-4)
        t_loop = _time(
            fwd_bwd(lambda m=is_init: torch_loop(fused.lstm, x, m)), args.repeats, device
        )
        t_fused = _time(fwd_bwd(lambda m=is_init: module_call(fused, m)), args.repeats, device)
        t_python = _time(fwd_bwd(lambda m=is_init: module_call(python, m)), args.repeats, device)
        print(f"  {label}:")
        print(f"    torch.nn.LSTM loop over time        {t_loop * 1e3:8.1f} ms")
        print(
            f"    LSTMModule (fused)                  {t_fused * 1e3:8.1f} ms  "
            f"({t_loop / t_fused:.1f}x)"
        )
        print(
            f"    LSTMModule(python_based=True)       {t_python * 1e3:8.1f} ms  "
            f"({t_loop / t_python:.1f}x)"
        )


if __name__ == "__main__":
    main()
