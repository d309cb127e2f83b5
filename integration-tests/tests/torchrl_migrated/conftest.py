"""The TorchRL-style test files under ``torchrl_tests/`` import ``torchrl``: they are inputs of
the codemod, run only after conversion (by ``test_migrated_suite.py``), never collected here."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

collect_ignore = ["torchrl_tests"]

TOOL = Path(__file__).resolve().parents[3] / "tools" / "migrate_torchrl.py"


@pytest.fixture(scope="session")
def migrate() -> ModuleType:
    """``tools/migrate_torchrl.py`` as a module (the name the tools tests load it under)."""
    name = "tools_migrate_torchrl"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, TOOL)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
