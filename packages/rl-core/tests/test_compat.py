"""The version guard: out of range raises by name, an untested 0.x minor warns, in range is silent."""

import subprocess
import sys
import warnings

import pytest
import torch

from rl_core.compat import (
    CompatibilityWarning,
    IncompatibleVersionError,
    check_dependency,
    check_installed,
    check_version,
    declared_range,
)


def test_in_range_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_version("rl-buffers", "rl-core", "0.1.7", ">=0.1,<0.2")
        check_version("rl-core", "torch", "2.13.0+cu130", ">=2.13")
        check_version("rl-core", "torch", "2.14.0.dev20261101", ">=2.13")


@pytest.mark.parametrize("installed", ["0.0.9", "0.2.0", "1.0.0"])
def test_out_of_range_raises_naming_both_versions_and_the_fix(installed):
    with pytest.raises(
        IncompatibleVersionError, match=r"rl-buffers needs rl-core>=0\.1,<0\.2"
    ) as info:
        check_version("rl-buffers", "rl-core", installed, ">=0.1,<0.2")
    message = str(info.value)
    assert f"rl-core {installed} is installed" in message
    assert "pip install 'rl-core>=0.1,<0.2'" in message
    assert "pip install -U rl-buffers" in message
    assert isinstance(info.value, ImportError)


def test_newer_zero_minor_inside_a_wide_range_warns():
    with pytest.warns(
        CompatibilityWarning, match=r"written against rl-core 0\.1 .* 0\.3\.2 is a newer 0\.x minor"
    ):
        check_version("rl-llm", "rl-core", "0.3.2", ">=0.1,<1")


def test_newer_minor_after_one_point_oh_is_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_version("rl-llm", "rl-core", "1.4.0", ">=1.1,<2")


def test_declared_range_reads_installed_metadata():
    assert set(str(declared_range("rl-core", "torch")).split(",")) == {">=2.13", "<2.14"}
    assert declared_range("rl-core", "gymnasium") is None
    assert declared_range("not-a-package-here", "torch") is None
    # an extra's requirement is not a requirement of the plain install
    assert declared_range("rl-envs", "gymnasium") is None


def test_check_dependency_and_installed_pass_for_this_environment():
    check_dependency("rl-core", "torch", torch.__version__)
    check_installed("rl-core", "torch", "tensordict", "numpy", "not-installed-anywhere")


def test_check_dependency_raises_for_an_out_of_range_version():
    with pytest.raises(
        IncompatibleVersionError, match=r"rl-core needs tensordict>=0\.15\.3,<0\.16"
    ):
        check_dependency("rl-core", "tensordict", "0.14.0")


def test_import_rl_core_fails_by_name_when_tensordict_is_out_of_range(tmp_path):
    # A real import in a fresh interpreter, with the installed tensordict metadata made to
    # report a version below rl-core's floor: the guard must stop the import with its message.
    code = (
        "import importlib.metadata as m\n"
        "real = m.version\n"
        "m.version = lambda name: '0.14.0' if name == 'tensordict' else real(name)\n"
        "import rl_core\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode != 0
    assert (
        "IncompatibleVersionError: rl-core needs tensordict>=0.15.3,<0.16, but tensordict 0.14.0 is installed."
        in out.stderr
    )
