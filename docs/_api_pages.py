"""MkDocs hook: writes the API reference pages (``api/<package>.md``) at build time.

One page per package, one section per public module (the package and each subpackage with an
``__all__``), listing exactly the names in that module's ``__all__``. A name a package
re-exports from one of its public subpackages is documented once, in the subpackage's
section. The pages are generated on every build, so they never fall behind the code.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {
    "rl_core": "rl-core",
    "rl_envs": "rl-envs",
    "rl_buffers": "rl-buffers",
    "rl_collectors": "rl-collectors",
    "rl_objectives": "rl-objectives",
    "rl_llm": "rl-llm",
    "rl_kernels": "rl-kernels",
}


def declared_all(init: Path) -> list[str]:
    """The names in a module's literal ``__all__`` (empty when it has none)."""
    for node in ast.parse(init.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(getattr(t, "id", None) == "__all__" for t in targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    return []


def public_modules(import_name: str) -> list[tuple[str, list[str]]]:
    """``(module, names)`` for the package and each public subpackage, in that order."""
    src = ROOT / "packages" / PACKAGES[import_name] / "src" / import_name
    subs = []
    for init in sorted(src.glob("*/__init__.py")):
        if not init.parent.name.startswith("_") and declared_all(init):
            subs.append((f"{import_name}.{init.parent.name}", declared_all(init)))
    in_subs = {name for _, names in subs for name in names}
    top = [n for n in declared_all(src / "__init__.py") if n not in in_subs]
    return [(import_name, top), *subs]


def page(import_name: str) -> str:
    lines = [
        f"# {import_name}",
        "",
        f"The public API of `{PACKAGES[import_name]}`, generated from its docstrings. "
        f"[What the package is and how to install it](../packages/{PACKAGES[import_name]}.md).",
        "",
    ]
    for module, names in public_modules(import_name):
        if not names:
            continue
        lines += [
            f"::: {module}",
            "    options:",
            "      members:",
            *[f"        - {name}" for name in names],
            "",
        ]
    return "\n".join(lines)


def on_files(files, config):
    for import_name in PACKAGES:
        files.append(File.generated(config, f"api/{import_name}.md", content=page(import_name)))
    return files
