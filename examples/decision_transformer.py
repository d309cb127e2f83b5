"""Offline Decision Transformer on Pendulum, from a dataset this script generates, and its
online fine-tuning (``--online``).

One file, top to bottom: the config; the dataset (``expert_episodes`` episodes of a swing-up
controller with exploration noise and ``random_episodes`` of a uniformly random policy, stored
episode by episode in a ``LazyMemmapStorage`` on disk); the ``DTActor`` trained with
``DTLoss`` on context windows of ``context`` steps (returns-to-go divided by
``return_scale``; the learning rate warms up over ``lr_warmup`` updates, then decays to 0 on a
cosine: the defaults reach about -180 conditioned on -150 in 2000 updates of 256 windows, where
a constant rate on 64 windows of 5 steps and a 64-wide model needed 3000 updates for -196);
then the evaluation: ``eval_episodes`` episodes side by side, each step the
last ``context`` observations, previous actions and returns-to-go go through the
``DecisionTransformerInferenceWrapper``, and the return-to-go starts at ``target_return`` and
loses each reward (what rl-envs' ``TargetReturn`` does inside an env).

The observation the transformer sees is Pendulum's ``[cos, sin, speed]`` and the elapsed
fraction of the episode ``t / max_steps``. On a fixed horizon the return-to-go alone does not
say which policy produced a step: 20 steps before its end, a random episode still has about
-120 to collect, as much as the swing-up controller at its start. The original Decision
Transformer embeds the time step for this reason; TorchRL's ``DecisionTransformer`` (and
rl-core's) has only the positions inside the window, so the time goes in as a feature.
Without it (``--no-time-feature``) the model averages the two policies there and the
conditioned return stays near the random policy's.

Actions are stored and predicted in ``[-1, 1]`` (the ``tanh`` range of the actors) and
multiplied by Pendulum's maximum torque 2 before the env gets them.

``--online``: the Online Decision Transformer recipe (Zheng et al., 2022). An
``OnlineDTActor`` under a ``TanhNormal`` (a ``ProbabilisticActor``) is pretrained on the same
dataset with ``OnlineDTLoss`` (log-likelihood, entropy bonus, learned temperature) and the same
learning-rate schedule, then ``online_iterations`` times: ``online_episodes`` episodes are
collected with sampled actions conditioned on ``online_target_return`` (by default
``target_return``), relabelled with the returns-to-go they actually got and written into the
same memmap storage, and ``online_updates`` more updates at the constant ``online_lr`` run on
everything stored; each round is evaluated with the ``TanhNormal``'s ``tanh(loc)``
(``--eval-action mode``: its mode). The targets of ``OnlineDTLoss`` are clamped to
``+-action_clamp``: at ``+-1`` the log-likelihood is that of ``atanh`` clamped far out, and the
controller's saturated torques would drag the Gaussian there. What it does here (seed 0, 5
rounds of 8 episodes and 300 updates): the pretrained ODT gets -180, the rounds' sampled
episodes -109 to -275, the evaluations -180, -180, -180, -180, -179 (seed 1: pretrained -158,
rounds -270, then -137 four times; the offline ``DTActor`` of that seed: -154).

Why the evaluations once swung (-450 to -1427 over the rounds, sampled episodes -295 to
-372): the pretraining stopped at a constant learning rate of 1e-3 on 64 windows, and each
round's 300 updates at that rate moved a policy that sits between "swing up and hold" and "give
up after the swing-up" on the same 8 evaluation starts; an under-trained ``TanhNormal`` is also
wide where the controller's torque changes sign, so ``tanh(loc)`` is a weak torque there
(seed 0, evaluated halfway through the 2000 pretraining updates: ``tanh(loc)`` -1050, the
squashed distribution's mean -428, samples -329; at the end they agree: -264, -247, -278). The target return matters as much: -150 is below
the controller's usual -120, and an episode that has collected -120 in its swing-up still has
-30 "to lose", which in the data only the mediocre episodes have (a DT of 1000 updates, seed 1:
-657 conditioned on -150, -244 on 0). Asking the collection for 0 (``--online-target-return
0``, the paper's higher exploration target) made the sampled episodes worse (-339 to -516) and
left the evaluations at -180.

The data policy here is a hand-written energy-pumping swing-up controller, not a trained SAC
agent: it gives good and mediocre episodes in seconds, so the run stays on a CPU budget.

Run:  ``uv run python examples/decision_transformer.py`` (the figures it prints: the mean
return of the dataset's expert and random episodes and of the DT conditioned on
``target_return``); ``uv run python examples/decision_transformer.py --online``. Every config
field is a flag: ``--help`` lists them.

A progress bar follows each training phase (the loss of the last update beside it), and each
phase prints its evaluation. Writes to ``runs/<exp-name>/``: the logs (CSV by default),
``config.json``, ``checkpoint.pt`` and ``learning_curve.png`` (the training loss against
updates, and the evaluation return after the offline phase and each online round, with
``target_return`` dashed).
"""

from __future__ import annotations

from dataclasses import dataclass

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--context 10``)."""

    seed: int = 0
    expert_episodes: int = 48  # episodes of the swing-up controller in the dataset
    random_episodes: int = 48  # episodes of the uniformly random policy in the dataset
    expert_noise: float = 0.3  # std of the Gaussian noise added to the controller's torque
    max_steps: int = 200  # Pendulum-v1's time limit
    time_feature: bool = True  # append t / max_steps to the observation (see the docstring)
    context: int = 3  # steps the transformer sees
    n_embd: int = 32
    n_layer: int = 2
    n_head: int = 2
    dropout: float = 0.0
    return_scale: float = 1000.0  # returns-to-go are divided by this
    batch_size: int = 256  # context windows per update
    updates: int = 2000  # Adam steps on the offline dataset
    lr: float = 3e-3
    lr_warmup: int = 100  # offline updates over which the learning rate rises linearly to lr
    lr_cosine: bool = True  # cosine decay of the learning rate to 0 over the offline updates
    grad_clip: float = 1.0
    target_return: float = -150.0  # the return the DT is asked for at evaluation
    eval_episodes: int = 8
    online: bool = False  # Online DT: OnlineDTActor + OnlineDTLoss, then online_iterations
    online_iterations: int = 5  # rounds of collecting episodes and updating (with --online)
    online_episodes: int = 8  # episodes collected per round
    online_target_return: float | None = None  # what collected episodes ask (None: target_return)
    online_updates: int = 300  # Adam steps per round
    online_lr: float | None = 3e-4  # learning rate of the online rounds (None: lr)
    alpha_init: float = 0.1  # OnlineDTLoss's initial entropy temperature
    action_clamp: float = 0.99  # OnlineDTLoss's target actions are clamped to +-this
    eval_action: str = "deterministic"  # the OnlineDTActor's evaluation action (or "mode")
    logger: str = "csv"
    exp_name: str | None = None  # defaults to dt_Pendulum_<seed>_<unix time> (odt_ with --online)
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "expert_noise": _recipe.at_least(0),
    "n_embd": _recipe.multiple_of("n_head"),
    "dropout": _recipe.between(0, 1, open_high=True),
    "return_scale": _recipe.above(0),
    "lr_warmup": _recipe.Rule("an integer >= 0", lambda v, _: v >= 0),
    "online_target_return": _recipe.FINITE,
    "alpha_init": _recipe.above(0),
    "action_clamp": _recipe.between(0, 1, open_low=True),
    "eval_action": _recipe.one_of("deterministic", "mode"),
    "logger": _recipe.one_of("csv", "tensorboard", "wandb", "mlflow"),
}


def parse_config(argv: list[str] | None = None) -> Config:
    return _recipe.parse_config(Config, argv, description=__doc__.splitlines()[0], rules=RULES)


if __name__ == "__main__":
    # Read before torch and the packages load (seconds): --help and a refused value answer now.
    CONFIG = parse_config()


import dataclasses
import math
import tempfile
import time
from pathlib import Path

import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule, set_interaction_type
from tqdm import tqdm

from rl_buffers import LazyMemmapStorage, TensorDictReplayBuffer
from rl_core.modules import ProbabilisticActor, TanhDelta, TanhNormal
from rl_envs import PendulumEnv
from rl_objectives import DTLoss, OnlineDTLoss
from rl_objectives.loggers import get_logger
from rl_objectives.modules import DecisionTransformerInferenceWrapper, DTActor, OnlineDTActor

MAX_TORQUE = 2.0
IN_KEYS = ["observation", "action", "return_to_go"]


def swing_up(obs: torch.Tensor) -> torch.Tensor:
    """Energy pumping far from the top, a PD controller near it (torque in ``[-2, 2]``).

    With ``theta = 0`` upright, Pendulum's dynamics ``theta'' = 15 sin(theta) + 3 u`` conserve
    ``E = theta'^2 / 2 + 15 cos(theta)`` without torque, 15 at rest on top; ``dE/dt = 3 u
    theta'``, so pushing along ``theta'`` while ``E < 15`` pumps energy in.
    """
    cos, sin, speed = obs.unbind(-1)
    theta = torch.atan2(sin, cos)
    energy = 0.5 * speed**2 + 15.0 * cos
    pump = 2.0 * torch.sign(speed + 1e-6) * torch.sign(15.0 - energy)
    hold = -(10.0 * theta + 2.0 * speed)
    torque = torch.where((cos > 0.85) & (speed.abs() < 4.0), hold, pump)
    return torque.clamp(-MAX_TORQUE, MAX_TORQUE).unsqueeze(-1)


def features(cfg: Config, obs: torch.Tensor, step: int) -> torch.Tensor:
    """What the transformer sees of Pendulum's observation at ``step``: ``[cos, sin, speed]``
    and, with ``time_feature``, ``step / max_steps``."""
    if not cfg.time_feature:
        return obs
    return torch.cat([obs, obs.new_full((*obs.shape[:-1], 1), step / cfg.max_steps)], dim=-1)


def returns_to_go(reward: torch.Tensor) -> torch.Tensor:
    """``R_t = r_t + r_{t+1} + ... + r_{T-1}`` along the time dim of ``[*B, T, 1]`` rewards."""
    return reward.flip(-2).cumsum(-2).flip(-2)


def generate_episodes(cfg: Config, episodes: int, expert: bool) -> TensorDict:
    """``episodes`` Pendulum episodes ``[episodes, max_steps]`` with their returns-to-go."""
    env = PendulumEnv(batch_size=[episodes])
    env.set_seed(cfg.seed + (0 if expert else 1))

    def policy(td):
        if expert:
            noise = cfg.expert_noise * torch.randn(episodes, 1)
            action = (swing_up(td["observation"]) + noise).clamp(-MAX_TORQUE, MAX_TORQUE)
        else:
            action = (torch.rand(episodes, 1) * 2.0 - 1.0) * MAX_TORQUE
        return td.set("action", action)

    traj = env.rollout(cfg.max_steps, policy)
    reward = traj["next", "reward"]
    obs = torch.stack(
        [features(cfg, traj["observation"][:, t], t) for t in range(cfg.max_steps)], dim=1
    )
    return TensorDict(
        observation=obs,
        action=traj["action"] / MAX_TORQUE,  # the policies' [-1, 1] scale
        reward=reward,
        return_to_go=returns_to_go(reward),
        batch_size=traj.batch_size,
    )


def sample_windows(data: TensorDict, cfg: Config, generator: torch.Generator) -> TensorDict:
    """``batch_size`` windows of ``context`` steps ending anywhere in an episode; windows
    reaching before the episode's start are zero-padded on the left, as at evaluation."""
    k = cfg.context
    padded = torch.cat(
        [data[:, :1].apply(lambda x: torch.zeros_like(x)).expand(data.shape[0], k - 1), data],
        dim=1,
    )
    episode = torch.randint(data.shape[0], (cfg.batch_size,), generator=generator)
    end = torch.randint(data.shape[1], (cfg.batch_size,), generator=generator)
    steps = end[:, None] + torch.arange(k)[None, :]  # indices into the padded episodes
    window = padded[episode[:, None], steps]
    window["return_to_go"] = window["return_to_go"] / cfg.return_scale
    return window


@torch.no_grad()
def run_episodes(
    cfg: Config, wrapper: DecisionTransformerInferenceWrapper, episodes: int, seed: int
) -> TensorDict:
    """``episodes`` episodes side by side, conditioned on ``target_return``: each step the last
    ``context`` observations, previous actions and returns-to-go go through ``wrapper``; the
    return-to-go starts at the target and loses each reward (``TargetReturn``). Returns the
    episodes ``[episodes, max_steps]`` as stored in the dataset, with the returns-to-go they
    actually got (hindsight relabelling, for ``--online``)."""
    n, k = episodes, cfg.context
    env = PendulumEnv(batch_size=[n])
    env.set_seed(seed)
    td = env.reset()
    obs_dim = features(cfg, td["observation"], 0).shape[-1]
    obs_hist = torch.zeros(n, k, obs_dim)
    act_hist = torch.zeros(n, k, 1)  # the k previous actions, in [-1, 1]
    rtg_hist = torch.zeros(n, k, 1)
    rtg = torch.full((n, 1), cfg.target_return / cfg.return_scale)
    observations, actions, rewards = [], [], []
    for step in range(cfg.max_steps):
        obs = features(cfg, td["observation"], step)
        obs_hist = torch.cat([obs_hist[:, 1:], obs[:, None]], dim=1)
        rtg_hist = torch.cat([rtg_hist[:, 1:], rtg[:, None]], dim=1)
        inputs = TensorDict(
            observation=obs_hist, action=act_hist, return_to_go=rtg_hist, batch_size=[n]
        )
        action = wrapper(inputs)["action"]
        td.set("action", action * MAX_TORQUE)
        td = env.step(td)
        reward = td["next", "reward"]
        rtg = rtg - reward / cfg.return_scale  # the return still to collect (TargetReturn)
        act_hist = torch.cat([act_hist[:, 1:], action[:, None]], dim=1)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        td = td["next"]
    reward = torch.stack(rewards, dim=1)
    return TensorDict(
        observation=torch.stack(observations, dim=1),
        action=torch.stack(actions, dim=1),
        reward=reward,
        return_to_go=returns_to_go(reward),
        batch_size=[n, cfg.max_steps],
    )


EVAL_ACTIONS = {"mode": InteractionType.MODE, "deterministic": InteractionType.DETERMINISTIC}


def evaluate(cfg: Config, wrapper: DecisionTransformerInferenceWrapper) -> float:
    """Mean return of ``eval_episodes`` episodes conditioned on ``target_return``. The
    ``OnlineDTActor``'s action is its ``TanhNormal``'s squashed mean ``tanh(loc)``
    (``eval_action="deterministic"``) or its mode (``"mode"``); the ``DTActor`` has only one."""
    if cfg.eval_action not in EVAL_ACTIONS:
        raise ValueError(
            f"eval_action must be one of {sorted(EVAL_ACTIONS)}, got {cfg.eval_action!r}."
        )
    with set_interaction_type(EVAL_ACTIONS[cfg.eval_action]):
        episodes = run_episodes(cfg, wrapper, cfg.eval_episodes, cfg.seed + 100)
    return episodes["reward"].sum((-1, -2)).mean().item()


def make_policy(cfg: Config, obs_dim: int) -> tuple[torch.nn.Module, TensorDictModule]:
    """The actor network and its TensorDict policy: a ``DTActor`` whose unbounded output a
    ``TanhDelta`` squashes into the action, or with ``--online`` an ``OnlineDTActor``
    writing ``loc``/``scale`` for a ``TanhNormal``."""
    config = {
        "n_embd": cfg.n_embd,
        "n_layer": cfg.n_layer,
        "n_head": cfg.n_head,
        "n_inner": 4 * cfg.n_embd,
        "n_positions": 3 * cfg.context,
        "resid_pdrop": cfg.dropout,
        "attn_pdrop": cfg.dropout,
    }
    if not cfg.online:
        actor = DTActor(obs_dim, 1, transformer_config=config)
        params = TensorDictModule(actor, IN_KEYS, ["param"])
        return actor, ProbabilisticActor(params, ["param"], distribution_class=TanhDelta)
    actor = OnlineDTActor(obs_dim, 1, transformer_config=config)
    params = TensorDictModule(actor, IN_KEYS, ["loc", "scale"])
    return actor, ProbabilisticActor(params, ["loc", "scale"], distribution_class=TanhNormal)


def offline_lr_factor(cfg: Config, step: int) -> float:
    """The learning rate of offline update ``step`` over ``lr``: a linear warm-up over
    ``lr_warmup`` updates, then with ``lr_cosine`` a cosine decay to 0 at ``updates``."""
    factor = min(1.0, (step + 1) / cfg.lr_warmup) if cfg.lr_warmup > 0 else 1.0
    if cfg.lr_cosine:
        factor *= 0.5 * (1.0 + math.cos(math.pi * min(step, cfg.updates) / cfg.updates))
    return factor


def save_curve(
    losses: list[tuple[int, float]], evals: list[tuple[int, float]], cfg: Config, path: Path
) -> None:
    """The training loss against updates and the evaluation returns (with the return they
    were conditioned on, dashed) against the update they followed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (loss_ax, eval_ax) = plt.subplots(1, 2, figsize=(10, 4))
    loss_ax.plot(*zip(*losses, strict=True), label="training loss")
    loss_ax.set_xlabel("updates")
    loss_ax.set_ylabel("loss")
    loss_ax.set_title(f"{'ODT' if cfg.online else 'DT'} on Pendulum: training loss")
    eval_ax.plot(*zip(*evals, strict=True), marker="o", label="evaluation")
    eval_ax.axhline(cfg.target_return, color="gray", linestyle="--", label="conditioned on")
    eval_ax.set_xlabel("updates")
    eval_ax.set_ylabel(f"mean return of {cfg.eval_episodes} episodes")
    eval_ax.set_title("evaluation")
    eval_ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, float]:
    """Generates and stores the dataset, trains the DT (and with ``--online`` fine-tunes it
    on the episodes it collects), evaluates it; returns the figures (``expert_return``,
    ``random_return``, ``eval_return``, ``final_loss``, ``seconds``; with ``--online`` also
    ``offline_return``, ``online_returns`` (the evaluation after each round) and
    ``collected_returns`` (the mean return of each round's sampled episodes))."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small batches: threads cost more than they give on a shared CPU
    algo = "odt" if cfg.online else "dt"
    exp_name = cfg.exp_name or f"{algo}_Pendulum_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)
    start = time.perf_counter()

    print(
        f"generating the dataset: {cfg.expert_episodes} controller and {cfg.random_episodes} "
        f"random episodes of {cfg.max_steps} steps"
    )
    expert = generate_episodes(cfg, cfg.expert_episodes, expert=True)
    random = generate_episodes(cfg, cfg.random_episodes, expert=False)
    expert_return = expert["reward"].sum((-1, -2)).mean().item()
    random_return = random["reward"].sum((-1, -2)).mean().item()
    episodes = torch.cat([expert, random], dim=0)
    print(
        f"dataset: {episodes.shape[0]} episodes, expert return {expert_return:.0f}, "
        f"random return {random_return:.0f}"
    )

    actor, policy = make_policy(cfg, episodes["observation"].shape[-1])
    if cfg.online:
        loss_module = OnlineDTLoss(policy, alpha_init=cfg.alpha_init)
        params = list(loss_module.parameters())
    else:
        loss_module = DTLoss(policy, loss_function="l2")
        params = list(actor.parameters())
    optim = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: offline_lr_factor(cfg, s))
    generator = torch.Generator().manual_seed(cfg.seed)
    wrapper = DecisionTransformerInferenceWrapper(policy, inference_context=cfg.context)
    figures: dict[str, float] = {}
    step = 0
    losses: list[tuple[int, float]] = []  # (update, loss) every 10 updates, for the curve
    evals: list[tuple[int, float]] = []  # (update, evaluation return)

    def update(data: TensorDict, updates: int, phase: str) -> torch.Tensor:
        nonlocal step
        loss = torch.tensor(math.nan)
        bar = tqdm(range(updates), desc=phase, unit="updates", dynamic_ncols=True)
        for _ in bar:
            window = sample_windows(data, cfg, generator)
            if cfg.online:
                # the TanhNormal's log-likelihood of actions on the bounds is that of atanh(+-1)
                # clamped far out (about +-9): the controller's saturated torques would drag the
                # Gaussian there; ``action_clamp`` keeps the targets inside
                limit = cfg.action_clamp
                window["action"] = window["action"].clamp(-limit, limit)
            out = loss_module(window)
            if cfg.online:  # log-likelihood + entropy bonus for the actor, and the temperature
                loss = out["loss_log_likelihood"] + out["loss_entropy"] + out["loss_alpha"]
            else:
                loss = out["loss"]
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            optim.step()
            if step < cfg.updates:  # the schedule covers the offline updates
                schedule.step()
            if step % 10 == 0:
                losses.append((step, loss.item()))
                bar.set_postfix(loss=f"{loss.item():.4f}")
            if step % 100 == 0:
                logger.log_scalar("train/loss", loss.item(), step)
                if cfg.online:
                    logger.log_scalar("train/alpha", out["alpha"].item(), step)
            step += 1
        bar.close()
        return loss

    online_capacity = cfg.online_iterations * cfg.online_episodes if cfg.online else 0
    with tempfile.TemporaryDirectory() as scratch:
        # one item per episode (a [max_steps] TensorDict), memory-mapped on disk; the online
        # rounds append their episodes, and each training phase reads everything stored
        storage = LazyMemmapStorage(
            episodes.shape[0] + online_capacity, scratch_dir=scratch, existsok=True
        )
        buffer = TensorDictReplayBuffer(storage=storage)
        buffer.extend(episodes)
        loss = update(buffer[:].clone(), cfg.updates, "offline updates")
        actor.eval()
        eval_return = evaluate(cfg, wrapper)
        logger.log_scalar("eval/return", eval_return, step)
        evals.append((step, eval_return))
        print(
            f"offline {'pretraining' if cfg.online else 'training'}: conditioned on "
            f"{cfg.target_return:.0f}: {eval_return:.0f}"
        )
        if cfg.online:
            figures["offline_return"] = eval_return
            online_returns, collected_returns = [], []
            for group in optim.param_groups:  # a constant rate after the offline schedule
                group["lr"] = cfg.lr if cfg.online_lr is None else cfg.online_lr
            explore_cfg = cfg
            if cfg.online_target_return is not None:
                explore_cfg = dataclasses.replace(cfg, target_return=cfg.online_target_return)
            for round_ in range(cfg.online_iterations):
                with set_interaction_type(InteractionType.RANDOM):
                    new = run_episodes(
                        explore_cfg, wrapper, cfg.online_episodes, cfg.seed + 1000 + round_
                    )
                collected = new["reward"].sum((-1, -2)).mean().item()
                buffer.extend(new)
                actor.train()
                loss = update(buffer[:].clone(), cfg.online_updates, f"round {round_ + 1}")
                actor.eval()
                eval_return = evaluate(cfg, wrapper)
                evals.append((step, eval_return))
                logger.log_scalar("online/collected_return", collected, step)
                logger.log_scalar("eval/return", eval_return, step)
                online_returns.append(eval_return)
                collected_returns.append(collected)
                print(
                    f"online round {round_ + 1}: collected {collected:.0f}, "
                    f"evaluation {eval_return:.0f} ({len(buffer)} episodes stored)"
                )
            figures["online_returns"] = online_returns
            figures["collected_returns"] = collected_returns
    seconds = time.perf_counter() - start
    torch.save(
        {"actor": actor.state_dict(), "config": dataclasses.asdict(cfg)}, run_dir / "checkpoint.pt"
    )
    if cfg.plot:
        save_curve(losses, evals, cfg, run_dir / "learning_curve.png")
    print(
        f"{'ODT' if cfg.online else 'DT'} conditioned on {cfg.target_return:.0f}: mean return "
        f"{eval_return:.0f} over {cfg.eval_episodes} episodes ({seconds:.0f} s)"
    )
    figures.update(
        expert_return=expert_return,
        random_return=random_return,
        eval_return=eval_return,
        final_loss=loss.item(),
        seconds=seconds,
    )
    return figures


if __name__ == "__main__":
    train(CONFIG)
