"""Releases one package of the workspace: version, changelog, API snapshot, lock, build, tag.

Each package is versioned and released on its own, so a user can pin ``rl-core`` and
``rl-buffers`` and upgrade ``rl-llm`` alone. ``release.py rl-buffers 0.2.0``:

1. checks the version is higher than the current one and that ``## Unreleased`` in the
   package's CHANGELOG has entries (a release without notes is refused);
2. writes the version into ``packages/rl-buffers/pyproject.toml`` (its single source: the
   installed metadata and ``rl_buffers.__version__`` read it);
3. turns ``## Unreleased`` into ``## 0.2.0 (YYYY-MM-DD)`` under a fresh, empty ``## Unreleased``;
4. records the package's API snapshot (``tools/api_check.py record``) as the new baseline;
5. updates ``uv.lock``, builds the wheel and sdist into ``dist/`` (``uv build --package``);
6. commits these files and tags the commit ``rl-buffers==0.2.0``.

``--dry-run`` prints the plan and changes nothing; ``--no-build``, ``--no-git`` skip steps.
Publishing (``uv publish dist/rl_buffers-0.2.0*``) stays a deliberate, separate command.

Usage::

    uv run python tools/release.py rl-buffers 0.2.0
"""

from __future__ import annotations

import argparse
import datetime
import re
import subprocess
import sys
from pathlib import Path

from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import api_check

UNRELEASED = "## Unreleased"


class ReleaseError(RuntimeError):
    """A release precondition does not hold; nothing was changed."""


def bump_pyproject(text: str, new: str) -> str:
    """``text`` (a pyproject.toml) with the ``[project]`` version set to ``new``."""
    pattern = re.compile(
        r'(\[project\][^\[]*?^version\s*=\s*")([^"]+)(")', re.MULTILINE | re.DOTALL
    )
    if not pattern.search(text):
        raise ReleaseError('pyproject.toml: no `version = "..."` line in [project].')
    return pattern.sub(lambda m: f"{m.group(1)}{new}{m.group(3)}", text, count=1)


def release_changelog(text: str, version: str, date: str) -> str:
    """``text`` (a CHANGELOG.md) with Unreleased renamed to ``version (date)`` under a new one.

    Raises:
        ReleaseError: no ``## Unreleased`` heading, or nothing listed under it.
    """
    start = text.find(f"{UNRELEASED}\n")
    if start < 0:
        raise ReleaseError(f"CHANGELOG.md: no '{UNRELEASED}' heading to release.")
    body_start = start + len(UNRELEASED) + 1
    following = re.search(r"^## ", text[body_start:], re.MULTILINE)
    body = text[body_start : body_start + following.start()] if following else text[body_start:]
    if not re.search(r"^\s*[-*] \S", body, re.MULTILINE):
        raise ReleaseError(
            f"CHANGELOG.md: '{UNRELEASED}' lists no change; write the release notes first."
        )
    return f"{text[:start]}{UNRELEASED}\n\n## {version} ({date})\n{text[body_start:]}"


def _run(command: list[str], root: Path) -> None:
    print("+", " ".join(command))
    subprocess.run(command, cwd=root, check=True)


def release(
    dist: str,
    version: str,
    *,
    root: Path = api_check.ROOT,
    date: str | None = None,
    build: bool = True,
    git: bool = True,
    dry_run: bool = False,
) -> list[Path]:
    """Releases ``dist`` as ``version`` (see the module docstring); returns the files it changed.

    Raises:
        ReleaseError: the version is not higher, the changelog has no notes, or git is dirty.
    """
    package = api_check.find_package(root, dist)
    try:
        new = Version(version)
    except InvalidVersion as err:
        raise ReleaseError(f"{version!r} is not a PEP 440 version (expected e.g. 0.2.0).") from err
    if new <= Version(package.version):
        raise ReleaseError(f"{dist}: {version} is not higher than the current {package.version}.")
    if git and not dry_run:
        status = subprocess.run(
            ["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, check=True
        )
        if status.stdout.strip():
            raise ReleaseError("the git tree has uncommitted changes; commit or stash them first.")
    pyproject = package.directory / "pyproject.toml"
    changelog = package.directory / "CHANGELOG.md"
    new_pyproject = bump_pyproject(pyproject.read_text(), version)
    new_changelog = release_changelog(
        changelog.read_text(), version, date or datetime.date.today().isoformat()
    )
    tag = f"{dist}=={version}"
    if dry_run:
        print(f"would release {dist} {package.version} -> {version}, tag {tag}")
        return []
    pyproject.write_text(new_pyproject)
    changelog.write_text(new_changelog)
    snapshot = api_check.record(api_check.find_package(root, dist), root)
    changed = [pyproject, changelog, snapshot]
    if build:
        _run(["uv", "lock"], root)  # the lock records each member's version
        changed.append(root / "uv.lock")
        _run(package.build_command(Path("dist")), root)
    if git:
        _run(["git", "add", *(str(p.relative_to(root)) for p in changed)], root)
        _run(["git", "commit", "-q", "-m", f"release {dist} {version}"], root)
        _run(["git", "tag", "-a", tag, "-m", f"{dist} {version}"], root)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="distribution name, e.g. rl-buffers")
    parser.add_argument("version", help="the new version, e.g. 0.2.0")
    parser.add_argument("--root", type=Path, default=api_check.ROOT, help="repository root")
    parser.add_argument("--date", help="release date (default: today)")
    parser.add_argument("--no-build", action="store_true", help="skip uv lock/uv build")
    parser.add_argument("--no-git", action="store_true", help="skip the commit and the tag")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    args = parser.parse_args(argv)
    try:
        release(
            args.package,
            args.version,
            root=args.root.resolve(),
            date=args.date,
            build=not args.no_build,
            git=not args.no_git,
            dry_run=args.dry_run,
        )
    except ReleaseError as err:
        print(f"release: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
