"""tools/migrate_torchrl.py on the import forms TorchRL code uses: both generations of collector
names, submodule imports, names this stack lacks (a placeholder that fails where it is used),
and imports inside code strings run in subprocesses."""

import ast
import textwrap

import pytest

import rl_buffers
import rl_collectors
import rl_core
import rl_envs
import rl_objectives.value.functional


@pytest.fixture(scope="module")
def import_map(migrate):
    return migrate.ImportMap.load()


def run(code: str) -> dict:
    """Executes rewritten code as a module and returns its namespace."""
    namespace: dict = {"__name__": "rewritten"}
    exec(compile(code, "rewritten.py", "exec"), namespace)
    return namespace


# TorchRL 0.14.1's collector names, and the older names it keeps as aliases of the same classes.
COLLECTORS_014_TO_OLDER = {
    "Collector": "SyncDataCollector",
    "MultiSyncCollector": "MultiSyncDataCollector",
    "MultiAsyncCollector": "MultiaSyncDataCollector",
    "AsyncCollector": "aSyncDataCollector",
    "BaseCollector": "DataCollectorBase",
}


def test_collector_names_of_both_generations_are_rewritten(migrate, import_map):
    names = sorted(COLLECTORS_014_TO_OLDER) + sorted(COLLECTORS_014_TO_OLDER.values())
    source = f"from torchrl.collectors import {', '.join(names)}\n"
    out, report = migrate.rewrite_source(source, import_map, "c.py")
    assert "torchrl" not in out
    assert not report.unknown
    namespace = run(out)
    for new, older in COLLECTORS_014_TO_OLDER.items():
        assert namespace[new] is getattr(rl_collectors, new)
        assert namespace[older] is getattr(rl_collectors, older)
        assert issubclass(namespace[older], namespace[new])  # the same class, or its alias


SUBMODULES = textwrap.dedent(
    """\
    from torchrl.data.replay_buffers import samplers, writers as w
    from torchrl.objectives.value import functional
    import torchrl.objectives.value.functional as F
    import torchrl.envs.utils as u


    def used():
        return (
            samplers.RandomSampler,
            samplers.SliceSampler,
            w.RoundRobinWriter,
            functional.generalized_advantage_estimate,
            F.td0_return_estimate,
            u.step_mdp,
            u.ExplorationType,
            u.MarlGroupMapType,
            u.NotBuiltHere,
        )
    """
)


def test_submodule_imports_become_the_modules_here(migrate, import_map):
    out, report = migrate.rewrite_source(SUBMODULES, import_map, "s.py")
    assert "import rl_buffers as samplers\nimport rl_buffers as w\n" in out
    assert "import rl_objectives.value.functional as functional\n" in out
    assert "import rl_objectives.value.functional as F\n" in out
    # torchrl.envs.utils's names live in rl_core and rl_envs here: a namespace of those used
    assert "u = _SimpleNamespace(" in out
    assert report.unknown == [(4, "torchrl.envs.utils.NotBuiltHere")]
    assert "torchrl.envs.utils.NotBuiltHere" in out  # only as the placeholder's name
    got = run(out)["used"]()
    expected = (
        rl_buffers.RandomSampler,
        rl_buffers.SliceSampler,
        rl_buffers.RoundRobinWriter,
        rl_objectives.value.functional.generalized_advantage_estimate,
        rl_objectives.value.functional.td0_return_estimate,
        rl_core.step_mdp,
        rl_core.ExplorationType,
        rl_envs.MarlGroupMapType,
    )
    assert got[:-1] == expected
    with pytest.raises(NotImplementedError, match=r"torchrl\.envs\.utils\.NotBuiltHere has no"):
        got[-1]()
    again, second = migrate.rewrite_source(out, import_map, "s.py")
    assert again == out
    assert second.rewritten == 0


def test_a_module_not_used_as_a_namespace_moves_whole_when_the_map_knows_it(migrate, import_map):
    out, _ = migrate.rewrite_source(
        "from torchrl.data.replay_buffers import samplers\nregistry = [samplers]\n",
        import_map,
        "m.py",
    )
    assert out.startswith("import rl_buffers as samplers\n")


MISSING = textwrap.dedent(
    '''\
    """A TorchRL user's test module."""

    from __future__ import annotations

    import pytest
    from torchrl.envs import GymEnv, IsaacGymEnv
    from torchrl.envs import EnvBase as Base


    class Threaded(IsaacGymEnv):
        pass


    def test_uses_a_missing_name():
        IsaacGymEnv(task="Ant", num_envs=2)


    def test_uses_names_this_stack_has():
        assert GymEnv.__name__ == "GymEnv"
    '''
)


def test_a_name_the_stack_lacks_fails_where_it_is_used_not_at_import(migrate, import_map):
    out, report = migrate.rewrite_source(MISSING, import_map, "test_user.py")
    assert report.unknown == [(6, "torchrl.envs.IsaacGymEnv")]
    assert 'IsaacGymEnv = _torchrl_missing("torchrl.envs.IsaacGymEnv")' in out
    assert out.count("def _torchrl_missing(") == 1
    # the helper goes after the docstring and the __future__ import (which must stay first)
    tree = ast.parse(out)
    assert isinstance(tree.body[1], ast.ImportFrom)
    assert tree.body[1].module == "__future__"
    assert isinstance(tree.body[2], ast.FunctionDef)
    assert tree.body[2].name == "_torchrl_missing"
    assert "from rl_core import EnvBase as Base" in out

    namespace = run(out)  # the module imports: its other tests run
    namespace["test_uses_names_this_stack_has"]()
    message = (
        r"torchrl\.envs\.IsaacGymEnv has no counterpart in the rl stack: "
        r"tools/migrate_torchrl\.py bound it to a placeholder that raises when used"
    )
    with pytest.raises(NotImplementedError, match=message):
        namespace["test_uses_a_missing_name"]()
    with pytest.raises(NotImplementedError, match=message):
        namespace["Threaded"]()  # a subclass fails where it is instantiated
    with pytest.raises(AttributeError, match=r"IsaacGymEnv\.make_env: torchrl\.envs"):
        _ = namespace["IsaacGymEnv"].make_env
    assert not hasattr(namespace["IsaacGymEnv"], "__test__")  # pytest's probe still works
    # an env class of a library that is not there lists no envs, as TorchRL's do
    assert namespace["IsaacGymEnv"].available_envs == []

    assert report.lines() == [
        "test_user.py:6: no rl-stack name for torchrl's torchrl.envs.IsaacGymEnv; "
        "bound to a placeholder that raises when used"
    ]
    again, second = migrate.rewrite_source(out, import_map, "test_user.py")
    assert again == out
    assert second.rewritten == 0


def test_a_file_without_docstring_gets_the_helper_first(migrate, import_map):
    out, _ = migrate.rewrite_source("from torchrl.envs import Nope\n", import_map, "n.py")
    assert out.startswith("# Written by tools/migrate_torchrl.py")
    assert out.endswith('\nNope = _torchrl_missing("torchrl.envs.Nope")\n')
    with pytest.raises(NotImplementedError, match=r"torchrl\.envs\.Nope has no counterpart"):
        run(out)["Nope"]()


STRINGS = textwrap.dedent(
    '''\
    import sys
    import textwrap

    CODE = """
    from torchrl.envs import GymEnv
    print(GymEnv.__module__)
    """
    ONE_LINE = "from torchrl.data import Bounded\\nprint(Bounded.__module__)"


    def test_in_a_subprocess():
        code = textwrap.dedent(
            """
            from torchrl.envs.utils import step_mdp, NotHere
            print(step_mdp)
            """
        )
        name = "GymEnv"
        templated = f"from torchrl.envs import {name}"
        joined = "from torchrl.envs import GymEnv\\n" "print(GymEnv)"
        command = [sys.executable, "-c", CODE]  # what subprocess.run would get
        return code, templated, joined
    '''
)


def test_imports_in_code_strings_are_rewritten_or_reported_with_their_line(migrate, import_map):
    out, report = migrate.rewrite_source(STRINGS, import_map, "test_sub.py")
    namespace = run(out)
    assert namespace["CODE"] == "\nfrom rl_envs import GymEnv\nprint(GymEnv.__module__)\n"
    assert namespace["ONE_LINE"] == "from rl_core import Bounded\nprint(Bounded.__module__)"
    code, templated, joined = namespace["test_in_a_subprocess"]()
    # an indented code literal: rewritten in place; the unknown name stays (no helper in strings)
    assert (
        code
        == "\nfrom rl_core import step_mdp\nfrom torchrl.envs.utils import NotHere\nprint(step_mdp)\n"
    )
    assert templated == "from torchrl.envs import GymEnv"  # f-string: reported only
    assert joined == "from torchrl.envs import GymEnv\nprint(GymEnv)"  # concatenation: reported
    exec(compile(namespace["CODE"] + namespace["ONE_LINE"], "code", "exec"), {})  # it runs
    assert report.lines() == [
        "test_sub.py:4: rewrote 1 TorchRL import(s) in a code string",
        "test_sub.py:8: rewrote 1 TorchRL import(s) in a code string",
        "test_sub.py:13: rewrote 1 TorchRL import(s) in a code string",
        "test_sub.py:14: no rl-stack name for torchrl's torchrl.envs.utils.NotHere in a code "
        "string; left as is",
        "test_sub.py:19: a TorchRL import in an f-string; not rewritten, needs a person",
        "test_sub.py:20: TorchRL imports in a string that is not one plain literal; not "
        "rewritten, needs a person",
    ]
    again, _ = migrate.rewrite_source(out, import_map, "test_sub.py")
    assert again == out


def test_star_imports_and_bare_module_imports_are_reported(migrate, import_map):
    source = "from torchrl.envs import *\nimport torchrl.envs\n"
    out, report = migrate.rewrite_source(source, import_map, "star.py")
    assert out == source
    assert report.lines() == [
        "star.py:1: `from torchrl.envs import *` needs a person (a star import is not rewritten)",
        "star.py:2: `import torchrl.envs` needs a person (attribute access is not rewritten)",
    ]


def test_an_import_after_other_code_on_its_line_stays_on_that_line(migrate, import_map):
    source = 'x = "café"; from torchrl.envs import GymEnv, StepCounter, Nope\n'
    out, _ = migrate.rewrite_source(source, import_map, "semi.py")
    assert out.endswith(
        'x = "café"; from rl_core import StepCounter; from rl_envs import GymEnv; '
        'Nope = _torchrl_missing("torchrl.envs.Nope")\n'
    )
    namespace = run(out)
    assert namespace["GymEnv"] is rl_envs.GymEnv
    assert namespace["StepCounter"] is rl_core.StepCounter


SPEC_SURPRISES = textwrap.dedent(
    """\
    from torchrl.envs import GymEnv

    env = GymEnv("Pendulum-v1", num_envs=2)
    low = env.action_spec.space.low
    high = env.full_action_spec["action"].space.high
    one = env.observation_spec_unbatched
    act = env.action_spec_unbatched
    gym_low = env.action_space.low
    """
)


def test_spec_attributes_torchrl_has_and_this_stack_lacks_are_reported_with_the_fix(
    migrate, import_map
):
    _, report = migrate.rewrite_source(SPEC_SURPRISES, import_map, "s.py")
    found = sorted(report.attributes)
    assert found == [
        (
            4,
            "`env.action_spec.space.low` needs a person: rl-core's specs have no `.space`: a "
            "Bounded spec holds `low` and `high`, a Categorical or OneHot spec `n`, on the spec "
            "itself; write `env.action_spec.low`",
        ),
        (5, found[1][1]),
        (
            6,
            "`env.observation_spec_unbatched` needs a person: rl-core's envs have only "
            "`action_spec_unbatched` and `full_action_spec_unbatched`: index the spec's batch "
            "dims at one env; write `env.observation_spec[(0,) * len(env.batch_size)]`",
        ),
    ]
    assert "write `env.full_action_spec['action'].high`" in found[1][1]
    assert "s.py:4: `env.action_spec.space.low` needs a person" in report.lines()[0]
    # the code the report asks for gives what TorchRL's attributes gave: Pendulum's torque
    # bounds (+-2) and the spec of one env out of the two
    env = rl_envs.GymEnv("Pendulum-v1", num_envs=2)
    assert env.action_spec.low.tolist() == [[-2.0], [-2.0]]
    assert env.full_action_spec["action"].high.tolist() == [[2.0], [2.0]]
    one = env.observation_spec[(0,) * len(env.batch_size)]
    assert tuple(one["observation"].shape) == (3,)
    # the action's unbatched spec is built here, and is what the same indexing gives
    assert env.action_spec_unbatched == env.action_spec[(0,) * len(env.batch_size)]
    assert env.action_spec_unbatched.low.tolist() == [-2.0]


def test_the_summary_counts_the_spec_attributes_among_what_needs_a_person(
    migrate, tmp_path, capsys
):
    path = tmp_path / "s.py"
    path.write_text(SPEC_SURPRISES)
    assert migrate.main(["--check", str(path)]) == 1
    captured = capsys.readouterr()
    assert "3 statement(s) that need a person" in captured.out
    assert "s.py:6: `env.observation_spec_unbatched` needs a person" in captured.err
    assert "action_spec_unbatched` needs" not in captured.err
