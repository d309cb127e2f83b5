"""Loss forward+backward against the same update written in plain torch, same process.

Run from the repository root::

    uv run python benchmarks/rl_objectives/bench_losses.py [--calls 200]

Cases (MLPs with two hidden layers of 256 units, Tanh/ReLU): ``ClipPPOLoss`` on a batch of
4096 (obs 17, action 6, Normal policy), ``SACLoss`` on 256 (TanhNormal policy, two critics,
auto-entropy) and ``DQNLoss`` on 256 (6 actions, target network). Each plain-torch
reference computes the same equations with the same ``nn.Module`` objects and the same
distributions, and is checked to give the same loss values. Each forward+backward call is timed on its own (process
CPU time, one torch thread), the two variants alternate for ``--calls`` calls each, and the
medians are compared. The ratio ``loss / plain`` is printed (1.00 = same speed).
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import time
from collections.abc import Callable

import torch
from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule
from torch import nn
from torch.nn import functional as F

from rl_core.modules import MLP, ProbabilisticActor, QValueActor, TanhNormal, ValueOperator
from rl_objectives import ClipPPOLoss, DQNLoss, SACLoss

OBS, ACT, N_ACT = 17, 6, 6


def mlp(n_in: int, n_out: int, act=nn.Tanh) -> nn.Module:
    return MLP(n_in, n_out, depth=2, num_cells=256, activation_class=act)


def transitions(batch: int, action: torch.Tensor) -> TensorDict:
    done = torch.rand(batch, 1) < 0.05
    return TensorDict(
        observation=torch.randn(batch, OBS),
        action=action,
        next=TensorDict(
            observation=torch.randn(batch, OBS),
            reward=torch.randn(batch, 1),
            done=done,
            terminated=done & (torch.rand(batch, 1) < 0.5),
            batch_size=[batch],
        ),
        batch_size=[batch],
    )


def ppo_case():
    batch = 4096
    param_net = nn.Sequential(mlp(OBS, 2 * ACT), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(param_net, ["observation"], ["loc", "scale"]),
        ["loc", "scale"],
        distribution_class=torch.distributions.Normal,
    )
    value_net = mlp(OBS, 1)
    loss = ClipPPOLoss(actor, ValueOperator(value_net, ["observation"]), entropy_coeff=0.01)
    td = transitions(batch, torch.randn(batch, ACT))
    td["action_log_prob"] = torch.randn(batch) - 5
    td["advantage"] = torch.randn(batch, 1)
    td["value_target"] = torch.randn(batch, 1)

    def plain():
        loc, scale = param_net(td["observation"])
        dist = torch.distributions.Normal(loc, scale)
        log_weight = dist.log_prob(td["action"]).sum(-1) - td["action_log_prob"]
        ratio = log_weight.exp()
        adv = td["advantage"].squeeze(-1)
        objective = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
        entropy = -0.01 * dist.entropy().sum(-1).mean()
        critic = F.smooth_l1_loss(td["value_target"], value_net(td["observation"]))
        return objective + entropy + critic

    def ours():
        out = loss(td)
        return out["loss_objective"] + out["loss_entropy"] + out["loss_critic"]

    return "ClipPPOLoss (batch 4096)", plain, ours


def sac_case():
    batch = 256
    param_net = nn.Sequential(mlp(OBS, 2 * ACT, nn.ReLU), NormalParamExtractor())
    actor = ProbabilisticActor(
        TensorDictModule(param_net, ["observation"], ["loc", "scale"]),
        ["loc", "scale"],
        distribution_class=TanhNormal,
    )
    q_net = mlp(OBS + ACT, 1, nn.ReLU)
    loss = SACLoss(actor, ValueOperator(q_net, ["observation", "action"]), gamma=0.99)
    # plain torch keeps four critic modules (two online, two target) holding the loss's values
    q_online = [q_net, copy.deepcopy(q_net)]
    q_target = [copy.deepcopy(q_net), copy.deepcopy(q_net)]
    for i in range(2):
        TensorDict.from_module(q_online[i]).data.update_(
            loss.qvalue_network_params["nets", str(i), "module"].data
        )
        TensorDict.from_module(q_target[i]).data.update_(
            loss.target_qvalue_network_params["nets", str(i), "module"].data
        )
    log_alpha = loss.log_alpha
    target_entropy = -float(ACT)
    td = transitions(batch, torch.rand(batch, ACT) * 1.8 - 0.9)

    def q(net, obs, act, *, frozen=False):
        if frozen:  # the actor loss must not train the critics
            params = {k: v.detach() for k, v in net.named_parameters()}
            return torch.func.functional_call(net, params, (torch.cat([obs, act], -1),))
        return net(torch.cat([obs, act], -1))

    def plain():
        obs, nobs = td["observation"], td["next", "observation"]
        alpha = log_alpha.detach().exp()
        a, logp = TanhNormal(*param_net(obs)).rsample_and_log_prob()
        q_new = torch.minimum(*(q(q_online[i], obs, a, frozen=True) for i in range(2))).squeeze(-1)
        actor_loss = (alpha * logp - q_new).mean()
        with torch.no_grad():
            a2, logp2 = TanhNormal(*param_net(nobs)).rsample_and_log_prob()
            nq = torch.minimum(*(q(q_target[i], nobs, a2) for i in range(2)))
            nv = nq - alpha * logp2.unsqueeze(-1)
            y = td["next", "reward"] + 0.99 * (~td["next", "terminated"]).float() * nv
        q_loss = sum(F.smooth_l1_loss(q(q_online[i], obs, td["action"]), y) for i in range(2))
        alpha_loss = (-log_alpha * (logp.detach() + target_entropy)).mean()
        return actor_loss + q_loss + alpha_loss

    def ours():
        out = loss(td)
        return out["loss_actor"] + out["loss_qvalue"] + out["loss_alpha"]

    return "SACLoss (batch 256)", plain, ours


def dqn_case():
    batch = 256
    net = mlp(OBS, N_ACT, nn.ReLU)
    loss = DQNLoss(QValueActor(net, in_keys=["observation"], action_space="categorical"))
    target = loss.target_value_network_params["module", "0", "module"]
    td = transitions(batch, torch.randint(N_ACT, (batch,)))

    def plain():
        q_pred = net(td["observation"]).gather(-1, td["action"].unsqueeze(-1))
        with torch.no_grad(), target.to_module(net):
            nq = net(td["next", "observation"]).max(-1, keepdim=True).values
        y = td["next", "reward"] + 0.99 * (~td["next", "terminated"]).float() * nq
        return F.mse_loss(q_pred, y)

    def ours():
        return loss(td)["loss"]

    return "DQNLoss (batch 256)", plain, ours


def one_call(fn: Callable[[], torch.Tensor]) -> float:
    # CPU time of this process: on a shared machine, the time spent descheduled while other
    # processes run is not counted (torch runs on one thread here).
    start = time.process_time()
    fn().backward()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread; median of {args.calls} alternating calls")
    print(f"{'case':>26} {'plain ms':>9} {'loss ms':>9} {'loss/plain':>11}")
    for make in (ppo_case, sac_case, dqn_case):
        torch.manual_seed(0)
        name, plain, ours = make()
        torch.manual_seed(1)
        a = plain().item()
        torch.manual_seed(1)
        b = ours().item()
        if not math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5):
            raise AssertionError(f"{name}: plain torch gives {a}, the loss {b}")
        for _ in range(3):  # warm-up
            one_call(plain)
            one_call(ours)
        samples_plain, samples_ours = [], []
        for _ in range(args.calls):  # alternate, so that both see the same machine load
            samples_plain.append(one_call(plain))
            samples_ours.append(one_call(ours))
        per_plain = statistics.median(samples_plain)
        per_ours = statistics.median(samples_ours)
        print(
            f"{name:>26} {per_plain * 1e3:9.2f} {per_ours * 1e3:9.2f} {per_ours / per_plain:11.2f}"
        )


if __name__ == "__main__":
    main()
