"""tools/release.py: one package bumped, its changelog released, snapshot recorded, built and tagged."""

import shutil
import subprocess
import tomllib

import pytest


def _git(root, *args):
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def _commit_all(root):
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")


def test_release_bumps_one_package_and_tags_it(release_tool, demo_workspace, monkeypatch):
    if shutil.which("uv") is None:
        pytest.skip("needs uv on PATH (the workspace tool)")
    _commit_all(demo_workspace)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@t")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@t")
    release_tool.release("rl-demo", "0.2.0", root=demo_workspace, date="2026-11-24")
    pkg = demo_workspace / "packages" / "rl-demo"
    assert tomllib.loads((pkg / "pyproject.toml").read_text())["project"]["version"] == "0.2.0"
    changelog = (pkg / "CHANGELOG.md").read_text()
    assert (
        "## Unreleased\n\n## 0.2.0 (2026-11-24)\n\n### Added\n- `scale` and `Buffer`." in changelog
    )
    assert (demo_workspace / "tools" / "api" / "rl-demo.json.gz").exists()
    built = sorted(p.name for p in (demo_workspace / "dist").glob("rl_demo-*"))
    assert built == ["rl_demo-0.2.0-py3-none-any.whl", "rl_demo-0.2.0.tar.gz"]
    assert _git(demo_workspace, "tag", "--list").split() == ["rl-demo==0.2.0"]
    assert _git(demo_workspace, "status", "--porcelain", "--untracked-files=no") == ""
    assert "release rl-demo 0.2.0" in _git(demo_workspace, "log", "-1", "--format=%s")


def test_release_refuses_a_lower_version_and_empty_notes(release_tool, demo_workspace):
    with pytest.raises(
        release_tool.ReleaseError, match=r"rl-demo: 0\.1\.0 is not higher than the current 0\.1\.0"
    ):
        release_tool.release("rl-demo", "0.1.0", root=demo_workspace, git=False, build=False)
    with pytest.raises(release_tool.ReleaseError, match="is not a PEP 440 version"):
        release_tool.release("rl-demo", "next", root=demo_workspace, git=False, build=False)
    changelog = demo_workspace / "packages" / "rl-demo" / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## Unreleased\n\n## 0.1.0 (2026-01-01)\n- first\n")
    with pytest.raises(release_tool.ReleaseError, match="'## Unreleased' lists no change"):
        release_tool.release("rl-demo", "0.2.0", root=demo_workspace, git=False, build=False)
    # nothing was written by the refused releases
    assert (
        'version = "0.1.0"'
        in (demo_workspace / "packages" / "rl-demo" / "pyproject.toml").read_text()
    )
    assert not (demo_workspace / "tools").exists()


def test_release_refuses_a_dirty_tree(release_tool, demo_workspace):
    _commit_all(demo_workspace)
    (demo_workspace / "stray.txt").write_text("uncommitted")
    with pytest.raises(release_tool.ReleaseError, match="uncommitted changes"):
        release_tool.release("rl-demo", "0.2.0", root=demo_workspace, build=False)


def test_changelog_and_pyproject_rewrites(release_tool):
    text = '[project]\nname = "x"\nversion = "0.1.0"\n\n[tool.other]\nversion = "9"\n'
    assert release_tool.bump_pyproject(text, "0.1.1") == text.replace('"0.1.0"', '"0.1.1"')
    notes = "# C\n\n## Unreleased\n\n### Fixed\n- a bug\n\n## 0.1.0 (2026-01-01)\n- first\n"
    out = release_tool.release_changelog(notes, "0.1.1", "2026-02-02")
    assert (
        out
        == "# C\n\n## Unreleased\n\n## 0.1.1 (2026-02-02)\n\n### Fixed\n- a bug\n\n## 0.1.0 (2026-01-01)\n- first\n"
    )
