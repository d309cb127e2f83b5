"""Dreamer on Pendulum from state observations: a world model, and behaviour learned in it.

One file, top to bottom: the config, the world model (an MLP encoder of the observation, the
RSSM filtered by ``RSSMRollout``, an MLP decoder and a reward head, all in a
``WorldModelWrapper``), the imagination env (``DreamerEnv`` around the RSSM prior and the
reward head), the actor (``DreamerActor`` under a ``TanhNormal``) and the value network, the
three losses (``DreamerModelLoss``, ``DreamerActorLoss``, ``DreamerValueLoss``), then the loop.
Each iteration plays ``num_envs`` Pendulum episodes of 200 steps with the current policy
(filtering the observations through the RSSM as it goes; the first ``prefill_episodes`` with
random torques), stores them, then takes ``updates_per_iteration`` steps of each loss on
``batch_size`` sequences of ``seq_len`` steps: the world model learns to reconstruct the
observations and rewards, the actor maximises the lambda-returns of ``imagination_horizon``
imagined steps started from ``imagination_starts`` posterior states of the batch, the value
regresses on them.

``--pixels`` replaces the observation by a 64x64 render of the pendulum (the angle only), seen
through Dreamer's convolutional ``ObsEncoder``/``ObsDecoder``.

``--v3`` swaps in DreamerV3's pieces: a discrete stochastic state (``num_categoricals``
one-hot vectors of ``num_classes``, straight-through gradients, 1% unimix: ``RSSMPriorV3``,
``RSSMPosteriorV3``), reward and value heads of ``num_bins`` logits over symexp bins
(``SymExpTwoHot``) trained by two-hot cross-entropy, and the three V3 losses
(``DreamerV3ModelLoss``: balanced KL with free bits, symlog reconstruction;
``DreamerV3ActorLoss``: lambda-returns divided by their moving 5-95 percentile range, entropy
bonus; ``DreamerV3ValueLoss``), trained as one objective by ``DreamerV3Loss`` (with its
replay-value term: the critic on the replayed posterior latents, ``--replay-value-weight``);
its reward and value heads start at uniform logits (a zeroed output layer, as the paper's).
``--v3 --iterations 20`` (17.6k frames) ends at -233 over the last 3 evaluations (best -168)
against -1088 random (22 min at load average 7-14, 295 s of CPU; ``--replay-value-weight 0``:
-361). The learning test ``test_dreamer_v3_beats_the_random_policy_on_pendulum`` runs ``--v3
--iterations 16 --updates-per-iteration 60 --num-envs 8 --batch-size 64 --imagination-starts
64`` with learning rates 2e-3 (960 updates, 27.2k frames): -422.7, 115 s of CPU.

Run:  ``uv run python examples/dreamer.py`` (25.6k frames, 3000 steps of each loss; 164 s on a
2-core CPU at load average 1.7-2.5, a second run beside it): the deterministic policy's return
goes from about -1400 to -99 at best, -183 over the last 10 evaluations (-129 over the last 3),
against -1093 for random torques from the same start states; -250 first at 13.6k frames. The
learning test (``integration-tests/tests/test_learning_dreamer.py``) runs ``--iterations 20
--num-envs 8 --imagination-starts 128 --seed 1``: -307 against -1258, 100 s. Every config field
is a flag: ``--help`` lists them.

Writes to ``runs/<exp-name>/``: the logs (CSV by default, ``--logger tensorboard|wandb``),
``config.json``, ``checkpoint.pt`` (world model, actor, value, config) and
``learning_curve.png`` (the evaluation return after each iteration).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import _recipe


@dataclass
class Config:
    """Every knob of the run; each field is also a command-line flag (``--iterations 10``)."""

    seed: int = 0
    pixels: bool = False  # observe 64x64 renders of the pendulum instead of [cos, sin, thdot]
    v3: bool = False  # DreamerV3's discrete latents, two-hot heads and losses
    num_envs: int = 4  # Pendulum episodes played side by side per iteration
    max_steps: int = 200  # Pendulum-v1's time limit
    prefill_episodes: int = 8  # random-torque episodes before the first update
    iterations: int = 30  # collect-then-train rounds after the prefill
    updates_per_iteration: int = 100  # steps of each loss per round
    batch_size: int = 32  # sequences per update
    seq_len: int = 16  # steps per sequence
    state_dim: int = 8  # the RSSM's stochastic state (V1)
    num_categoricals: int = 8  # V3: categorical variables of the stochastic state
    num_classes: int = 8  # V3: classes of each
    num_bins: int = 255  # V3: symexp bins of the reward and value heads
    entropy_bonus: float = 3e-4  # V3: weight of the actor's entropy
    kl_mode: Literal["separate", "balanced"] = "separate"  # V3: DreamerV3ModelLoss's kl_mode
    replay_value_weight: float = 0.3  # V3: DreamerV3Loss's critic term on the replayed latents
    belief_dim: int = 32  # the RSSM's deterministic belief (GRU state)
    hidden: int = 32  # width of every hidden layer
    imagination_horizon: int = 15
    actor_std_bias: float = 1.0  # the actor's scale before learning (DreamerActor's std_bias)
    imagination_starts: int = 256  # posterior states of the batch imagination starts from
    gamma: float = 0.99
    lmbda: float = 0.95
    # V1: the KL's floor (V3 uses 1 free nat per step, as the paper). Dreamer's 3 left the KL of
    # this 8-dim state at its floor, so the prior that imagination samples from barely trained
    free_nats: float = 1.0
    reward_scale: float = 0.1  # rewards are learned and imagined in this scale
    model_lr: float = 1e-3
    actor_lr: float = 1e-3
    value_lr: float = 1e-3
    grad_clip: float = 100.0
    exploration_noise: float = 0.3  # Gaussian noise added to the sampled torque (in [-1, 1] units)
    eval_episodes: int = 8  # deterministic-policy episodes after each evaluated iteration
    eval_every: int = 1  # evaluate after every eval_every-th iteration (and after the last)
    logger: Literal["csv", "tensorboard", "wandb", "mlflow"] = "csv"  # where the logs go
    exp_name: str | None = None  # defaults to dreamer_Pendulum_<seed>_<unix time>
    out_dir: str = "runs"
    plot: bool = True


RULES = {
    "entropy_bonus": _recipe.at_least(0),
    "actor_std_bias": _recipe.FINITE,
    "free_nats": _recipe.at_least(0),
    "replay_value_weight": _recipe.at_least(0),
    "gamma": _recipe.between(0, 1, open_high=True),  # V3's replay horizon is 1 / (1 - gamma)
}


def parse_config(argv: list[str] | None = None) -> Config:
    """Builds a :class:`Config` from the command line: flags, ``key=value`` overrides and
    ``--config runs/<exp>/config.json`` (``--help`` lists every field and its default)."""
    return _recipe.parse_config(Config, argv, description=__doc__.split("\n")[0], rules=RULES)


if __name__ == "__main__":
    # Read before torch and the packages load (seconds): --help and a refused value answer now.
    CONFIG = parse_config()


import dataclasses
import time
from pathlib import Path

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential
from tqdm import tqdm

from rl_core.exploration import ExplorationType, set_exploration_type
from rl_core.modules import MLP, ProbabilisticActor, TanhNormal
from rl_envs import DreamerEnv, PendulumEnv
from rl_envs.native.pendulum import MAX_SPEED, MAX_TORQUE
from rl_objectives import (
    DreamerActorLoss,
    DreamerModelLoss,
    DreamerV3ActorLoss,
    DreamerV3Loss,
    DreamerV3ModelLoss,
    DreamerV3ValueLoss,
    DreamerValueLoss,
    ValueEstimators,
)
from rl_objectives.loggers import get_logger
from rl_objectives.modules import (
    DreamerActor,
    ObsDecoder,
    ObsEncoder,
    RSSMPosterior,
    RSSMPosteriorV3,
    RSSMPrior,
    RSSMPriorV3,
    RSSMRollout,
    RSSMRolloutV3,
    SymExpTwoHot,
    WorldModelWrapper,
)

OBS_SCALE = torch.tensor([1.0, 1.0, MAX_SPEED])  # observations are learned in [-1, 1]


def render(obs: torch.Tensor, size: int = 64) -> torch.Tensor:
    """A ``[*B, 1, size, size]`` image of the pendulum (a blurred rod from the pivot to the
    tip) for observations ``[*B, 3]`` (``cos th``, ``sin th``, ``thdot``; up is ``th = 0``).
    The image shows the angle only: the velocity must be inferred over time."""
    grid = torch.linspace(-1.2, 1.2, size)
    gy, gx = torch.meshgrid(grid, grid, indexing="ij")
    along = torch.linspace(0.0, 1.0, 8)  # points along the rod
    tip_x, tip_y = obs[..., 1:2], -obs[..., 0:1]  # x = sin th, y (down) = -cos th
    px, py = (tip_x * along)[..., None, None], (tip_y * along)[..., None, None]
    dist2 = (gx - px).square() + (gy - py).square()  # [*B, 8, size, size]
    return torch.exp(-dist2 / 0.02).amax(-3, keepdim=True)


class Latent(torch.nn.Module):
    """``net([state, belief])``: a head on the RSSM's latent."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, state: torch.Tensor, belief: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([state, belief], dim=-1))


def head(in_features: int, out_features: int, width: int, zero: bool) -> Latent:
    """A two-layer ELU MLP on the latent; ``zero`` zeroes its output layer, as DreamerV3 does
    for its reward and value heads. Their logits decode to ``softmax(logits) @ bins`` over
    symexp bins out to +-4.9e8, so a randomly initialised layer puts enough mass on the far bins
    to predict rewards of about -1e3 (true ones: -1.6 to 0) and values of about -3e6 here, which
    the returns, the critic and the actor then chase (``--v3`` did not learn); uniform logits
    decode to 0, and the cross-entropy drains the far bins before they matter."""
    net = MLP(in_features, out_features, num_cells=[width, width], activation_class=torch.nn.ELU)
    if zero:
        torch.nn.init.zeros_(net[-1].weight)
        torch.nn.init.zeros_(net[-1].bias)
    return Latent(net)


class Agent:
    """The networks, their TensorDict wiring, the losses and the optimisers."""

    def __init__(self, cfg: Config) -> None:
        S = cfg.num_categoricals * cfg.num_classes if cfg.v3 else cfg.state_dim
        H, W = cfg.belief_dim, cfg.hidden
        self.cfg, self.state_dim = cfg, S
        if cfg.v3:
            self.prior = RSSMPriorV3(action_dim=1, hidden_dim=W, rnn_hidden_dim=H,
                                     num_categoricals=cfg.num_categoricals,
                                     num_classes=cfg.num_classes, unimix=0.01)  # fmt: skip
        else:
            self.prior = RSSMPrior(action_dim=1, hidden_dim=W, rnn_hidden_dim=H, state_dim=S)
        if cfg.pixels:  # Dreamer's convolutions (channels 8, 16, 32, 64): 256 features
            self.encoder = ObsEncoder(channels=8, in_channels=1)
            self.decoder = ObsDecoder(channels=8, latent_dim=S + H, out_channels=1)
            embed, self.obs_key = 256, "pixels"
        else:
            self.encoder = ObsEncoder(channels=W // 8, num_layers=2, in_features=3)
            self.decoder = ObsDecoder(channels=W // 8, num_layers=2, latent_dim=S + H,
                                      out_features=3)  # fmt: skip
            embed, self.obs_key = W, "observation"
        if cfg.v3:
            self.posterior = RSSMPosteriorV3(hidden_dim=W, num_categoricals=cfg.num_categoricals,
                                             num_classes=cfg.num_classes, rnn_hidden_dim=H,
                                             obs_embed_dim=embed, unimix=0.01)  # fmt: skip
            prior_out = [("next", "prior_logits"), "_", ("next", "belief")]
            post_out = [("next", "posterior_logits"), ("next", "state")]
        else:
            self.posterior = RSSMPosterior(hidden_dim=W, state_dim=S, rnn_hidden_dim=H,
                                           obs_embed_dim=embed)  # fmt: skip
            prior_out = [("next", "prior_mean"), ("next", "prior_std"), "_", ("next", "belief")]
            post_out = [("next", "posterior_mean"), ("next", "posterior_std"), ("next", "state")]
        # V3's reward and value heads give num_bins logits, decoded over symexp bins
        outs = cfg.num_bins if cfg.v3 else 1
        self.two_hot = SymExpTwoHot(cfg.num_bins)
        self.reward = head(S + H, outs, W, zero=cfg.v3)
        # V3: RSSMRolloutV3 also zeroes the latents where a sequence holds an "is_init" flag
        rollout = (RSSMRolloutV3 if cfg.v3 else RSSMRollout)(
            TensorDictModule(self.prior, ["state", "belief", "action"], prior_out),
            TensorDictModule(
                self.posterior, [("next", "belief"), ("next", "encoded_latents")], post_out
            ),
        )
        latent = [("next", "state"), ("next", "belief")]
        reward_key = "reward_logits" if cfg.v3 else "reward"
        world_model = WorldModelWrapper(
            TensorDictSequential(
                TensorDictModule(
                    self.encoder, [("next", self.obs_key)], [("next", "encoded_latents")]
                ),
                rollout,
                TensorDictModule(self.decoder, latent, [("next", f"reco_{self.obs_key}")]),
            ),
            TensorDictModule(self.reward, latent, [("next", reward_key)]),
        )
        imagined_reward = TensorDictModule(self.reward, ["state", "belief"], [reward_key])
        if cfg.v3:  # the imagined reward is the expectation of the reward head's logits
            imagined_reward = TensorDictSequential(
                imagined_reward, TensorDictModule(self.two_hot, ["reward_logits"], ["reward"])
            )
        prior_keys = ["_", "state", "belief"] if cfg.v3 else ["_", "_", "state", "belief"]
        imagination = DreamerEnv(
            WorldModelWrapper(
                TensorDictModule(self.prior, ["state", "belief", "action"], prior_keys),
                imagined_reward,
            ),
            prior_shape=(S,),
            belief_shape=(H,),
        )
        imagination.set_specs_from_env(PendulumEnv())
        self.actor = ProbabilisticActor(
            TensorDictModule(
                DreamerActor(
                    1, depth=2, num_cells=W, std_bias=cfg.actor_std_bias, in_features=S + H
                ),
                ["state", "belief"],
                ["loc", "scale"],
            ),
            in_keys=["loc", "scale"],
            distribution_class=TanhNormal,
            distribution_kwargs={"low": -1.0, "high": 1.0, "tanh_loc": True},
        )
        value_net = head(S + H, outs, W, zero=cfg.v3)
        if cfg.v3:  # logits for the two-hot loss, their expectation for the returns
            self.value = TensorDictSequential(
                TensorDictModule(value_net, ["state", "belief"], ["state_value_logits"]),
                TensorDictModule(self.two_hot, ["state_value_logits"], ["state_value"]),
            )
            # the paper's KL: 1 free nat on the sum over the categoricals, dynamics term 0.5
            # and representation term 0.1 (TorchRL's default "balanced" mode clamps each
            # categorical at 1 nat, which leaves the small prior here mostly untrained)
            # detach_output=False: DreamerV3Loss's replay-value term trains the world model too
            self.model_loss = DreamerV3ModelLoss(
                world_model, num_reward_bins=cfg.num_bins, kl_mode=cfg.kl_mode, unimix=0.01,
                lambda_dynamic=0.5, lambda_representation=0.1, detach_output=False,
            )  # fmt: skip
            self.actor_loss = DreamerV3ActorLoss(
                self.actor, self.value, imagination, entropy_bonus=cfg.entropy_bonus,
                imagination_horizon=cfg.imagination_horizon,
            )  # fmt: skip
        else:
            self.value = TensorDictModule(value_net, ["state", "belief"], ["state_value"])
            self.model_loss = DreamerModelLoss(world_model, free_nats=cfg.free_nats)
            self.actor_loss = DreamerActorLoss(
                self.actor, self.value, imagination, imagination_horizon=cfg.imagination_horizon
            )
        # TorchRL's keys are "pixels"/"reco_pixels": state observations are renamed
        self.model_loss.set_keys(pixels=self.obs_key, reco_pixels=f"reco_{self.obs_key}")
        self.actor_loss.make_value_estimator(ValueEstimators.TDLambda, gamma=cfg.gamma,
                                             lmbda=cfg.lmbda)  # fmt: skip
        if cfg.v3:
            self.value_loss = DreamerV3ValueLoss(self.value, value_loss="two_hot",
                                                 num_value_bins=cfg.num_bins,
                                                 actor_loss=self.actor_loss)  # fmt: skip
            # the three losses on one batch, and the critic on the replayed posterior latents;
            # its replay returns use the imagination's discount and lambda (the paper uses
            # 1 - 1/333 for both): one critic, one target
            self.loss = DreamerV3Loss(
                self.model_loss, self.actor_loss, self.value_loss,
                replay_value_loss_weight=cfg.replay_value_weight,
                continuation_horizon=1 / (1 - cfg.gamma), lmbda=cfg.lmbda,
                imagination_starts=cfg.imagination_starts,
            )  # fmt: skip
        else:
            self.value_loss = DreamerValueLoss(self.value, gamma=cfg.gamma)
        self.model_opt = torch.optim.Adam(world_model.parameters(), lr=cfg.model_lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=cfg.actor_lr)
        self.value_opt = torch.optim.Adam(self.value.parameters(), lr=cfg.value_lr)

    def observe(self, obs: torch.Tensor) -> torch.Tensor:
        """What the agent sees of Pendulum's observation: scaled, or rendered (``pixels``)."""
        return render(obs) if self.cfg.pixels else obs / OBS_SCALE

    @torch.no_grad()
    def filter(self, obs, state, belief, action):
        """One step of the RSSM on real data: the posterior latents given the last latents,
        the action taken and the new observation."""
        belief = self.prior(state, belief, action)[-1]  # the next belief is the last output
        state = self.posterior(belief, self.encoder(self.observe(obs)))[-1]
        return state, belief

    @torch.no_grad()
    def act(self, state, belief, explore: bool) -> torch.Tensor:
        """The torque (in Pendulum's units) for the latents: the actor's sample (``explore``,
        plus Gaussian noise) or its deterministic action. The world model, the imagination
        and the actor work with torques scaled to ``[-1, 1]``."""
        td = TensorDict(state=state, belief=belief, batch_size=state.shape[:-1])
        kind = ExplorationType.RANDOM if explore else ExplorationType.DETERMINISTIC
        with set_exploration_type(kind):
            action = self.actor(td)["action"]
        if explore:
            noise = self.cfg.exploration_noise * torch.randn_like(action)
            action = (action + noise).clamp(-1.0, 1.0)
        return action * MAX_TORQUE

    def step(self, clip, opt, loss, params) -> None:
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()

    def update(self, batch: TensorDict) -> dict[str, float]:
        cfg = self.cfg
        if cfg.v3:  # one objective: the world model, actor and critic terms of DreamerV3Loss
            terms = {k: v for k, v in self.loss(batch).items() if k.startswith("loss_")}
            opts = (self.model_opt, self.actor_opt, self.value_opt)
            for opt in opts:
                opt.zero_grad()
            sum(terms.values()).backward()
            for opt in opts:
                params = opt.param_groups[0]["params"]
                torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
                opt.step()
            return {k: v.item() for k, v in terms.items()}
        model_losses, model_td = self.model_loss(batch)
        self.step(cfg.grad_clip, self.model_opt, sum(model_losses.values()),
                  self.model_opt.param_groups[0]["params"])  # fmt: skip
        start = TensorDict(
            state=model_td["next", "state"], belief=model_td["next", "belief"],
            batch_size=model_td.batch_size,
        ).reshape(-1)  # fmt: skip
        start = start[torch.randperm(start.shape[0])[: cfg.imagination_starts]]
        actor_losses, imagined = self.actor_loss(start)
        self.step(cfg.grad_clip, self.actor_opt, actor_losses["loss_actor"],
                  self.actor_opt.param_groups[0]["params"])  # fmt: skip
        value_losses, _ = self.value_loss(imagined)
        self.step(cfg.grad_clip, self.value_opt, value_losses["loss_value"],
                  self.value_opt.param_groups[0]["params"])  # fmt: skip
        out = {k: v.item() for k, v in model_losses.items()}
        out["loss_actor"] = actor_losses["loss_actor"].item()
        out["loss_value"] = value_losses["loss_value"].item()
        out["imagined_reward"] = imagined["next", "reward"].mean().item() / cfg.reward_scale
        return out


def play(agent: Agent, env: PendulumEnv, cfg: Config, mode: str) -> dict[str, torch.Tensor]:
    """One episode in each of ``env``'s sub-envs: ``mode`` is ``"random"``, ``"explore"`` or
    ``"eval"``. Returns the ``[B, T(+1)]`` observations, actions, rewards and the posterior
    latents the policy filtered (the RSSM's state before each action)."""
    B, S, H = env.batch_size[0], agent.state_dim, cfg.belief_dim
    td = env.reset()
    state, belief, action = torch.zeros(B, S), torch.zeros(B, H), torch.zeros(B, 1)
    obs, actions, rewards, states, beliefs = [td["observation"]], [], [], [], []
    for _ in range(cfg.max_steps):
        state, belief = agent.filter(obs[-1], state, belief, action / MAX_TORQUE)
        if mode == "random":
            action = (torch.rand(B, 1) * 2 - 1) * MAX_TORQUE
        else:
            action = agent.act(state, belief, explore=mode == "explore")
        td = env.step(td.set("action", action))
        states.append(state)
        beliefs.append(belief)
        actions.append(action)
        rewards.append(td["next", "reward"])
        obs.append(td["next", "observation"])
        td = env.step_mdp_plan()(td)
    stack = lambda xs: torch.stack(xs, 1)  # noqa: E731
    return {"observation": stack(obs), "action": stack(actions), "reward": stack(rewards),
            "state": stack(states), "belief": stack(beliefs)}  # fmt: skip


def sample_batch(agent: Agent, episodes: dict[str, torch.Tensor], cfg: Config) -> TensorDict:
    """``batch_size`` random windows of ``seq_len`` steps: the collected latents and actions at
    the root, the next observations and the (scaled) rewards under ``"next"``."""
    n, steps = episodes["action"].shape[:2]
    ep = torch.randint(0, n, (cfg.batch_size, 1))
    t = torch.randint(0, steps - cfg.seq_len + 1, (cfg.batch_size, 1)) + torch.arange(cfg.seq_len)
    return TensorDict(
        state=episodes["state"][ep, t],
        belief=episodes["belief"][ep, t],
        action=episodes["action"][ep, t] / MAX_TORQUE,
        next=TensorDict(
            **{agent.obs_key: agent.observe(episodes["observation"][ep, t + 1])},
            reward=episodes["reward"][ep, t] * cfg.reward_scale,
            batch_size=[cfg.batch_size, cfg.seq_len],
        ),
        batch_size=[cfg.batch_size, cfg.seq_len],
    )


def save_curve(
    frames: list[int], returns: list[float], random_return: float, path: Path, pixels: bool
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frames, returns, marker="o", label="Dreamer (deterministic policy)")
    ax.axhline(random_return, color="gray", linestyle="--", label="random torques")
    ax.set_xlabel("env frames")
    ax.set_ylabel("mean episode return")
    ax.set_title(f"Dreamer on Pendulum ({'pixels' if pixels else 'state observations'})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(cfg: Config) -> dict[str, float]:
    """Runs the recipe; returns the figures (``final_return``, ``best_return``,
    ``random_return``, ``frames``, ``seconds``, and the evaluation curve ``returns`` at
    ``eval_frames``)."""
    _recipe.check_config(cfg, RULES)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(1)  # small batches: threads cost more than they give
    exp_name = cfg.exp_name or f"dreamer_Pendulum_{cfg.seed}_{int(time.time())}"
    with _recipe.new_run_dir(cfg.out_dir, exp_name) as run_dir:  # removed if this fails
        logger = get_logger(cfg.logger, str(run_dir), "logs")
        logger.log_hparams(dataclasses.asdict(cfg))
        _recipe.save_config(cfg, run_dir)

    agent = Agent(cfg)
    env = PendulumEnv(batch_size=[cfg.num_envs])
    env.set_seed(cfg.seed)
    eval_env = PendulumEnv(batch_size=[cfg.eval_episodes])

    def evaluate(mode: str) -> float:  # every evaluation starts from the same states
        eval_env.set_seed(cfg.seed + 1000)
        return play(agent, eval_env, cfg, mode)["reward"].sum((1, 2)).mean().item()

    random_return = evaluate("random")

    start = time.perf_counter()
    parts = [
        play(agent, env, cfg, "random") for _ in range(-(-cfg.prefill_episodes // cfg.num_envs))
    ]
    episodes = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
    frames, curve, curve_frames = episodes["action"].shape[0] * cfg.max_steps, [], []
    bar = tqdm(range(cfg.iterations), unit="iterations", dynamic_ncols=True)
    for it in bar:
        for _ in range(cfg.updates_per_iteration):
            stats = agent.update(sample_batch(agent, episodes, cfg))
        for key, value in stats.items():
            logger.log_scalar(f"train/{key}", value, step=frames)
        new = play(agent, env, cfg, "explore")
        episodes = {k: torch.cat([episodes[k], new[k]]) for k in episodes}
        frames += cfg.num_envs * cfg.max_steps
        train_return = new["reward"].sum((1, 2)).mean().item()
        logger.log_scalar("train/episode_return", train_return, step=frames)
        if (it + 1) % cfg.eval_every and it + 1 < cfg.iterations:
            bar.set_postfix(explore=f"{train_return:.0f}")
            continue
        eval_return = evaluate("eval")
        logger.log_scalar("eval/episode_return", eval_return, step=frames)
        curve.append(eval_return)
        curve_frames.append(frames)
        bar.set_postfix(eval=f"{eval_return:.0f}", explore=f"{train_return:.0f}")
    seconds = time.perf_counter() - start
    logger.log_scalar("eval/random_policy_return", random_return, step=0)
    torch.save(
        {
            "world_model": agent.model_loss.world_model.state_dict(),
            "actor": agent.actor.state_dict(),
            "value": agent.value.state_dict(),
            "config": dataclasses.asdict(cfg),
        },
        run_dir / "checkpoint.pt",
    )
    if cfg.plot:
        save_curve(curve_frames, curve, random_return, run_dir / "learning_curve.png", cfg.pixels)
    logger.close()
    final = sum(curve[-3:]) / len(curve[-3:])
    print(
        f"done: {frames} frames in {seconds:.1f} s; evaluation return {curve[-1]:.1f} (mean of "
        f"the last 3: {final:.1f}, best {max(curve):.1f}); random policy {random_return:.1f}; "
        f"outputs in {run_dir}"
    )
    return {
        "final_return": final,
        "best_return": max(curve),
        "random_return": random_return,
        "frames": frames,
        "seconds": seconds,
        "returns": curve,
        "eval_frames": curve_frames,
    }


if __name__ == "__main__":
    train(CONFIG)
