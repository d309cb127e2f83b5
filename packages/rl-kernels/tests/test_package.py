from pathlib import Path

from testkit.package import check_import_loads_no_sibling, check_version_matches_pyproject

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_version_is_the_pyproject_version():
    check_version_matches_pyproject("rl_kernels", PYPROJECT)


def test_import_loads_no_sibling_package():
    check_import_loads_no_sibling("rl_kernels")
