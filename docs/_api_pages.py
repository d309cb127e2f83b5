"""MkDocs hook: writes the API reference pages (``api/<package>/...``) at build time.

One page per public module: ``api/<package>/index.md`` for the names the package itself
exports, ``api/<package>/<subpackage>.md`` for each subpackage with an ``__all__``, each page
listing exactly the names in that module's ``__all__``. A name a package re-exports from one
of its public subpackages is documented once, on the subpackage's page. The navigation's
"API reference" section is filled with these pages (one group per package). The pages are
generated on every build, so they never fall behind the code.
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


def page_path(import_name: str, module: str) -> str:
    """Where ``module``'s page sits: ``api/rl_core/index.md``, ``api/rl_core/envs.md``."""
    if module == import_name:
        return f"api/{import_name}/index.md"
    return f"api/{import_name}/{module.rsplit('.', 1)[1]}.md"


def module_page(import_name: str, module: str, names: list[str]) -> str:
    lines = [f"# {module}", ""]
    if module == import_name:
        package = PACKAGES[import_name]
        lines += [
            f"The public API of `{package}`, generated from its docstrings, one page per public "
            f"module. [What the package is and how to install it](../../packages/{package}.md).",
            "",
        ]
        subs = [sub for sub, sub_names in public_modules(import_name)[1:] if sub_names]
        if subs:
            lines += ["Modules:", ""]
            lines += [f"- [`{sub}`]({sub.rsplit('.', 1)[1]}.md)" for sub in subs]
            lines.append("")
    if names:
        lines += [
            f"::: {module}",
            "    options:",
            "      members:",
            *[f"        - {name}" for name in names],
            "",
        ]
    return "\n".join(lines)


def pages(import_name: str) -> dict[str, str]:
    """``{path: markdown}`` of the package's pages, the package's own page first."""
    modules = public_modules(import_name)
    out = {}
    for index, (module, names) in enumerate(modules):
        if index == 0 or names:
            out[page_path(import_name, module)] = module_page(import_name, module, names)
    return out


def nav() -> list[dict]:
    """The "API reference" section: a group per package, a page per public module."""
    groups = []
    for import_name in PACKAGES:
        entries = []
        for module, names in public_modules(import_name):
            if module == import_name or names:
                entries.append({module: page_path(import_name, module)})
        groups.append({import_name: entries})
    return groups


def on_config(config):
    for item in config["nav"]:
        if isinstance(item, dict) and "API reference" in item:
            item["API reference"] = nav()
    return config


def on_files(files, config):
    for import_name in PACKAGES:
        for path, content in pages(import_name).items():
            files.append(File.generated(config, path, content=content))
    return files
