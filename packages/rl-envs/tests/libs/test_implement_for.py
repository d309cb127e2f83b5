"""implement_for: version-ranged implementations, resolved at call time against the installed
libraries and the gym backend."""

import pytest
import torch

from rl_envs import implement_for, set_gym_backend
from rl_envs.libs.implement_for import _in_range

gymnasium = pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')


def test_version_ranges_include_the_lower_bound_and_exclude_the_upper():
    assert _in_range("1.4.0", "1.4", None)
    assert not _in_range("1.4.0", None, "1.4")
    assert _in_range("0.26.2", "0.26", "0.27")
    assert _in_range("2.8.0+cu121", "2.8", "2.9")
    assert not _in_range("2.10.0", None, "2.9")  # numbers, not strings: 10 > 9


def test_the_implementation_for_the_installed_version_runs():
    major = int(torch.__version__.split(".")[0])

    @implement_for("torch", None, f"{major}.0")
    def which():
        return "older"

    @implement_for("torch", f"{major}.0", f"{major + 1}.0")
    def which():  # noqa: F811 (a second implementation of the same function)
        return "this major"

    @implement_for("no_such_library_for_implement_for")
    def which():  # noqa: F811
        return "absent library"

    assert which() == "this major"


def test_gym_implementations_follow_the_gym_backend():
    gym = pytest.importorskip("gym", reason="the old gym library is not installed")

    class Reader:
        @implement_for("gym")
        def name(self):
            return f"gym {gym.__version__}"

        @implement_for("gymnasium", None, "1.0")
        def name(self):  # noqa: F811
            return "gymnasium < 1"

        @implement_for("gymnasium", "1.0")
        def name(self):  # noqa: F811
            return "gymnasium >= 1"

        @implement_for("gymnasium", class_method=True)
        def kind(cls):
            return cls.__name__

    expected = (
        "gymnasium >= 1" if int(gymnasium.__version__.split(".")[0]) >= 1 else "gymnasium < 1"
    )
    assert Reader().name() == expected
    with set_gym_backend("gym"):
        assert Reader().name() == f"gym {gym.__version__}"
        with pytest.raises(ModuleNotFoundError, match=r"Reader\.kind has no implementation"):
            Reader.kind()
    assert Reader().name() == expected
    assert Reader.kind() == "Reader"


def test_no_fitting_implementation_raises_naming_the_ranges():
    @implement_for("torch", None, "0.1")
    def ancient():
        return None

    with pytest.raises(
        ModuleNotFoundError, match=r"ancient has no implementation .*torch \[-inf, 0\.1\)"
    ):
        ancient()
    with pytest.raises(TypeError, match="implement_for: expected module_name as a module name"):
        implement_for(3)
