"""The TorchRL import map: every public name placed, every entry importable, MIGRATING.md in sync,
and the codemod rewrites real import statements."""

import importlib
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def import_map(migrate):
    return migrate.ImportMap.load()


def test_every_public_name_of_every_package_is_placed(migrate, import_map):
    missing = migrate.unplaced_names(import_map, migrate.public_names())
    assert not missing, (
        f"{len(missing)} public name(s) are not in tools/torchrl_map.toml: {missing}. Add each "
        "under [moved] or [renamed] (its TorchRL name and module) or [new] (no TorchRL counterpart)."
    )


def test_a_name_left_out_of_the_map_is_reported(migrate):
    reduced = migrate.ImportMap.load()  # a copy of its own: the shared one stays whole
    del reduced.targets["GymEnv"]
    exported = {"rl_envs": {"GymEnv", "SerialEnv"}}
    assert migrate.unplaced_names(reduced, exported) == ["rl_envs.GymEnv"]


def test_every_map_entry_imports_from_its_module(import_map):
    for torchrl_name, target in import_map.targets.items():
        module = importlib.import_module(target.module)
        assert hasattr(module, target.name), f"{torchrl_name}: {target.module} has no {target.name}"
    for name, (module, _) in import_map.new.items():
        assert hasattr(importlib.import_module(module), name), (
            f"[new] {name}: {module} has no {name}"
        )
    for torchrl_module, module in import_map.modules.items():
        importlib.import_module(module)  # [modules]: each module here imports
        assert torchrl_module.startswith("torchrl."), torchrl_module


# TorchRL 0.14 has these five (docs.pytorch.org/rl/0.14: torchrl.envs.transforms.ActionScaling,
# torchrl.envs.transforms.FlattenAction, torchrl.objectives.BCLoss,
# torchrl.objectives.value.MultiAgentGAE, torchrl.trainers.EarlyStopping): they are moved
# names, not [new] ones, so the codemod rewrites their imports.
TORCHRL_014_NAMES = {
    "ActionScaling": ("torchrl.envs.transforms", "rl_envs"),
    "FlattenAction": ("torchrl.envs.transforms", "rl_envs"),
    "BCLoss": ("torchrl.objectives", "rl_objectives"),
    "MultiAgentGAE": ("torchrl.objectives.value", "rl_objectives"),
    "EarlyStopping": ("torchrl.trainers", "rl_objectives.trainers"),
}


@pytest.mark.parametrize("name", sorted(TORCHRL_014_NAMES))
def test_names_torchrl_014_has_are_moved_not_new(migrate, import_map, name):
    torchrl_module, here = TORCHRL_014_NAMES[name]
    assert name not in import_map.new, f"{name} is a TorchRL 0.14 name, not one new here"
    target = import_map.targets[name]
    assert (target.torchrl_module, target.module, target.name) == (torchrl_module, here, name)
    out, report = migrate.rewrite_source(
        f"from {torchrl_module} import {name}\n", import_map, "t.py"
    )
    assert out == f"from {here} import {name}\n"
    assert not report.unknown


def test_migrating_md_shows_the_map(import_map):
    text = (ROOT / "MIGRATING.md").read_text()
    match = re.search(r"<!-- import-map:start -->\n(.*?)\n<!-- import-map:end -->", text, re.DOTALL)
    assert match, "MIGRATING.md lost its import-map markers"
    assert match.group(1) == import_map.markdown_table(), (
        "MIGRATING.md's import table is stale: regenerate it with "
        "`uv run python tools/migrate_torchrl.py --update-migrating`"
    )


SAMPLE = textwrap.dedent(
    """\
    import torch
    from torchrl.envs import GymEnv, StepCounter, TransformedEnv  # the env
    from torchrl.envs import EnvMetaData, SomethingElse as Other
    from torchrl.modules import (
        MLP,
        ProbabilisticActor as Actor,
        TanhNormal,
    )
    import torchrl.envs


    def make():
        from torchrl.data import Bounded
        return GymEnv("CartPole-v1"), Bounded(0, 1, shape=(1,))
    """
)

EXPECTED = textwrap.dedent(
    """\
    import torch
    from rl_core import StepCounter, TransformedEnv
    from rl_envs import GymEnv  # the env
    from rl_envs import EnvMetadata as EnvMetaData
    from torchrl.envs import SomethingElse as Other
    from rl_core.modules import MLP, ProbabilisticActor as Actor, TanhNormal
    import torchrl.envs


    def make():
        from rl_core import Bounded
        return GymEnv("CartPole-v1"), Bounded(0, 1, shape=(1,))
    """
)


def test_codemod_rewrites_imports_and_reports_what_it_cannot(migrate, import_map):
    out, report = migrate.rewrite_source(SAMPLE, import_map, "sample.py", placeholders=False)
    assert out == EXPECTED
    assert report.rewritten == 4
    assert report.unknown == [(3, "torchrl.envs.SomethingElse")]
    assert report.unhandled == [(9, "import torchrl.envs")]
    again, second = migrate.rewrite_source(out, import_map, "sample.py", placeholders=False)
    assert again == out  # idempotent
    assert second.rewritten == 0


def test_codemod_cli_check_and_rewrite(migrate, tmp_path, capsys):
    code = tmp_path / "pkg" / "train.py"
    code.parent.mkdir()
    code.write_text(SAMPLE)
    assert migrate.main(["--check", "--keep-missing", str(tmp_path)]) == 1
    assert code.read_text() == SAMPLE
    assert migrate.main(["--keep-missing", str(tmp_path)]) == 0
    assert code.read_text() == EXPECTED
    assert migrate.main(["--check", "--keep-missing", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert (
        "train.py:3: no rl-stack name for torchrl's torchrl.envs.SomethingElse; left as is" in err
    )
    assert "train.py:9: `import torchrl.envs` needs a person" in err
    assert migrate.main([str(tmp_path)]) == 0  # already rewritten: the names now get placeholders
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "migrate_torchrl: 1 file(s) rewritten, 1 TorchRL name(s) with no counterpart here "
        "(bound to placeholders), 1 statement(s) that need a person"
    )


# Issue 50: the networks of one algorithm family left rl-core for the package of that family.
FAMILY_NETWORKS = {
    "rl_objectives.modules": [
        "RSSMPrior",
        "RSSMPosterior",
        "RSSMRollout",
        "WorldModelWrapper",
        "RSSMPriorV3",
        "RSSMPosteriorV3",
        "ObsEncoder",
        "ObsDecoder",
        "DreamerActor",
        "SymExpTwoHot",
        "DecisionTransformer",
        "DTActor",
        "OnlineDTActor",
        "MultiAgentMLP",
        "MultiAgentConvNet",
        "CrossGroupCritic",
        "CrossCriticGroupSpec",
        "DuelingCnnDQNet",
        "NoisyLinear",
        "reset_noise",
        "DistributionalQValueModule",
        "DistributionalQValueActor",
    ],
    "rl_envs": ["MPCPlannerBase", "CEMPlanner", "MPPIPlanner"],
}


@pytest.mark.parametrize("home", sorted(FAMILY_NETWORKS))
def test_algorithm_family_networks_map_to_their_family_not_to_rl_core(import_map, home):
    import rl_core.modules

    module = importlib.import_module(home)
    for name in FAMILY_NETWORKS[home]:
        assert import_map.targets[name].module == home, name
        assert hasattr(module, name), f"{home} has no {name}"
        assert not hasattr(rl_core.modules, name), f"rl_core.modules still exports {name}"


def test_codemod_sends_torchrl_family_networks_to_their_new_homes(migrate, import_map):
    source = "from torchrl.modules import MLP, CEMPlanner, RSSMPrior\n"
    out, report = migrate.rewrite_source(source, import_map, "t.py", placeholders=False)
    assert sorted(out.splitlines()) == [
        "from rl_core.modules import MLP",
        "from rl_envs import CEMPlanner",
        "from rl_objectives.modules import RSSMPrior",
    ]
    assert not report.unknown
    symbols = {}
    exec(out, symbols)  # the rewritten imports run
    assert symbols["RSSMPrior"].__module__ == "rl_objectives.modules.world_models"
    assert symbols["CEMPlanner"].__module__ == "rl_envs.model_based.planners"
