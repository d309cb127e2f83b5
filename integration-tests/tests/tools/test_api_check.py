"""tools/api_check.py: additions pass, unrecorded breaks fail, declared breaks (bump + changelog) pass."""

from pathlib import Path


def _edit(root: Path, old: str, new: str) -> None:
    path = root / "packages" / "rl-demo" / "src" / "rl_demo" / "_impl.py"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_unchanged_and_added_api_passes(api_check, demo_workspace):
    api_check.record(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    assert api_check.check(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace) == []
    _edit(
        demo_workspace,
        "def scale(",
        "def shift(x: float) -> float:\n    return x + 1\n\n\ndef scale(",
    )
    _edit(
        demo_workspace, "replace: bool = True)", "replace: bool = True, *, seed: int | None = None)"
    )
    assert api_check.check(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace) == []


def test_each_kind_of_break_fails_and_is_named(api_check, demo_workspace):
    api_check.record(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    _edit(demo_workspace, "factor: float = 2.0", "factor: float = 3.0")  # changed default
    _edit(
        demo_workspace, "batch_size: int, replace: bool", "replace: bool, batch_size: int"
    )  # reordered
    _edit(demo_workspace, "size: int, *, device", "capacity: int, *, device")  # renamed
    problems = api_check.check(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    assert problems[0].startswith("rl-demo 0.1.0: ")
    assert "breaking change(s) against the 0.1.0 API snapshot" in problems[0]
    assert "bump the version" in problems[0]
    assert "### Changed" in problems[0]
    text = "\n".join(problems)
    assert "scale(factor): Parameter default was changed: 2.0 -> 3.0" in text
    assert "Buffer.sample(batch_size): Positional parameter was moved" in text
    assert "Buffer.__init__(size): Parameter was removed" in text


def test_removed_public_name_fails(api_check, demo_workspace):
    api_check.record(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    init = demo_workspace / "packages" / "rl-demo" / "src" / "rl_demo" / "__init__.py"
    init.write_text('"""Demo."""\n\nfrom rl_demo._impl import Buffer\n\n__all__ = ["Buffer"]\n')
    problems = api_check.check(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    assert any("scale: Public object was removed" in line for line in problems), problems


def test_a_declared_break_passes_only_with_bump_and_changelog(api_check, demo_workspace):
    api_check.record(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    _edit(demo_workspace, "factor: float = 2.0", "factor: float = 3.0")
    pyproject = demo_workspace / "packages" / "rl-demo" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('version = "0.1.0"', 'version = "0.2.0"'))
    problems = api_check.check(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    assert problems
    assert "list the change under" in problems[0]
    assert "bump" not in problems[0]
    changelog = demo_workspace / "packages" / "rl-demo" / "CHANGELOG.md"
    changelog.write_text(
        changelog.read_text() + "\n### Changed\n- `scale` multiplies by 3 by default.\n"
    )
    assert api_check.check(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace) == []


def test_a_package_without_snapshot_fails(api_check, demo_workspace):
    problems = api_check.check(api_check.find_package(demo_workspace, "rl-demo"), demo_workspace)
    assert len(problems) == 1
    assert "no API snapshot at tools/api/rl-demo.json.gz" in problems[0]


def test_the_repository_snapshots_hold(api_check):
    assert api_check.main(["check"]) == 0
