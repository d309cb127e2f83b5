from pathlib import Path

from testkit.package import (
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


def test_torchrl_0_14_names_and_the_older_ones():
    import rl_collectors

    pairs = {
        "Collector": "SyncDataCollector",
        "MultiSyncCollector": "MultiSyncDataCollector",
        "MultiAsyncCollector": "MultiaSyncDataCollector",
        "AsyncCollector": "aSyncDataCollector",
        "BaseCollector": "DataCollectorBase",
    }
    for new, old in pairs.items():
        assert new in rl_collectors.__all__
        assert old in rl_collectors.__all__
        assert getattr(rl_collectors, new) is getattr(rl_collectors, old)
    for name in ("Collector", "MultiSyncCollector", "MultiAsyncCollector", "AsyncCollector"):
        assert issubclass(getattr(rl_collectors, name), rl_collectors.BaseCollector)
