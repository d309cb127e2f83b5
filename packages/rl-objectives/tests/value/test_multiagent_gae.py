import functools
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from _reference import apply_per_sequence, seq_gae

from rl_core.modules import ValueOperator
from rl_objectives.modules import MultiAgentMLP
from rl_objectives.value import MultiAgentGAE


def data(shared: bool, B=2, T=8, n=3):
    g = torch.Generator().manual_seed(0)
    flag_shape = (B, T, 1) if shared else (B, T, n, 1)
    done = torch.rand(flag_shape, generator=g) < 0.2
    term = done & (torch.rand(flag_shape, generator=g) < 0.5)
    nxt = TensorDict(
        agents=TensorDict(observation=torch.randn(B, T, n, 4, generator=g), batch_size=(B, T, n)),
        batch_size=(B, T),
    )
    where = nxt if shared else nxt["agents"]
    where["reward"] = torch.randn(flag_shape, generator=g)
    where["done"] = done
    where["terminated"] = term
    return TensorDict(
        agents=TensorDict(observation=torch.randn(B, T, n, 4, generator=g), batch_size=(B, T, n)),
        next=nxt,
        batch_size=(B, T),
    )


@pytest.mark.parametrize("shared", [True, False])
def test_multiagent_gae_matches_reference(shared):
    torch.manual_seed(0)
    critic = ValueOperator(
        MultiAgentMLP(4, 1, n_agents=3, centralized=True, share_params=True, depth=1, num_cells=8),
        in_keys=[("agents", "observation")],
        out_keys=[("agents", "state_value")],
    )
    td = data(shared)
    MultiAgentGAE(0.9, 0.8, critic)(td)
    src = td["next"] if shared else td["next", "agents"]
    expand = (lambda x: x.unsqueeze(-2).expand(2, 8, 3, 1)) if shared else (lambda x: x)
    (ref,) = apply_per_sequence(
        functools.partial(seq_gae, 0.9, 0.8),
        1,
        td["agents", "state_value"],
        td["next", "agents", "state_value"],
        expand(src["reward"]),
        expand(src["done"]),
        expand(src["terminated"]),
    )
    torch.testing.assert_close(td["agents", "advantage"].double(), ref, atol=1e-5, rtol=1e-5)
    assert td["agents", "value_target"].shape == (2, 8, 3, 1)


def masked_gae_reference(gamma, lmbda, value, next_value, reward, mask, next_mask):
    """Per (batch, agent) backward loop in float64: an agent absent at t + 1 ends its
    trajectory at t (no bootstrap, no trace); absent agents get 0."""
    B, T, n, _ = value.shape
    adv = torch.zeros(B, T, n, 1, dtype=torch.float64)
    for b in range(B):
        for a in range(n):
            running = 0.0
            for t in reversed(range(T)):
                ends = not bool(next_mask[b, t, a])
                bootstrap = 0.0 if ends else gamma * next_value[b, t, a, 0].item()
                delta = reward[b, t, 0].item() + bootstrap - value[b, t, a, 0].item()
                running = delta + (0.0 if ends else gamma * lmbda * running)
                adv[b, t, a, 0] = running if mask[b, t, a] else 0.0
    return adv


@pytest.mark.parametrize("trailing_one", [False, True])
def test_multiagent_gae_honours_agent_masks(trailing_one):
    B, T, n = 2, 6, 3
    g = torch.Generator().manual_seed(3)
    alive = torch.ones(B, T + 1, n, dtype=torch.bool)
    alive[0, 3:, 1] = False  # agent 1 dies after step 2 in the first sequence
    alive[1, 2, 2] = False  # agent 2 is absent at step 2 only
    mask, next_mask = alive[:, :-1], alive[:, 1:]
    shape = (lambda m: m.unsqueeze(-1)) if trailing_one else (lambda m: m)
    td = TensorDict(
        agents=TensorDict(
            state_value=torch.randn(B, T, n, 1, generator=g, dtype=torch.float64),
            mask=shape(mask),
            batch_size=(B, T, n),
        ),
        next=TensorDict(
            agents=TensorDict(
                state_value=torch.randn(B, T, n, 1, generator=g, dtype=torch.float64),
                mask=shape(next_mask),
                batch_size=(B, T, n),
            ),
            reward=torch.randn(B, T, 1, generator=g, dtype=torch.float64),
            done=torch.zeros(B, T, 1, dtype=torch.bool),
            terminated=torch.zeros(B, T, 1, dtype=torch.bool),
            batch_size=(B, T),
        ),
        batch_size=(B, T),
    )
    MultiAgentGAE(0.9, 0.8, None, skip_existing=True)(td)
    ref = masked_gae_reference(
        0.9,
        0.8,
        td["agents", "state_value"],
        td["next", "agents", "state_value"],
        td["next", "reward"],
        mask,
        next_mask,
    )
    torch.testing.assert_close(td["agents", "advantage"], ref)
    target = torch.where(mask.unsqueeze(-1), ref + td["agents", "state_value"], 0.0)
    torch.testing.assert_close(td["agents", "value_target"], target)


def test_multiagent_gae_rejects_a_mask_of_the_wrong_shape():
    td = data(True)
    td["agents", "state_value"] = torch.zeros(2, 8, 3, 1)
    td["next", "agents", "state_value"] = torch.zeros(2, 8, 3, 1)
    td["agents", "mask"] = torch.ones(2, 8, 3, 2, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"agent mask .* shape \(2, 8, 3, 1\)"):
        MultiAgentGAE(0.9, 0.8, None, skip_existing=True)(td)


def test_agents_leaving_with_the_episode_keep_the_envs_flags():
    # PettingZoo removes every agent when an episode ends, truncation included: a next-step
    # mask that is False exactly where the env marked the step done must not turn a time limit
    # into a termination (which would drop the bootstrap from the next value).
    torch.manual_seed(0)
    critic = ValueOperator(
        MultiAgentMLP(4, 1, n_agents=3, centralized=True, share_params=True, depth=1, num_cells=8),
        in_keys=[("agents", "observation")],
        out_keys=[("agents", "state_value")],
    )
    plain, masked = data(False), data(False)
    done = masked["next", "agents", "done"]
    masked["next", "agents", "mask"] = ~done.squeeze(-1)
    masked["agents", "mask"] = torch.ones(2, 8, 3, dtype=torch.bool)
    assert (done & ~masked["next", "agents", "terminated"]).any()  # some truncations
    MultiAgentGAE(0.9, 0.8, critic)(plain)
    MultiAgentGAE(0.9, 0.8, critic)(masked)
    torch.testing.assert_close(masked["agents", "advantage"], plain["agents", "advantage"])
    torch.testing.assert_close(masked["agents", "value_target"], plain["agents", "value_target"])
