"""Public API snapshots and the breaking-change check, one package at a time (griffe).

Each package's public surface (every public module, class, function and signature, as griffe
reads it from the sources) is recorded in ``tools/api/<package>.json.gz`` together with the
package version it belongs to. ``check`` compares the sources with that snapshot:

- no breaking change (additions are not breaking): passes;
- a breaking change (a removed name, a removed, renamed or reordered parameter, a changed
  default, ...) while the version in ``pyproject.toml`` is still the snapshot's: fails and
  lists each change;
- a breaking change with a bumped version and a ``### Changed``, ``### Removed`` or
  ``### Breaking`` entry under ``## Unreleased`` (or the new version's heading) in the
  package's CHANGELOG: passes, the break is declared.

The release script (``tools/release.py``) records a new snapshot when it releases a package.

Usage::

    uv run python tools/api_check.py check            # every package (what CI runs)
    uv run python tools/api_check.py check rl-core
    uv run python tools/api_check.py record rl-buffers
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path

import griffe
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _workspace import ROOT, Package, find_package, workspace_packages

DECLARING_SECTIONS = ("Changed", "Removed", "Breaking")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def load_sources(package: Package) -> griffe.Module:
    """The package's API as griffe reads it from its ``src/`` tree (static analysis, no import)."""
    module = griffe.load(
        package.import_name,
        search_paths=[package.directory / "src"],
        allow_inspection=False,
        resolve_aliases=False,
    )
    if not isinstance(module, griffe.Module):
        raise TypeError(f"api_check: {package.import_name} did not load as a module.")
    return module


def _strip(node: object, root: str) -> object:
    """Drops docstrings (not API) and makes file paths relative to the repository."""
    if isinstance(node, dict):
        return {k: _strip(v, root) for k, v in node.items() if k != "docstring"}
    if isinstance(node, list):
        return [_strip(v, root) for v in node]
    if isinstance(node, str) and node.startswith(root):
        return node[len(root) :]
    return node


def record(package: Package, root: Path = ROOT) -> Path:
    """Writes the package's current API as its snapshot; returns the snapshot path."""
    api = json.loads(json.dumps(load_sources(package), cls=griffe.JSONEncoder, full=False))
    payload = {"package": package.dist, "version": package.version, "api": _strip(api, f"{root}/")}
    path = package.snapshot_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(data, mtime=0))
    return path


def load_snapshot(path: Path) -> tuple[str, griffe.Module]:
    """The recorded version and API of a snapshot file."""
    payload = json.loads(gzip.decompress(path.read_bytes()))
    decoded = json.loads(json.dumps(payload["api"]), object_hook=griffe.json_decoder)
    # A decoded tree has no modules collection, which resolving its aliases needs: re-root it.
    collection = griffe.ModulesCollection()
    module = griffe.Module(decoded.name, filepath=decoded.filepath, modules_collection=collection)
    for name, member in decoded.members.items():
        module.set_member(name, member)
    module.exports = decoded.exports
    collection.set_member(module.path, module)
    return payload["version"], module


def breaking_changes(old: griffe.Module, new: griffe.Module) -> list[str]:
    """One line per breaking change from ``old`` to ``new``."""
    return [_ANSI.sub("", b.explain()) for b in griffe.find_breaking_changes(old, new)]


def changelog_declares_break(package: Package) -> bool:
    """``## Unreleased`` (or the current version's section) has a Changed/Removed/Breaking entry."""
    text = (package.directory / "CHANGELOG.md").read_text()
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    for section in sections[1:]:
        heading = section.splitlines()[0].strip()
        if heading != "Unreleased" and not heading.startswith(package.version):
            continue
        for sub in re.split(r"^### ", section, flags=re.MULTILINE)[1:]:
            title, _, body = sub.partition("\n")
            if title.strip() in DECLARING_SECTIONS and re.search(
                r"^\s*[-*] \S", body, re.MULTILINE
            ):
                return True
    return False


def check(package: Package, root: Path = ROOT) -> list[str]:
    """Problems that should fail CI for ``package``; empty when its API change is allowed."""
    path = package.snapshot_path(root)
    if not path.exists():
        return [
            f"{package.dist}: no API snapshot at {path.relative_to(root)}. Record one with "
            f"`uv run python tools/api_check.py record {package.dist}` and commit it."
        ]
    recorded, old = load_snapshot(path)
    changes = breaking_changes(old, load_sources(package))
    if not changes:
        return []
    bumped = Version(package.version) > Version(recorded)
    if bumped and changelog_declares_break(package):
        return []
    fix = []
    if not bumped:
        fix.append(f"bump the version in {package.dist}/pyproject.toml above {recorded}")
    if not changelog_declares_break(package):
        fix.append(
            "list the change under '### Changed' or '### Removed' in '## Unreleased' of its CHANGELOG.md"
        )
    header = (
        f"{package.dist} {package.version}: {len(changes)} breaking change(s) against the "
        f"{recorded} API snapshot. To ship them: {'; '.join(fix)}. Otherwise keep the old "
        f"names and signatures (additions are fine)."
    )
    return [header, *(f"  {line}" for line in changes)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("check", "record"))
    parser.add_argument("packages", nargs="*", help="distribution names; default: every package")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    packages = [find_package(root, d) for d in args.packages] or workspace_packages(root)
    if args.command == "record":
        for package in packages:
            print(
                f"recorded {package.dist} {package.version}: {record(package, root).relative_to(root)}"
            )
        return 0
    problems = [line for package in packages for line in check(package, root)]
    print(
        "\n".join(problems)
        if problems
        else f"api check: no unrecorded breaking change in {len(packages)} package(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
