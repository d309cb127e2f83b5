"""Rewrites TorchRL imports in a user's code to this stack's packages.

Public names here follow TorchRL's, so most code moves by changing imports alone::

    from torchrl.envs import GymEnv, StepCounter, TransformedEnv
    # becomes
    from rl_core import StepCounter, TransformedEnv
    from rl_envs import GymEnv

The import map is data, ``tools/torchrl_map.toml``, shared with the test that checks every
public name of every package is placed in it and with MIGRATING.md's table. What the
rewrite does, per ``from torchrl... import ...`` statement:

- a name in ``[moved]`` is imported from its module here under the same name;
- a name in ``[renamed]`` is imported under its new name, aliased to the name the code
  uses (``from rl_envs import EnvMetadata as EnvMetaData``), so the rest of the file runs;
- a name the map does not know stays in a ``from torchrl... import`` line, and is reported;
- ``import torchrl...`` (attribute access such as ``torchrl.envs.GymEnv``) is reported with
  its line, not rewritten: the attribute uses need a person.

Usage::

    python tools/migrate_torchrl.py path/to/code [more paths]   # rewrites in place
    python tools/migrate_torchrl.py --check path/to/code        # exit 1 if a file would change
    python tools/migrate_torchrl.py --update-migrating          # MIGRATING.md's table from the map
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

MAP_PATH = Path(__file__).resolve().with_name("torchrl_map.toml")
MIGRATING_PATH = Path(__file__).resolve().parents[1] / "MIGRATING.md"
TABLE_MARKERS = ("<!-- import-map:start -->\n", "\n<!-- import-map:end -->")


@dataclass(frozen=True)
class Target:
    """Where a TorchRL name lives here."""

    torchrl_module: str
    module: str
    name: str
    note: str = ""


@dataclass
class ImportMap:
    """The parsed ``torchrl_map.toml``: TorchRL names to targets, and names new here."""

    targets: dict[str, Target]
    new: dict[str, tuple[str, str]]

    @classmethod
    def load(cls, path: Path = MAP_PATH) -> ImportMap:
        data = tomllib.loads(path.read_text())
        targets = {
            name: Target(tr, here, name) for name, (tr, here) in data.get("moved", {}).items()
        }
        for name, (tr, here, new_name, why) in data.get("renamed", {}).items():
            targets[name] = Target(tr, here, new_name, why)
        new = {name: (module, what) for name, (module, what) in data.get("new", {}).items()}
        return cls(targets, new)

    def placed_names(self) -> set[str]:
        """Every name here the map places: targets of moved/renamed entries and new names."""
        return {t.name for t in self.targets.values()} | set(self.new)

    def markdown_table(self) -> str:
        """The import table of MIGRATING.md, sorted by TorchRL module then name."""
        rows = ["| TorchRL | here | note |", "|---|---|---|"]
        for torchrl_name, t in sorted(
            self.targets.items(), key=lambda kv: (kv[1].torchrl_module, kv[0])
        ):
            rows.append(
                f"| `{t.torchrl_module}.{torchrl_name}` | `{t.module}.{t.name}` | {t.note} |"
            )
        return "\n".join(rows)


@dataclass
class Report:
    """What a rewrite of one file did and could not do."""

    path: str
    rewritten: int = 0
    unknown: list[tuple[int, str]] = field(default_factory=list)
    unhandled: list[tuple[int, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [
            f"{self.path}:{line}: no rl-stack name for torchrl's {name}; left as is"
            for line, name in self.unknown
        ]
        out += [
            f"{self.path}:{line}: `{text}` needs a person (attribute access is not rewritten)"
            for line, text in self.unhandled
        ]
        return out


def _is_torchrl(module: str | None) -> bool:
    return module is not None and (module == "torchrl" or module.startswith("torchrl."))


def _import_line(indent: str, module: str, names: list[str]) -> str:
    joined = ", ".join(names)
    line = f"{indent}from {module} import {joined}"
    if len(line) <= 100:
        return line
    body = "".join(f"{indent}    {n},\n" for n in names)
    return f"{indent}from {module} import (\n{body}{indent})"


def rewrite_source(
    source: str, import_map: ImportMap, path: str = "<string>"
) -> tuple[str, Report]:
    """``source`` with its TorchRL imports rewritten, and the report of what was done.

    Raises:
        SyntaxError: ``source`` is not valid Python (nothing is rewritten).
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    report = Report(path)
    edits: list[tuple[ast.ImportFrom, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_torchrl(alias.name):
                    report.unhandled.append((node.lineno, f"import {alias.name}"))
            continue
        if not isinstance(node, ast.ImportFrom) or node.level or not _is_torchrl(node.module):
            continue
        prefix = lines[node.lineno - 1][: node.col_offset]
        indent = prefix if prefix.isspace() or not prefix else " " * node.col_offset
        grouped: dict[str, list[str]] = defaultdict(list)
        kept: list[str] = []
        for alias in node.names:
            target = import_map.targets.get(alias.name)
            if target is None:
                report.unknown.append((node.lineno, f"{node.module}.{alias.name}"))
                kept.append(
                    alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
                )
                continue
            bound = alias.asname or alias.name
            grouped[target.module].append(
                target.name if bound == target.name else f"{target.name} as {bound}"
            )
        if not grouped:
            continue
        new_lines = [
            _import_line(indent, module, names) for module, names in sorted(grouped.items())
        ]
        if kept:
            new_lines.append(_import_line(indent, node.module or "torchrl", kept))
        # the first line's indentation stays in place (it is before col_offset)
        edits.append((node, "\n".join(new_lines)[len(indent) :]))
        report.rewritten += 1
    for node, replacement in sorted(edits, key=lambda e: e[0].lineno, reverse=True):
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        head = lines[first][: node.col_offset]
        tail = lines[last][node.end_col_offset :]  # a trailing comment, `; ...`, the newline
        lines[first : last + 1] = [f"{head}{replacement}{tail}"]
    return "".join(lines), report


PACKAGES = (
    "rl_core",
    "rl_envs",
    "rl_buffers",
    "rl_collectors",
    "rl_objectives",
    "rl_llm",
    "rl_kernels",
)


def public_names(packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Every public name the installed packages export: the ``__all__`` of each public module.

    A public module is the package or any module under it with no ``_``-prefixed part in its
    dotted path (``rl_objectives.trainers``, ``rl_core.modules.mlp``), whether or not the
    package re-exports it. Module objects and ``__version__`` are not names to place.

    Returns:
        ``{module path: names}``.
    """
    import importlib
    import pkgutil
    import types

    found: dict[str, set[str]] = {}
    for package in packages:
        root = importlib.import_module(package)
        modules = [root.__name__]
        for info in pkgutil.walk_packages(root.__path__, f"{root.__name__}."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                modules.append(info.name)
        for name in modules:
            module = importlib.import_module(name)
            exported = getattr(module, "__all__", ())
            found[name] = {
                n
                for n in exported
                if n != "__version__" and not isinstance(getattr(module, n), types.ModuleType)
            }
    return found


def unplaced_names(import_map: ImportMap, exported: dict[str, set[str]]) -> list[str]:
    """``module.name`` of each exported public name that the map does not place."""
    placed = import_map.placed_names()
    return sorted(
        f"{module}.{name}" for module, names in exported.items() for name in names - placed
    )


def update_migrating(import_map: ImportMap, path: Path = MIGRATING_PATH) -> bool:
    """Writes the map's table between MIGRATING.md's markers; returns whether it changed."""
    text = path.read_text()
    start, end = TABLE_MARKERS
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    updated = f"{head}{start}{import_map.markdown_table()}{end}{tail}"
    path.write_text(updated)
    return updated != text


def iter_python_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.py") if ".venv" not in p.parts))
        elif path.suffix == ".py":
            files.append(path)
        else:
            raise SystemExit(f"migrate_torchrl: {path} is neither a directory nor a .py file.")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories to rewrite")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a file would change"
    )
    parser.add_argument("--table", action="store_true", help="print MIGRATING.md's import table")
    parser.add_argument(
        "--update-migrating", action="store_true", help="write the table into MIGRATING.md"
    )
    parser.add_argument("--map", type=Path, default=MAP_PATH, help="the import map (TOML)")
    args = parser.parse_args(argv)
    import_map = ImportMap.load(args.map)
    if args.table:
        print(import_map.markdown_table())
        return 0
    if args.update_migrating:
        print("MIGRATING.md", "updated" if update_migrating(import_map) else "already up to date")
        return 0
    would_change = 0
    for file in iter_python_files(args.paths):
        source = file.read_text()
        try:
            new, report = rewrite_source(source, import_map, str(file))
        except SyntaxError as err:
            print(
                f"{file}: not valid Python ({err.msg}, line {err.lineno}); skipped", file=sys.stderr
            )
            continue
        for line in report.lines():
            print(line, file=sys.stderr)
        if new != source:
            would_change += 1
            if not args.check:
                file.write_text(new)
            print(
                f"{'would rewrite' if args.check else 'rewrote'} {file}: {report.rewritten} import(s)"
            )
    return 1 if args.check and would_change else 0


if __name__ == "__main__":
    sys.exit(main())
