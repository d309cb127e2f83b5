"""The census of TorchRL 0.14.1's public names (tools/torchrl_names.toml, written by
tools/torchrl_names.py): every name is placed in tools/torchrl_map.toml or listed there as
absent with a reason, every placed name imports, MIGRATING.md's absent list is current, and the
codemod's placeholder quotes the reason; TorchRL's ``torchrl._utils`` helpers convert to code
that imports."""

import ast
import importlib
import logging
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CENSUS = tomllib.loads((ROOT / "tools" / "torchrl_names.toml").read_text())


@pytest.fixture(scope="module")
def import_map(migrate):
    return migrate.ImportMap.load()


def test_the_census_is_torchrl_0_14_1_and_has_its_public_modules():
    assert CENSUS["version"] == "0.14.1"
    modules = CENSUS["modules"]
    # a few facts of TorchRL 0.14.1, checked by hand against its documentation
    assert {"GymEnv", "TransformedEnv", "ParallelEnv"} <= set(modules["torchrl.envs"])
    assert {"ReplayBuffer", "Composite", "Bounded"} <= set(modules["torchrl.data"])
    assert "ClipPPOLoss" in modules["torchrl.objectives"]
    assert not any(part.startswith("_") for m in modules for part in m.split("."))


def test_every_torchrl_name_is_placed_or_absent_with_a_reason(import_map):
    missing = import_map.unaccounted(CENSUS["modules"])
    assert not missing, (
        f"{len(missing)} TorchRL 0.14.1 name(s) of tools/torchrl_names.toml are neither placed in "
        f"tools/torchrl_map.toml nor listed under [absent] with a reason: {missing}. Place each "
        '([moved]/[renamed]/[replaced]) or add `Name = ["torchrl module", "why"]` under '
        "[absent], then run `uv run python tools/migrate_torchrl.py --update-migrating`."
    )


def test_a_name_left_out_or_absent_without_a_reason_is_reported(migrate):
    reduced = migrate.ImportMap.load()  # a copy of its own
    del reduced.targets["GymEnv"]
    reduced.absent["IsaacGymEnv"] = ("torchrl.envs", " ")
    census = {"torchrl.envs": ["GymEnv", "IsaacGymEnv", "SerialEnv"]}
    assert reduced.unaccounted(census) == ["torchrl.envs.GymEnv", "torchrl.envs.IsaacGymEnv"]


def test_every_placed_torchrl_name_imports(import_map):
    names = {name for names in CENSUS["modules"].values() for name in names}
    broken = []
    for name in sorted(names):
        target = import_map.targets.get(name)
        if target is not None and not hasattr(importlib.import_module(target.module), target.name):
            broken.append(f"{name} -> {target.module}.{target.name}")
        replacement = import_map.replaced.get(name)
        if replacement is not None:
            scope = {}
            if replacement.module:
                scope[replacement.module] = importlib.import_module(replacement.module)
            eval(replacement.expression, scope)  # the map's own expressions
    assert not broken, f"placed TorchRL names that do not import: {broken}"


def test_migrating_md_lists_the_absent_names_by_module(import_map):
    text = (ROOT / "MIGRATING.md").read_text()
    match = re.search(r"<!-- absent:start -->\n(.*?)\n<!-- absent:end -->", text, re.DOTALL)
    assert match, "MIGRATING.md lost its absent:start/absent:end markers"
    assert match.group(1) == import_map.absent_markdown(), (
        "MIGRATING.md's absent list is stale: regenerate it with "
        "`uv run python tools/migrate_torchrl.py --update-migrating`"
    )
    isaac = import_map.absent["IsaacGymEnv"]
    assert f"### `{isaac[0]}`" in match.group(1)
    assert f"- `IsaacGymEnv`: {isaac[1]}" in match.group(1)


def test_a_name_both_placed_and_absent_is_not_rendered_absent(migrate):
    reduced = migrate.ImportMap.load()
    reduced.absent["GymEnv"] = ("torchrl.envs", "stale line")
    assert reduced.why_absent("torchrl.envs.GymEnv") is None
    assert "`GymEnv`" not in reduced.absent_markdown()


def test_the_placeholder_quotes_why_the_name_is_absent(migrate, import_map):
    source = "from torchrl.envs import GymEnv, IsaacGymEnv, NotATorchRLName\n"
    out, report = migrate.rewrite_source(source, import_map, "user.py")
    assert [name for _, name in report.unknown] == [
        "torchrl.envs.IsaacGymEnv",
        "torchrl.envs.NotATorchRLName",
    ]
    scope = {}
    exec(compile(out, "user.py", "exec"), scope)
    why = import_map.absent["IsaacGymEnv"][1]
    with pytest.raises(NotImplementedError, match=re.escape(f"Why: {why}")):
        scope["IsaacGymEnv"]()
    with pytest.raises(NotImplementedError, match=r"NotATorchRLName has no counterpart") as err:
        scope["NotATorchRLName"]()
    assert "Why:" not in str(err.value)  # a name the map does not know has no reason to quote
    again, _ = migrate.rewrite_source(out, import_map, "user.py")
    assert again == out


UTILS = """\
from torchrl._utils import (
    RL_WARNINGS,
    _ends_with,
    _make_ordinal_device,
    _replace_last,
    implement_for,
    logger as torchrl_logger,
    prod,
    rl_warnings,
    seed_generator,
    timeit,
)
from torchrl import logger
import torchrl._utils as tu

level = torchrl_logger.level  # used at import, as TorchRL's tests do
expect_warning = rl_warnings() or RL_WARNINGS
size = prod([2, 3])
helpers = (tu.logger, tu.rl_warnings())
keys = (_replace_last(("next", "reward"), "episode_reward"), _replace_last("reward", "done"))
ends = (_ends_with(("next", "mask"), "mask"), _ends_with("mask", "mask"), _ends_with("x", "mask"))
"""


def test_torchrl_utils_imports_convert_to_a_module_that_imports(migrate, import_map):
    out, report = migrate.rewrite_source(UTILS, import_map, "test_utils_user.py")
    imported = [
        getattr(node, "module", None) or alias.name
        for node in ast.walk(ast.parse(out))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    assert not [m for m in imported if m.split(".")[0] == "torchrl"], out
    scope = {}
    exec(compile(out, "test_utils_user.py", "exec"), scope)  # no error at import
    assert scope["torchrl_logger"] is logging.getLogger("torchrl")
    assert scope["logger"] is logging.getLogger("torchrl")
    assert scope["helpers"] == (logging.getLogger("torchrl"), False)
    assert scope["expect_warning"] is False  # the rl stack emits none of TorchRL's RL_WARNINGS
    assert scope["size"] == 6
    assert scope["implement_for"].__module__.startswith("rl_envs")
    # TorchRL's nested-key helpers, by hand: the last part replaced; the last part compared
    assert scope["keys"] == (("next", "episode_reward"), "done")
    assert scope["ends"] == (True, True, False)
    for name in ("_make_ordinal_device", "seed_generator", "timeit"):
        why = import_map.why_absent(name)
        assert why, f"{name}: [absent] gives no reason"
        with pytest.raises(NotImplementedError, match=re.escape(why)):
            scope[name]()
    assert sorted(name for _, name in report.unknown) == [
        "torchrl._utils._make_ordinal_device",
        "torchrl._utils.seed_generator",
        "torchrl._utils.timeit",
    ]


ATTRIBUTES = """\
import pytest
import torchrl
import torchrl.data.tensor_specs


@pytest.mark.skipif(not torchrl._utils.RL_WARNINGS, reason="RL_WARNINGS is not set")
def test_warns():
    pass


def test_reads_names_through_the_package():
    torchrl._utils.logger.info("converted")
    return torchrl.data.tensor_specs.Composite, torchrl._utils.rl_warnings()


def test_reads_an_absent_name():
    return torchrl.envs.libs.utils.GymPixelObservationWrapper()


def test_patches_a_private_module():
    torchrl.collectors._multi_base._main_async_collector = None
"""


def test_import_torchrl_without_as_converts_its_attribute_chains(migrate, import_map):
    import rl_core

    out, report = migrate.rewrite_source(ATTRIBUTES, import_map, "test_rb_user.py")
    assert "import torchrl" not in out
    assert "@pytest.mark.skipif(not False," in out  # read at import, as TorchRL's tests do
    scope = {}
    exec(compile(out, "test_rb_user.py", "exec"), scope)  # the file imports
    assert scope["test_reads_names_through_the_package"]() == (rl_core.Composite, False)
    why = import_map.why_absent("GymPixelObservationWrapper")
    with pytest.raises(NotImplementedError, match=re.escape(why)):
        scope["test_reads_an_absent_name"]()
    with pytest.raises(AttributeError, match=r"torchrl\.collectors: torchrl has no counterpart"):
        scope["test_patches_a_private_module"]()  # only the use fails
    assert sorted(name for _, name in report.unknown) == [
        "torchrl.collectors._multi_base._main_async_collector",
        "torchrl.envs.libs.utils.GymPixelObservationWrapper",
    ]
    again, _ = migrate.rewrite_source(out, import_map, "test_rb_user.py")
    assert again == out
    kept, kept_report = migrate.rewrite_source(
        ATTRIBUTES, import_map, "test_rb_user.py", placeholders=False
    )
    assert "import torchrl.data.tensor_specs\n" in kept  # left for TorchRL, reported
    assert "rl_core.Composite" in kept
    assert (3, "import torchrl.data.tensor_specs") in kept_report.unhandled


def test_import_torchrl_whose_every_use_is_rewritten_goes(migrate, import_map):
    source = (
        "import torchrl\n"
        "flag = torchrl._utils.RL_WARNINGS\n"
        "def f():\n"
        "    import torchrl\n"
        "    return torchrl._utils.rl_warnings()\n"
    )
    out, report = migrate.rewrite_source(source, import_map, "rb_user.py")
    assert out == ("\nflag = False\ndef f():\n    pass\n    return (lambda: False)()\n")
    assert report.rewritten == 2
    assert not report.unhandled
    scope = {}
    exec(compile(out, "rb_user.py", "exec"), scope)
    assert scope["flag"] is False
    assert scope["f"]() is False
