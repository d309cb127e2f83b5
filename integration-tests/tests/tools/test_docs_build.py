"""The documentation build CI runs: strict, with nothing that hides its warnings, and the
benchmarks page's plots present where the site serves them (docs/_site_files.py)."""

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def mkdocs_build_commands() -> list[list[str]]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [
        shlex.split(line) for line in lines if "mkdocs build" in line and not line.startswith("#")
    ]


def test_ci_builds_the_site_strictly_with_every_warning_shown():
    commands = mkdocs_build_commands()
    assert len(commands) == 1, commands
    words = commands[0]
    assert "--strict" in words
    # --quiet (or -q) lowers mkdocs' log level below WARNING: --strict then counts nothing
    assert not {"--quiet", "-q"} & set(words), words


def test_the_benchmarks_page_images_exist_where_the_site_serves_them():
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert images
    for link in images:
        assert link.startswith("results/"), link
        assert link.endswith(".png"), link
        assert (ROOT / "benchmarks" / link).is_file(), link


def code_blocks(markdown: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", markdown, re.S)


def test_install_page_uses_uv_pip_after_uv_venv():
    """In an environment made by ``uv venv`` there is no pip: a bare ``pip`` would be the global
    Python's, so a block that makes one installs with ``uv pip``."""
    page = (ROOT / "docs" / "install.md").read_text()
    checked = 0
    for block in code_blocks(page):
        lines = [line.strip() for line in block.splitlines()]
        made = [i for i, line in enumerate(lines) if line.startswith("uv venv")]
        if not made:
            continue
        installs = [line for line in lines[made[0] :] if line.split()[1:2] == ["install"]]
        installs += [line for line in lines[made[0] :] if line.startswith("uv pip install")]
        assert installs, block
        assert all(line.startswith("uv pip install") for line in installs), block
        checked += 1
    assert checked


def test_readme_package_table_does_not_present_unpublished_packages_as_installable():
    readme = (ROOT / "README.md").read_text()
    table = [line for line in readme.splitlines() if line.startswith("| [rl-")]
    assert len(table) == 7
    header = next(line for line in readme.splitlines() if line.startswith("| package |"))
    assert "once published" in header
    assert "None of the seven is published yet" in readme


def load_hook(name: str):
    """A hook module of ``docs/`` (they need the docs group: mkdocs, griffe)."""
    pytest.importorskip("mkdocs", reason="uv run --group docs pytest integration-tests/tests/tools")
    spec = importlib.util.spec_from_file_location(f"docs_{name}", ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_become_optional_links_titled_like_sphinx():
    roles = load_hook("_roles")
    text = "Use :class:`~rl_objectives.ClipPPOLoss` or :meth:`rl_core.EnvBase.rollout`."
    assert roles.rewrite_roles(text, lambda target: target) == (
        'Use <autoref identifier="rl_objectives.ClipPPOLoss" optional><code>ClipPPOLoss'
        '</code></autoref> or <autoref identifier="rl_core.EnvBase.rollout" optional><code>'
        "rl_core.EnvBase.rollout</code></autoref>."
    )
    assert roles.rewrite_roles("no :role here", str.upper) == "no :role here"


def test_a_relative_role_resolves_in_the_scope_of_its_docstring(tmp_path):
    roles = load_hook("_roles")
    import griffe

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from pkg.writers import Writer\n")
    (package / "writers.py").write_text(
        "from collections import OrderedDict\n\n\n"
        "class Writer:\n"
        '    """Writes; see :meth:`write_at` and :class:`OrderedDict`."""\n\n'
        "    def write_at(self):\n"
        '        """Writes at; :class:`Writer` and :meth:`Writer.write_at`."""\n'
    )
    loaded = griffe.load(
        "pkg", search_paths=[str(tmp_path)], extensions=griffe.load_extensions(roles.SphinxRoles)
    )
    writer = loaded["writers.Writer"]
    assert 'identifier="pkg.writers.Writer.write_at"' in writer.docstring.value
    assert 'identifier="collections.OrderedDict"' in writer.docstring.value
    method = writer["write_at"].docstring.value
    assert 'identifier="pkg.writers.Writer"' in method
    assert 'identifier="pkg.writers.Writer.write_at"' in method


def test_package_pages_are_the_readmes_with_the_sites_links():
    site = load_hook("_site_files")
    page = site.package_page("rl-buffers")
    readme = (ROOT / "packages" / "rl-buffers" / "README.md").read_text()
    first_heading = readme.splitlines()[0]
    assert page.startswith(first_heading)
    assert len(page) > 0.9 * len(readme)
    assert "](../../docs/" not in page
    assert "[install](../install.md)" in page
    assert (
        site.site_link("../../benchmarks/rl_buffers/README.md", "rl-buffers") == "../benchmarks.md"
    )
    assert site.site_link("src/rl_buffers/__init__.py", "rl-buffers") is None
    assert page.rstrip().endswith("[`rl_buffers`](../api/rl_buffers/index.md).")


def test_the_api_reference_has_a_page_per_public_module():
    api = load_hook("_api_pages")
    pages = api.pages("rl_buffers")
    assert next(iter(pages)) == "api/rl_buffers/index.md"
    assert "api/rl_buffers/storages.md" in pages
    assert pages["api/rl_buffers/storages.md"].startswith("# rl_buffers.storages\n")
    assert "::: rl_buffers.storages" in pages["api/rl_buffers/storages.md"]
    assert "::: rl_buffers.storages" not in pages["api/rl_buffers/index.md"]
    groups = {name: entries for group in api.nav() for name, entries in group.items()}
    assert set(groups) == set(api.PACKAGES)
    assert {"rl_buffers.storages": "api/rl_buffers/storages.md"} in groups["rl_buffers"]
