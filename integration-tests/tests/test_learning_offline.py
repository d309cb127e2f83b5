"""Offline RL from a recorded dataset in D4RL's layout: IQL (Kostrikov et al. 2021) learns the
Pendulum-v1 swing-up from the imitation tests' expert mixed with noisy episodes, plain
behaviour cloning (BCLoss) from the expert's own dataset, and CQL (Kumar et al. 2020) from
a dataset of mostly random-torque episodes.

The dataset: 30 gymnasium Pendulum-v1 episodes (200 steps) of the scripted swing-up
controller of ``examples/_pendulum_expert.py``, expert episodes (torque noise std 0.2)
alternating with noisy-expert ones (std 1.0), like D4RL's "medium-expert" mix (mean return
-148 for seed 0); written with h5py in D4RL's layout and read back through
``D4RLExperienceReplay(root=...)``. A random policy's return is about -1200. Each learned
policy plays 10 episodes of gymnasium's Pendulum-v1 (other seeds) through rl-envs' ``GymEnv``.

What the runs showed (see each test): a pure expert dataset and a ``TanhNormal`` actor fit by
likelihood make IQL's actor unstable (its tanh-squashed mean, not the mode, is what gets
played; -600 to -1200 after thousands of updates, even with the advantage weight at 0),
and unscaled rewards (Q about -100) make IQL's advantages ``q - V`` several units of noise,
which the weight ``exp(3 * (q - V))`` turns into a clipped 100 on a few samples. With the
IQL paper's own policy (a Gaussian whose mean is squashed by tanh, one state-independent log
std) and rewards scaled by 0.1 it learns in about 2000 updates.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule

h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')
gym = pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')

from rl_buffers.datasets import D4RLExperienceReplay  # noqa: E402
from rl_core.modules import MLP, ProbabilisticActor, TanhNormal, ValueOperator  # noqa: E402
from rl_core.modules.distributions import IndependentNormal  # noqa: E402
from rl_objectives import BCLoss, CQLLoss, IQLLoss, SoftUpdate  # noqa: E402

# The expert and the evaluation are the imitation examples' own (examples/_pendulum_expert.py).
_spec = importlib.util.spec_from_file_location(
    "pendulum_expert", Path(__file__).resolve().parents[2] / "examples" / "_pendulum_expert.py"
)
expert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(expert)
OBS_SCALE, MAX_TORQUE = expert.OBS_SCALE, expert.MAX_TORQUE
REWARD_SCALE = 0.1  # Q of about -10 rather than -100: IQL's advantages stay within a few units


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: the learning step runs two test files at once on 2 cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def scaled(rows: TensorDict) -> TensorDict:
    """The TED rows scaled for learning: observations as the imitation tests scale them,
    actions to [-1, 1], rewards by ``REWARD_SCALE``."""
    out = rows.select("observation", "action", ("next", "observation"), ("next", "reward"),
                      ("next", "done"), ("next", "terminated")).clone()  # fmt: skip
    out["observation"] = rows["observation"] * OBS_SCALE
    out["next", "observation"] = rows["next", "observation"] * OBS_SCALE
    out["action"] = rows["action"] / MAX_TORQUE
    out["next", "reward"] = rows["next", "reward"] * REWARD_SCALE
    return out


@pytest.fixture(scope="module")
def offline_batch(tmp_path_factory):
    """The medium-expert dataset read through D4RLExperienceReplay (scaled) and the mean
    return of its episodes."""
    root = tmp_path_factory.mktemp("d4rl")
    path = root / "pendulum-medium-expert-v0.hdf5"
    data_return = expert.record_d4rl_file(path, episodes=30, seed=0, noise=(0.2, 1.0))
    rows = D4RLExperienceReplay("pendulum-medium-expert-v0", root=root, download=False)[:]
    return scaled(rows), data_return


def play(actor) -> float:
    """The deterministic policy's mean return over 10 Pendulum-v1 episodes, seeds from 1000
    (the actor reads scaled observations and writes actions in [-1, 1])."""

    def act(obs):
        dist = actor.get_dist(TensorDict(observation=obs * OBS_SCALE, batch_size=obs.shape[:-1]))
        return MAX_TORQUE * dist.deterministic_sample.clamp(-1.0, 1.0)

    return expert.play(TensorDictModule(act, ["observation"], ["action"]), episodes=10, seed=1000)


def train(loss, data, updates: int, batch_size: int, optim) -> None:
    """``updates`` steps on uniform minibatches of ``data``, targets soft-updated (0.005)."""
    target = SoftUpdate(loss, tau=0.005)
    for _ in range(updates):
        out = loss(data[torch.randint(len(data), (batch_size,))])
        total = sum(value for key, value in out.items() if key.startswith("loss_"))
        optim.zero_grad()
        total.backward()
        optim.step()
        target.step()


class TanhMeanGaussian(torch.nn.Module):
    """The IQL paper's policy: ``Normal(tanh(mlp(s)), exp(log_std))``, one log std for all
    states (clamped to [-5, 2])."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: int) -> None:
        super().__init__()
        self.mean = MLP(obs_dim, action_dim, depth=2, num_cells=hidden)
        self.log_std = torch.nn.Parameter(torch.zeros(action_dim))

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loc = torch.tanh(self.mean(observation))
        return loc, self.log_std.clamp(-5.0, 2.0).exp().expand_as(loc)


@pytest.mark.learning
def test_iql_learns_the_swing_up_from_a_medium_expert_dataset(offline_batch):
    """IQLLoss (expectile 0.7, temperature 3, l2 critics; the paper's locomotion settings),
    64-wide MLPs, 3000 Adam updates (lr 1e-3) of 256 steps: -146 (seed 0) from a dataset at
    -148; 16 s (one torch thread, shared 2-core machine)."""
    data, data_return = offline_batch
    torch.manual_seed(0)
    actor = ProbabilisticActor(
        TensorDictModule(TanhMeanGaussian(3, 1, 64), ["observation"], ["loc", "scale"]),
        ["loc", "scale"],
        distribution_class=IndependentNormal,
    )
    qvalue = ValueOperator(MLP(4, 1, depth=2, num_cells=64), ["observation", "action"])
    value = ValueOperator(MLP(3, 1, depth=2, num_cells=64), ["observation"])
    loss = IQLLoss(
        actor, qvalue, value, loss_function="l2", expectile=0.7, temperature=3.0, gamma=0.99
    )
    train(loss, data, 3000, 256, torch.optim.Adam(loss.parameters(), lr=1e-3))
    returns = play(actor)
    print(f"IQL: {returns:.0f} (dataset {data_return:.0f})")
    assert returns > -400, (returns, data_return)


@pytest.mark.learning
def test_bc_clones_the_swing_up_controller(tmp_path):
    """BCLoss (maximum likelihood) on the imitation tests' expert dataset (30 episodes, torque
    noise 0.2, -139), the IQL test's policy, 2000 Adam updates (lr 1e-3) of 256 steps: -133
    (seed 0); 4 s. (A ``TanhNormal`` actor with a state-dependent scale fit the
    same way stays below -650.)"""
    expert_return = expert.record_d4rl_file(
        tmp_path / "pendulum-expert-v0.hdf5", episodes=30, seed=0, noise=0.2
    )
    data = scaled(D4RLExperienceReplay("pendulum-expert-v0", root=tmp_path, download=False)[:])
    torch.manual_seed(0)
    actor = ProbabilisticActor(
        TensorDictModule(TanhMeanGaussian(3, 1, 64), ["observation"], ["loc", "scale"]),
        ["loc", "scale"],
        distribution_class=IndependentNormal,
    )
    loss = BCLoss(actor)
    optim = torch.optim.Adam(loss.parameters(), lr=1e-3)
    for _ in range(2000):
        batch = data[torch.randint(len(data), (256,))]
        optim.zero_grad()
        loss(batch)["loss_bc"].backward()
        optim.step()
    returns = play(actor)
    print(f"BC: {returns:.0f} (expert {expert_return:.0f})")
    assert expert_return > -200
    assert returns > -400, (returns, expert_return)


@pytest.mark.learning
def test_cql_learns_the_swing_up_from_a_random_and_noisy_dataset(tmp_path):
    """CQLLoss (min_q_weight 1, 5 sampled actions per state, l2 critics, SAC temperature) on
    100 episodes (20k steps), two of every three with uniformly random torques and one of the
    expert with torque noise std 1.0 (mean return -856 for seed 0), read through
    ``D4RLExperienceReplay(root=...)`` unscaled as ``examples/cql.py`` learns it: a
    ``TanhNormal`` actor on [-2, 2], 64-wide MLPs, 3500 Adam updates (lr 2e-3) of 64 steps:
    -123 (seed 0); 54 s of CPU with pytest's start. The expert-heavy files (torque noise 0.2 and 1.0) leave CQL at -1100 to
    -1600 whatever the penalty weight; with the random episodes it learns after about 2000
    updates (the return swings by a few hundred between evaluations before that)."""
    data_return = expert.record_d4rl_file(
        tmp_path / "pendulum-random-v0.hdf5", episodes=100, seed=0, noise=(None, None, 1.0)
    )
    rows = D4RLExperienceReplay("pendulum-random-v0", root=tmp_path, download=False)[:]
    data = rows.select("observation", "action", ("next", "observation"), ("next", "reward"),
                       ("next", "done"), ("next", "terminated")).clone()  # fmt: skip
    torch.manual_seed(0)
    net = torch.nn.Sequential(MLP(3, 2, depth=2, num_cells=64), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(net, ["observation"], ["loc", "scale"]), ["loc", "scale"],
        distribution_class=TanhNormal,
        distribution_kwargs={"low": -MAX_TORQUE, "high": MAX_TORQUE},
    )  # fmt: skip
    qvalue = ValueOperator(MLP(4, 1, depth=2, num_cells=64), ["observation", "action"])
    loss = CQLLoss(
        actor, qvalue, bounds=(-MAX_TORQUE, MAX_TORQUE), loss_function="l2", min_q_weight=1.0,
        num_random=5, gamma=0.99,
    )  # fmt: skip
    train(loss, data, 3500, 64, torch.optim.Adam(loss.parameters(), lr=2e-3))
    returns = expert.play(actor, episodes=10, seed=1000)
    print(f"CQL: {returns:.0f} (dataset {data_return:.0f})")
    assert returns > -600, (returns, data_return)
