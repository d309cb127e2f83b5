"""Imitation from a recorded dataset in D4RL's layout: ACT (Zhao et al. 2023) and diffusion
behaviour cloning (Chi et al. 2023) clone a Pendulum-v1 swing-up controller.

The dataset: 30 gymnasium Pendulum-v1 episodes (200 steps) of a scripted controller (energy
pumping far from the top, a PD controller near it; torque noise of std 0.2), written with
h5py in D4RL's layout (``observations``, ``actions``, ``rewards``, ``terminals``,
``timeouts``) and read back through ``D4RLExperienceReplay(root=...)``. The expert's return
is about -140 per episode, a random policy's about -1200. Each cloned policy plays 10
episodes of gymnasium's Pendulum-v1 (other seeds) through rl-envs' ``GymEnv``.

Figures (seed 0) in each test's docstring; each test took about 1 min with both running at
once on the shared 2-core machine (one torch thread each).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential

h5py = pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')
gym = pytest.importorskip("gymnasium", reason='pip install "rl-envs[gymnasium]"')
np = pytest.importorskip("numpy")

from rl_buffers import LazyTensorStorage, TensorDictReplayBuffer  # noqa: E402
from rl_buffers.datasets import D4RLExperienceReplay  # noqa: E402
from rl_envs.transforms import ActionChunkTransform  # noqa: E402
from rl_objectives import ACTLoss, DiffusionBCLoss  # noqa: E402
from rl_objectives.modules import ACTModel, DiffusionActor  # noqa: E402

# The expert, its D4RL-layout recording and the evaluation are the imitation examples' own
# (examples/_pendulum_expert.py), so the tests train on what the examples train on.
_spec = importlib.util.spec_from_file_location(
    "pendulum_expert", Path(__file__).resolve().parents[2] / "examples" / "_pendulum_expert.py"
)
expert = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(expert)
OBS_SCALE, MAX_TORQUE = expert.OBS_SCALE, expert.MAX_TORQUE


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: the learning step runs two test files at once on 2 cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def expert_data(tmp_path_factory):
    """The dataset's TED rows (read through D4RLExperienceReplay) and the expert's return."""
    root = tmp_path_factory.mktemp("d4rl")
    expert_return = expert.record_d4rl_file(
        root / "pendulum-expert-v0.hdf5", episodes=30, seed=0, noise=0.2
    )
    data = D4RLExperienceReplay("pendulum-expert-v0", root=root, download=False)
    return data[:], expert_return


def play(policy) -> float:
    """The policy's mean return over 10 Pendulum-v1 episodes (gymnasium), seeds from 1000."""
    return expert.play(policy, episodes=10, seed=1000)


def test_chunks_of_a_d4rl_dataset_stop_at_its_episode_ends(tmp_path):
    expert.record_d4rl_file(tmp_path / "pendulum-short-v0.hdf5", episodes=2, seed=3, noise=0.2)
    rows = D4RLExperienceReplay("pendulum-short-v0", root=tmp_path, download=False)[:]
    assert rows.shape == (399,)  # 2 x 200 steps, the file's last row dropped
    chunks = ActionChunkTransform(5)(rows.unsqueeze(0)).squeeze(0)
    action = rows["action"]
    for t in (0, 196, 197, 199, 200, 398):
        last = 199 if t <= 199 else 398  # the episode's last step (timeout at 199)
        for j in range(5):
            assert chunks["vla_action", "chunk"][t, j].item() == action[min(t + j, last)].item()
            assert chunks["action_is_pad"][t, j].item() == (t + j > last)


def test_replay_buffer_chunks_sampled_windows():
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(8), transform=ActionChunkTransform(3), batch_size=2
    )
    rb.extend(TensorDict(action=torch.randn(8, 5, 2), batch_size=[8]))
    assert "vla_action" not in rb.storage[:].keys()  # extend stores the windows as they are
    sample = rb.sample()
    assert sample["vla_action", "chunk"].shape == (2, 5, 3, 2)
    assert sample["action_is_pad"].shape == (2, 5, 3)


@pytest.mark.learning
def test_act_clones_the_swing_up_controller(expert_data):
    """ACT with chunks of 4 (a 32-wide transformer CVAE, beta = 10), 1500 Adam updates of
    256 steps, executing the first action of each predicted chunk: -132 (seed 0) for an
    expert at -139."""
    rows, expert_return = expert_data
    torch.manual_seed(0)
    chunk_size = 4
    targets = ActionChunkTransform(chunk_size)(rows.unsqueeze(0)).squeeze(0)
    observation = rows["observation"] * OBS_SCALE
    chunks = targets["vla_action", "chunk"] / MAX_TORQUE
    model = ACTModel(
        3,
        1,
        chunk_size,
        hidden_dim=32,
        nheads=2,
        num_encoder_layers=1,
        num_decoder_layers=1,
        latent_dim=4,
        dropout=0.0,
        dim_feedforward=64,
    )
    actor = TensorDictModule(
        model, ["observation", "action_chunk"], ["action_pred", "mu", "log_var"]
    )
    loss = ACTLoss(actor, kl_weight=10.0)
    optim = torch.optim.Adam(loss.parameters(), lr=2e-3)
    for _ in range(1500):
        index = torch.randint(len(rows), (256,))
        batch = TensorDict(observation=observation[index], batch_size=[256])
        batch["vla_action", "chunk"] = chunks[index]
        optim.zero_grad()
        loss(batch)["loss_act"].backward()
        optim.step()
    model.eval()

    def first_action(obs):
        return MAX_TORQUE * model(obs * OBS_SCALE)[0][..., 0, :]  # z = 0: the prior's mean

    returns = play(TensorDictModule(first_action, ["observation"], ["action"]))
    print(f"ACT: {returns:.0f} (expert {expert_return:.0f})")
    assert expert_return > -200
    assert returns > -400, (returns, expert_return)


@pytest.mark.learning
def test_diffusion_bc_clones_the_swing_up_controller(expert_data):
    """A DiffusionActor (50 DDPM steps, beta from 1e-4 to 0.2; sampled with 10 DDIM steps)
    trained by DiffusionBCLoss, 6000 Adam updates of 256 steps, deterministic DDIM (eta = 0):
    -147 (seed 0) for an expert at -139 (after 3000 updates: about -550)."""
    rows, expert_return = expert_data
    torch.manual_seed(0)
    observation = rows["observation"] * OBS_SCALE
    action = rows["action"] / MAX_TORQUE
    actor = DiffusionActor(
        1,
        3,
        num_steps=50,
        beta_end=0.2,
        sampler="ddim",
        sampling_steps=10,
        in_keys=["obs_scaled"],
        out_keys=["action_scaled"],
    )
    loss = DiffusionBCLoss(actor).set_keys(observation="obs_scaled", action="action_scaled")
    optim = torch.optim.Adam(loss.parameters(), lr=2e-3)
    for _ in range(6000):
        index = torch.randint(len(rows), (256,))
        batch = TensorDict(
            obs_scaled=observation[index], action_scaled=action[index], batch_size=[256]
        )
        optim.zero_grad()
        loss(batch)["loss_diffusion_bc"].backward()
        optim.step()
    policy = TensorDictSequential(
        TensorDictModule(lambda obs: obs * OBS_SCALE, ["observation"], ["obs_scaled"]),
        actor,
        TensorDictModule(
            lambda a: (MAX_TORQUE * a).clamp(-2.0, 2.0), ["action_scaled"], ["action"]
        ),
    )
    returns = play(policy)
    print(f"diffusion BC: {returns:.0f} (expert {expert_return:.0f})")
    assert expert_return > -200
    assert returns > -400, (returns, expert_return)
