"""Fixtures of the rl-kernels tests: random inputs in the kernel layout, and ``device``.

A test that takes a ``device`` argument runs on CPU and, marked ``gpu``, on CUDA (skipped
without a GPU or without the CUDA kernels).
"""

from __future__ import annotations

import pytest
import torch

import rl_kernels

CUDA = torch.cuda.is_available() and "cuda" in rl_kernels.devices()
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not CUDA, reason="needs a CUDA device and the CUDA kernels"),
        ],
    ),
]


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)


def _trajectory(
    steps: int,
    n: int,
    *,
    dtype: torch.dtype = torch.float64,
    done_prob: float = 0.2,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """``[T, N]`` value-op inputs; ``terminated`` is a subset of ``done``."""
    gen = torch.Generator().manual_seed(seed)

    def rand() -> torch.Tensor:
        return torch.randn(steps, n, generator=gen, dtype=dtype)

    done = torch.rand(steps, n, generator=gen) < done_prob
    return {
        "log_pi": rand() * 0.5 - 1.0,
        "log_mu": rand() * 0.5 - 1.0,
        "state_value": rand(),
        "next_state_value": rand(),
        "reward": rand(),
        "done": done,
        "terminated": done & (torch.rand(steps, n, generator=gen) < 0.5),
    }


def _op_args(name: str, data: dict[str, torch.Tensor]) -> tuple:
    """The arguments of value op ``name`` in schema order."""
    keys = {
        "generalized_advantage_estimate": (
            (0.97, 0.9),
            ("state_value", "next_state_value", "reward", "done", "terminated"),
        ),
        "td_lambda_return_estimate": (
            (0.97, 0.9),
            ("next_state_value", "reward", "done", "terminated"),
        ),
        "vtrace_advantage_estimate": (
            (0.97, 1.0, 0.9),
            ("log_pi", "log_mu", "state_value", "next_state_value", "reward", "done", "terminated"),
        ),
    }[name]
    return (*keys[0], *(data[k] for k in keys[1]))


@pytest.fixture
def trajectory():
    """``trajectory(T, N, dtype=..., done_prob=..., seed=...)``: random ``[T, N]`` inputs."""
    return _trajectory


@pytest.fixture
def op_args():
    """``op_args(name, data)``: the arguments of value op ``name`` in schema order."""
    return _op_args
