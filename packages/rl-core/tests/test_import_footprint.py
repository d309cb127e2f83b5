"""`import rl_core` must stay light: no optional heavy library, no sibling package."""

import subprocess
import sys

from rl_core.testing.package import SIBLINGS

HEAVY = ("gymnasium", "pettingzoo", "transformers", "ray", "vllm", "tokenizers", "ale_py")


def _modules_loaded_by(statement: str) -> set[str]:
    code = f"{statement}; import sys; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return {name.split(".")[0] for name in out.stdout.split()}


def test_import_rl_core_loads_no_heavy_optional_library():
    loaded = _modules_loaded_by("import rl_core")
    assert "rl_core" in loaded
    assert loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
    assert loaded.isdisjoint(SIBLINGS), sorted(loaded & set(SIBLINGS))
