"""get_available_libraries: the wrapped libraries that are installed, found without importing."""

import importlib.util
import subprocess
import sys

from rl_envs import get_available_libraries


def test_every_wrapped_library_is_answered_by_its_import_name():
    found = get_available_libraries()
    assert list(found) == [
        "gymnasium",
        "ale_py",
        "mujoco",
        "dm_control",
        "pettingzoo",
        "pyspiel",
        "envpool",
        "mo_gymnasium",
        "brax",
        "jumanji",
        "vmas",
        "lbforaging",
    ]
    for name, installed in found.items():
        assert installed is (importlib.util.find_spec(name) is not None), name


def test_nothing_is_imported_to_answer():
    code = (
        "import sys\n"
        "from rl_envs import get_available_libraries\n"
        "found = get_available_libraries()\n"
        "print(sorted(n for n in found if n in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"
