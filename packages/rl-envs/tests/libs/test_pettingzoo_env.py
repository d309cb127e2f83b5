"""PettingZooEnv against real PettingZoo tasks: the conformance kit, task names, errors."""

import sys

import pytest
import torch

from rl_core.envs import check_env_specs
from rl_core.testing import EnvConformanceSuite
from rl_envs.libs import MarlGroupMapType, PettingZooEnv

pytest.importorskip("pettingzoo")
pytest.importorskip("mpe2")


class TestSimpleSpreadParallel(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv("simple_spread_v3", N=2, max_cycles=10)


class TestSimpleSpreadAEC(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv("simple_spread_v3", parallel=False, N=2, max_cycles=10)


class TestSimpleSpreadWithStateOneHot(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv(
            "simple_spread_v3",
            N=2,
            max_cycles=10,
            return_state=True,
            categorical_actions=False,
            device="cpu",
        )


class TestSimpleAdversaryByPrefix(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv(
            "simple_adversary_v3", max_cycles=10, group_map=MarlGroupMapType.BY_NAME_PREFIX
        )


class TestKnightsArchersZombies(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv("knights_archers_zombies_v11", max_cycles=60)


class TestTicTacToe(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv("tictactoe_v3", parallel=False)


class TestTicTacToeOneHot(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv("tictactoe_v3", parallel=False, categorical_actions=False)


@pytest.mark.parametrize(
    "task",
    ["classic/tictactoe_v3", "tictactoe_v3", "tictactoe-v3", "classic/tictactoe-v3"],
)
def test_registry_names_with_and_without_family(task):
    env = PettingZooEnv(task, parallel=False)
    assert env.group_map == {"agents": ["player_1", "player_2"]}
    assert env.task == task


@pytest.mark.parametrize("task", ["simple_spread_v3", "mpe/simple_spread_v3", "simple_spread-v3"])
def test_mpe2_names(task):
    env = PettingZooEnv(task, N=4)
    assert env.group_map == {"agents": [f"agent_{i}" for i in range(4)]}


def test_task_kwargs_reach_the_task():
    env = PettingZooEnv("simple_spread_v3", N=2, max_cycles=3)
    traj = env.rollout(10)
    assert traj.batch_size == (3,)
    assert env.rollout(10)["agents", "observation"].shape == (3, 2, 12)


def test_check_env_specs_on_a_longer_rollout():
    env = PettingZooEnv("tictactoe_v3", parallel=False)
    check_env_specs(env, seed=3, max_steps=40)


def test_turn_based_task_without_parallel_api():
    with pytest.raises(ValueError, match=r"'tictactoe_v3' has no parallel API.*parallel=False"):
        PettingZooEnv("tictactoe_v3")


def test_unknown_task_suggests_close_names():
    with pytest.raises(ValueError, match=r"unknown task 'tictactoo_v3'.*tictactoe-v3"):
        PettingZooEnv("tictactoo_v3", parallel=False)


def test_task_must_be_a_name():
    with pytest.raises(TypeError, match="expected a task name"):
        PettingZooEnv(3)


def test_missing_pettingzoo_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    with pytest.raises(
        ImportError, match=r'PettingZooEnv needs pettingzoo: pip install "rl-envs\[pettingzoo\]"'
    ):
        PettingZooEnv("simple_spread_v3")


def test_missing_mpe2_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "mpe2" or m.startswith("mpe2.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mpe2", None)
    with pytest.raises(ImportError, match=r"'simple_tag_v3' needs mpe2: pip install"):
        PettingZooEnv("simple_tag_v3")


def test_seed_argument_seeds_the_first_reset():
    first = PettingZooEnv("simple_spread_v3", N=2, seed=5).reset()
    second = PettingZooEnv("simple_spread_v3", N=2, seed=5).reset()
    third = PettingZooEnv("simple_spread_v3", N=2, seed=6).reset()
    assert torch.equal(first["agents", "observation"], second["agents", "observation"])
    assert not torch.equal(first["agents", "observation"], third["agents", "observation"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
class TestTicTacToeOnCuda(EnvConformanceSuite):
    def make_env(self):
        return PettingZooEnv("tictactoe_v3", parallel=False, device="cuda:0")
