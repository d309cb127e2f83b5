from pathlib import Path

from rl_core.testing.package import (
    check_import_loads_no_sibling,
    check_version_matches_pyproject,
    modules_loaded_by,
)

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_version_is_the_pyproject_version():
    check_version_matches_pyproject("rl_collectors", PYPROJECT)


def test_import_loads_no_sibling_package():
    check_import_loads_no_sibling("rl_collectors")


def test_import_does_not_load_ray():
    assert "ray" not in modules_loaded_by("import rl_collectors")
