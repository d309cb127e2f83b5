"""Loading the binary: the torch-version check, the fail-soft path and discovery by rl_core."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

import rl_kernels

PACKAGE = Path(rl_kernels.__file__).resolve().parent

# Run in a fresh interpreter with a copy of rl_kernels first on sys.path: the ops are called
# through rl_core only (no import of rl_kernels), so the entry point is what loads the copy.
_PROBE = """
import warnings, torch
warnings.simplefilter("always")
from rl_core import ops
from rl_core.ops import reference
x = torch.randn(5, 3, dtype=torch.float64)
flags = torch.zeros(5, 3, dtype=torch.bool)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    adv, _ = ops.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, time_dim=0)
    ops.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, time_dim=0)
expected, _ = reference.generalized_advantage_estimate(0.9, 0.9, x, x, x, flags, flags)
torch.testing.assert_close(adv, expected)
import rl_kernels
assert rl_kernels.__file__.startswith({copy!r}), rl_kernels.__file__
ours = [w for w in caught if issubclass(w.category, ops.KernelLoadWarning)]
print(len(ours))
for w in ours:
    print(str(w.message))
print("CPU kernel:", torch._C._dispatch_has_kernel_for_dispatch_key(
    "rl_core::generalized_advantage_estimate", "CPU"))
print("loaded:", rl_kernels.loaded())
"""


def _keep(copy: Path) -> None:
    pass


def _other_torch(copy: Path) -> None:
    info = json.loads((copy / "_build_info.json").read_text())
    (copy / "_build_info.json").write_text(json.dumps({**info, "torch": "2.0.0"}))


def _binaries(copy: Path) -> list[Path]:
    found = [copy / f"_C{s}" for s in importlib.machinery.EXTENSION_SUFFIXES]
    return [binary for binary in found if binary.is_file()]


def _corrupt(copy: Path) -> None:
    for binary in _binaries(copy):
        binary.write_bytes(b"not a shared library")


def _truncated(copy: Path) -> None:
    # Cut inside the code: the dynamic loader maps segments past the end of the file, and
    # touching them raised SIGBUS on import (issue 34).
    for binary in _binaries(copy):
        with open(binary, "r+b") as f:
            f.truncate(binary.stat().st_size // 2)


def _bad_record(copy: Path) -> None:
    (copy / "_build_info.json").write_text('{"torch": "2.13.0", "cuda": nu')


@pytest.fixture(scope="module")
def probes(tmp_path_factory) -> dict[str, list[str]]:
    """The probe's output lines for each edited copy; the interpreters run side by side."""
    python_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    running = {}
    edits = {
        "keep": _keep,
        "other_torch": _other_torch,
        "corrupt": _corrupt,
        "truncated": _truncated,
        "bad_record": _bad_record,
    }
    for name, edit in edits.items():
        root = tmp_path_factory.mktemp(name)
        copy = root / "rl_kernels"
        shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
        edit(copy)
        running[name] = subprocess.Popen(
            [sys.executable, "-c", _PROBE.format(copy=str(copy))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(root), *python_path])},
        )
    results = {}
    for name, process in running.items():
        out, err = process.communicate(timeout=600)
        # A crash (SIGBUS, SIGSEGV) shows as a negative return code: the test of that copy
        # fails with the interpreter's last words, the others still run.
        results[name] = [f"exit {process.returncode}", *out.strip().splitlines(), err[-2000:]]
    return results


def _lines(probes: dict[str, list[str]], name: str) -> list[str]:
    result = probes[name]
    assert result[0] == "exit 0", f"the {name} probe died: {result[0]}; stderr:\n{result[-1]}"
    return result[1:-1]


def test_rl_core_loads_the_kernels_through_the_entry_point(probes):
    assert _lines(probes, "keep") == ["0", "CPU kernel: True", "loaded: True"]


def test_a_binary_built_for_another_torch_warns_once_and_is_not_loaded(probes):
    lines = _lines(probes, "other_torch")
    assert lines[0] == "1"
    assert "rl_kernels was built against torch 2.0.0" in lines[1]
    assert f"torch {torch.__version__} is running" in lines[1]
    assert "reference kernels" in lines[1]
    assert lines[2:] == ["CPU kernel: False", "loaded: False"]


def test_a_broken_binary_warns_once_and_falls_back(probes):
    lines = _lines(probes, "corrupt")
    assert lines[0] == "1"
    assert f"running torch {torch.__version__}" in lines[1]
    assert "rl_kernels" in lines[1]
    assert lines[2:] == ["CPU kernel: False", "loaded: False"]


def test_a_truncated_binary_warns_once_and_falls_back(probes):
    lines = _lines(probes, "truncated")
    assert lines[0] == "1"
    assert "is damaged" in lines[1]
    assert "the file is truncated" in lines[1]
    assert "reinstall rl-kernels" in lines[1]
    assert lines[2:] == ["CPU kernel: False", "loaded: False"]


def test_a_corrupt_build_record_warns_once_and_falls_back(probes):
    lines = _lines(probes, "bad_record")
    assert lines[0] == "1"
    assert "_build_info.json is damaged" in lines[1]
    assert "reinstall rl-kernels" in lines[1]
    assert lines[2:] == ["CPU kernel: False", "loaded: False"]


def test_load_state_of_this_process():
    assert rl_kernels.loaded()
    assert rl_kernels.load_error() is None
    assert rl_kernels.built_torch_version() == torch.__version__
    assert rl_kernels.devices()[0] == "cpu"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_kernels_are_built_where_a_gpu_is():
    assert rl_kernels.devices() == ("cpu", "cuda")
    assert torch._C._dispatch_has_kernel_for_dispatch_key(
        "rl_core::generalized_advantage_estimate", "CUDA"
    )


def test_a_package_installed_without_its_binary_warns_once(monkeypatch, tmp_path):
    from rl_core.ops import KernelLoadWarning
    from rl_kernels import _loader

    (tmp_path / "_build_info.json").write_text(json.dumps({"torch": torch.__version__}))
    monkeypatch.setattr(_loader, "_HERE", tmp_path)
    monkeypatch.setattr(_loader, "_STATE", {"loaded": False, "error": None, "info": None})
    with pytest.warns(KernelLoadWarning, match=r"no compiled library _C.*reinstall rl-kernels"):
        assert _loader.load() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _loader.load() is False  # tried once: no second warning
    assert not _loader.loaded()
    assert "no compiled library" in _loader.load_error()
    assert _loader.devices() == ()
