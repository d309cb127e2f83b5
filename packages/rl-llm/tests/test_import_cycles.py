"""No folder of rl_llm has an import circle (lazy, function-level imports included): checked by
import-linter's ``acyclic_siblings`` contract on the installed sources."""

import subprocess
import sys
from pathlib import Path

import pytest

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed")

CONFIG = """\
[importlinter]
root_packages =
    rl_llm
include_external_packages = False

[importlinter:contract:rl-llm-acyclic]
name = rl_llm folders have no import circle
type = acyclic_siblings
ancestors = rl_llm
"""


def test_no_import_circle_inside_rl_llm(tmp_path):
    config = tmp_path / "importlinter.ini"
    config.write_text(CONFIG)
    result = subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout
