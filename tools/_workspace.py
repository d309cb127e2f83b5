"""The workspace's packages, as the tools in this folder see them (no import of the packages)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT_DIR = Path("tools") / "api"


@dataclass(frozen=True)
class Package:
    """A workspace package: distribution name, import name, version, where it lives."""

    dist: str
    import_name: str
    version: str
    directory: Path

    @classmethod
    def read(cls, directory: Path) -> Package:
        project = tomllib.loads((directory / "pyproject.toml").read_text())["project"]
        dist = project["name"]
        return cls(dist, dist.replace("-", "_"), project["version"], directory)

    def snapshot_path(self, root: Path) -> Path:
        return root / SNAPSHOT_DIR / f"{self.dist}.json.gz"

    def builds_against_torch(self) -> bool:
        """Whether building the package needs torch (a compiled extension such as rl-kernels)."""
        build = tomllib.loads((self.directory / "pyproject.toml").read_text()).get(
            "build-system", {}
        )
        return any(r.replace(" ", "").startswith("torch") for r in build.get("requires", []))

    def build_command(self, out_dir: Path) -> list[str]:
        """The ``uv build`` command for this package's wheel and sdist.

        A package that compiles against torch is built without isolation, in the environment
        this runs in, so the wheel matches that torch; ``--no-config`` because the workspace's
        ``match-runtime`` build setting only applies to installs, not to ``uv build``.
        """
        command = ["uv", "build", "--package", self.dist, "--out-dir", str(out_dir)]
        if self.builds_against_torch():
            command += ["--no-config", "--no-build-isolation"]
        return command


def workspace_packages(root: Path = ROOT) -> list[Package]:
    """Every package under ``packages/`` (the published ones), sorted by name."""
    return [
        Package.read(d)
        for d in sorted((root / "packages").iterdir())
        if (d / "pyproject.toml").exists()
    ]


def find_package(root: Path, dist: str) -> Package:
    for package in workspace_packages(root):
        if package.dist == dist:
            return package
    names = ", ".join(p.dist for p in workspace_packages(root))
    raise SystemExit(
        f"api_check: no package named {dist!r} under {root / 'packages'}; known: {names}."
    )
