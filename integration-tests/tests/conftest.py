"""Shared fixtures of the integration tests."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def load_example(monkeypatch):
    """Imports ``examples/<name>.py`` as a module (its ``parse_config`` and ``train`` are then
    called in-process); restores torch's thread count, which the examples set to 1."""
    threads = torch.get_num_threads()
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the examples import their _recipe module

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module

    yield load
    torch.set_num_threads(threads)
