"""Settings the whole workspace's test run shares (pytest loads this file for every package).

With pytest-xdist (``uv run pytest -n 2 --dist loadgroup``, the README's test command) the
tests that start a local Ray instance all run in one worker, one after the other, so two
workers never start two Ray clusters at once on a 2-core machine.
"""

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):  # the isolated per-package envs lack it
        return
    for item in items:
        if item.get_closest_marker("ray") is not None:
            item.add_marker(pytest.mark.xdist_group("ray"))
