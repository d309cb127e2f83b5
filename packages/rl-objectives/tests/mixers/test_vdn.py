import pytest
import torch

from rl_objectives.mixers import VDNMixer


def test_vdn_sums_agents():
    q = torch.randn(2, 5, 3, 1)
    torch.testing.assert_close(VDNMixer(3)(q), q[..., 0].sum(-1, keepdim=True))
    with pytest.raises(ValueError, match="VDNMixer: expected agent values of shape"):
        VDNMixer(2)(q)
