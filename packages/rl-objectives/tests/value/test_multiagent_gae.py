import functools
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from _reference import apply_per_sequence, seq_gae

from rl_core.modules import MultiAgentMLP, ValueOperator
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
