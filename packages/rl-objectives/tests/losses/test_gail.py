import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule

from rl_core.modules import MLP
from rl_objectives import GAILLoss


def batch():
    g = torch.Generator().manual_seed(0)
    return TensorDict(
        observation=torch.randn(6, 3, generator=g),
        action=torch.randn(6, 2, generator=g),
        collector=TensorDict(
            observation=torch.randn(6, 3, generator=g),
            action=torch.randn(6, 2, generator=g),
            batch_size=[6],
        ),
        batch_size=[6],
    )


def test_gail_matches_reference_with_gradient_penalty():
    torch.manual_seed(0)
    net = MLP(5, 1, depth=1, num_cells=8, activation_class=torch.nn.Tanh)
    loss = GAILLoss(
        TensorDictModule(net, ["observation", "action"], ["d_logits"]),
        use_grad_penalty=True,
        gp_lambda=5.0,
    )
    td = batch()
    torch.manual_seed(3)
    out = loss(td)
    d_e = net(td["observation"], td["action"])
    d_c = net(td["collector", "observation"], td["collector", "action"])
    ref = (-torch.nn.functional.logsigmoid(d_e) - torch.nn.functional.logsigmoid(-d_c)).mean()
    torch.testing.assert_close(out["loss"], ref)
    torch.manual_seed(3)
    eps = torch.rand(6, 1)
    obs = (eps * td["observation"] + (1 - eps) * td["collector", "observation"]).requires_grad_()
    act = (eps * td["action"] + (1 - eps) * td["collector", "action"]).requires_grad_()
    g_o, g_a = torch.autograd.grad(net(obs, act).sum(), (obs, act), create_graph=True)
    gp = 5.0 * ((torch.cat([g_o, g_a], -1).norm(dim=-1) - 1) ** 2).mean()
    torch.testing.assert_close(out["gp_loss"], gp)
    p = list(net.parameters())
    for a, b in zip(
        torch.autograd.grad(out["loss"] + out["gp_loss"], p), torch.autograd.grad(ref + gp, p)
    ):
        torch.testing.assert_close(a, b)
