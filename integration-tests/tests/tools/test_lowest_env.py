"""tools/lowest_env.py: direct dependencies at the lowest declared version, so a lower bound that
does not hold fails the package's import there."""

import shutil
import subprocess

import pytest

LICENSES_CODE = "from packaging.licenses import canonicalize_license_expression\n"


@pytest.fixture
def needs_uv():
    if shutil.which("uv") is None:
        pytest.skip("needs uv on PATH (the workspace tool)")


def _declare(demo_workspace, requirement):
    pyproject = demo_workspace / "packages" / "rl-demo" / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("dependencies = []", f'dependencies = ["{requirement}"]')
    )
    init = demo_workspace / "packages" / "rl-demo" / "src" / "rl_demo" / "__init__.py"
    init.write_text(LICENSES_CODE + init.read_text())  # packaging.licenses is new in packaging 24.2


def _import_demo(python):
    return subprocess.run(
        [str(python), "-c", "import rl_demo"], capture_output=True, text=True, check=False
    )


def test_a_lower_bound_that_does_not_hold_fails(
    needs_uv, lowest_env, api_check, demo_workspace, tmp_path
):
    _declare(demo_workspace, "packaging>=23")
    python = lowest_env.make_lowest_env(
        api_check.find_package(demo_workspace, "rl-demo"), tmp_path / "env", demo_workspace
    )
    version = subprocess.run(
        [str(python), "-c", "import packaging; print(packaging.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.strip() == "23.0"
    result = _import_demo(python)
    assert result.returncode != 0
    assert "No module named 'packaging.licenses'" in result.stderr


def test_a_lower_bound_that_holds_passes(needs_uv, lowest_env, api_check, demo_workspace, tmp_path):
    _declare(demo_workspace, "packaging>=24.2")
    python = lowest_env.make_lowest_env(
        api_check.find_package(demo_workspace, "rl-demo"), tmp_path / "env", demo_workspace
    )
    assert _import_demo(python).returncode == 0
