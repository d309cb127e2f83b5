"""Discovery of kernel packages through the ``rl_core.ops`` entry-point group."""

from __future__ import annotations

import subprocess
import sys
import warnings
from importlib.metadata import EntryPoint

import pytest
import torch

from rl_core import ops
from rl_core.ops import kernel_packages


@pytest.fixture
def fake_entry_points(monkeypatch):
    """Replaces the installed entry points by the given ones, with nothing loaded yet."""

    def install(*values: tuple[str, str]) -> None:
        points = [EntryPoint(name=n, value=v, group=ops.ENTRY_POINT_GROUP) for n, v in values]
        seen_groups = []

        def entry_points(*, group):
            seen_groups.append(group)
            return points

        monkeypatch.setattr(kernel_packages, "entry_points", entry_points)
        monkeypatch.setattr(kernel_packages, "_loaded", None)
        install.groups = seen_groups

    return install


def test_entry_point_modules_and_callables_load_once(fake_entry_points, monkeypatch):
    calls = []
    monkeypatch.setattr("math.rl_core_test_register", lambda: calls.append(1), raising=False)
    fake_entry_points(("plain", "json"), ("hook", "math:rl_core_test_register"))
    assert ops.load_kernel_packages() == ("plain", "hook")
    assert ops.load_kernel_packages() == ("plain", "hook")
    assert calls == [1]
    assert fake_entry_points.groups == ["rl_core.ops"]


def test_a_failing_kernel_package_warns_once_and_the_ops_still_run(fake_entry_points):
    fake_entry_points(("broken", "rl_core_no_such_kernel_package"), ("plain", "json"))
    x = torch.randn(4, 2, dtype=torch.float64)
    flags = torch.zeros(4, 2, dtype=torch.bool)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The first wrapper call loads the kernel packages; later calls do not try again.
        advantage, _ = ops.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, time_dim=0)
        ops.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, time_dim=0)
        assert ops.load_kernel_packages() == ("plain",)
    ours = [w for w in caught if issubclass(w.category, ops.KernelLoadWarning)]
    assert len(ours) == 1
    message = str(ours[0].message)
    assert "kernel package broken (rl_core_no_such_kernel_package) failed to load" in message
    assert f"with torch {torch.__version__}" in message
    assert "ModuleNotFoundError" in message
    assert "reference kernels are used instead" in message
    expected, _ = ops.reference.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, flags)
    torch.testing.assert_close(advantage, expected)


@pytest.mark.parametrize(
    "call",
    [
        lambda: ops.td_lambda_return_estimate(
            0.9, 0.9, torch.zeros(2, 1), torch.zeros(2, 1), torch.zeros(2, 1, dtype=torch.bool)
        ),
        lambda: ops.gather_rows([torch.zeros(2, 1)], torch.tensor([1])),
    ],
)
def test_every_wrapper_triggers_discovery(fake_entry_points, call):
    fake_entry_points(("plain", "json"))
    call()
    assert kernel_packages._loaded == ("plain",)


def test_import_of_rl_core_loads_no_kernel_package():
    # Discovery waits for the first op call: importing rl_core stays light.
    code = (
        "import sys, rl_core; from rl_core.ops import kernel_packages; "
        "print(kernel_packages._loaded, 'rl_kernels' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["None", "False"]
