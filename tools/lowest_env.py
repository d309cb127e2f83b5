"""Creates an environment holding one package alone, its direct dependencies at their lowest.

The locked workspace tests every package with the newest versions its ranges allow. A range's
other end is a promise too: ``gymnasium>=1.0`` says the package works with gymnasium 1.0.0.
This environment holds the package, rl-core (siblings need it), all its extras and its
``test`` dependency group, each direct dependency at the lowest version it declares
(``uv pip install --resolution lowest-direct``), and nothing from the other packages, so its
fast tests prove both that it stands alone and that its lower bounds hold.

Usage (what ``.ci/run`` does for each package)::

    python tools/lowest_env.py rl-buffers .venvs/rl-buffers
    .venvs/rl-buffers/bin/python -m pytest -m "not slow" packages/rl-buffers
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _workspace as workspace  # a sibling module of this script


def install_command(package: workspace.Package, python: Path, root: Path) -> list[str]:
    """The ``uv pip install`` command line for ``package`` at its lowest direct versions."""
    pyproject = package.directory / "pyproject.toml"
    core = root / "packages" / "rl-core"
    paths = [str(core)] if core.exists() and core != package.directory else []
    groups = tomllib.loads(pyproject.read_text()).get("dependency-groups", {})
    test_group = ["--group", f"{pyproject}:test"] if "test" in groups else []
    return [
        "uv", "pip", "install", "--quiet", "--python", str(python),
        "--resolution", "lowest-direct",
        *paths, str(package.directory),
        "-r", str(pyproject), "--all-extras", *test_group,
    ]  # fmt: skip


def make_lowest_env(package: workspace.Package, env_dir: Path, root: Path = workspace.ROOT) -> Path:
    """Creates ``env_dir`` afresh for ``package``; returns its python.

    Raises:
        subprocess.CalledProcessError: the environment could not be created or resolved.
    """
    shutil.rmtree(env_dir, ignore_errors=True)
    subprocess.run(["uv", "venv", "--quiet", "--python", sys.executable, str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    subprocess.run(install_command(package, python, root), cwd=root, check=True)
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="distribution name, e.g. rl-buffers")
    parser.add_argument("env_dir", type=Path, help="where to create the environment")
    parser.add_argument("--root", type=Path, default=workspace.ROOT)
    args = parser.parse_args(argv)
    root = args.root.resolve()
    make_lowest_env(workspace.find_package(root, args.package), args.env_dir.resolve(), root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
