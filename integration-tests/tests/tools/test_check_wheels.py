"""tools/check_wheels.py: a wheel installed alone passes its smoke check, or fails it by name."""

import shutil

import pytest


@pytest.fixture
def built(check_wheels, api_check, demo_workspace, tmp_path):
    if shutil.which("uv") is None:
        pytest.skip("needs uv on PATH (the workspace tool)")

    def build():
        dist = tmp_path / "dist"
        check_wheels.build_all(demo_workspace, dist)
        package = api_check.find_package(demo_workspace, "rl-demo")
        return package, {check_wheels.wheel_of(package, dist)}

    return build


def test_a_self_contained_wheel_passes(check_wheels, built, tmp_path):
    package, wheels = built()
    out = check_wheels.check_one(package, wheels, tmp_path)
    assert out == "rl_demo ok"


def test_an_undeclared_dependency_fails_in_the_fresh_environment(
    check_wheels, built, demo_workspace, tmp_path
):
    # The workspace environment has numpy, so every workspace test passes; the wheel does not
    # declare it, so the fresh environment has no numpy and the smoke check must fail.
    init = demo_workspace / "packages" / "rl-demo" / "src" / "rl_demo" / "__init__.py"
    init.write_text("import numpy\n" + init.read_text())
    package, wheels = built()
    with pytest.raises(
        RuntimeError, match=r"(?s)rl-demo: the wheel's smoke check failed.*No module named 'numpy'"
    ):
        check_wheels.check_one(package, wheels, tmp_path)
