import pytest
import torch
from torch import nn

from rl_core.modules import MLP


def _linears(net: MLP) -> list[nn.Module]:
    return [m for m in net if isinstance(m, nn.Linear | nn.LazyLinear)]


def test_lazy_input_size_is_learned_on_first_call():
    net = MLP(out_features=3, num_cells=8, depth=2)
    assert isinstance(net[0], nn.LazyLinear)
    out = net(torch.randn(5, 2, 11))
    assert out.shape == (5, 2, 3)
    assert net[0].weight.shape == (8, 11)


def test_depth_and_num_cells():
    net = MLP(4, 2, depth=3, num_cells=16)
    assert [(m.in_features, m.out_features) for m in _linears(net)] == [
        (4, 16),
        (16, 16),
        (16, 16),
        (16, 2),
    ]
    net = MLP(4, 2, num_cells=[8, 6])
    assert [(m.in_features, m.out_features) for m in _linears(net)] == [(4, 8), (8, 6), (6, 2)]
    assert net.depth == 2
    single = MLP(4, 2, depth=0)
    assert len(single) == 1
    assert isinstance(single[0], nn.Linear)


def test_defaults_are_three_layers_of_32_with_tanh():
    net = MLP(4, 2)
    assert net.num_cells == [32, 32, 32]
    assert sum(isinstance(m, nn.Tanh) for m in net) == 3
    assert not isinstance(net[-1], nn.Tanh)


def test_shaped_output_and_several_inputs():
    net = MLP(5, (2, 3), num_cells=4, depth=1)
    assert net(torch.randn(7, 5)).shape == (7, 2, 3)
    net = MLP(5, 2, num_cells=4, depth=1)
    a, b = torch.randn(7, 3), torch.randn(1, 2)
    torch.testing.assert_close(net(a, b), net(torch.cat([a, b.expand(7, 2)], -1)))


def test_options_build_the_layers_they_name():
    net = MLP(
        4,
        2,
        depth=1,
        num_cells=8,
        activation_class=nn.ReLU,
        norm_class=nn.LayerNorm,
        dropout=0.5,
        bias_last_layer=False,
        activate_last_layer=True,
    )
    kinds = [type(m) for m in net]
    assert kinds == [nn.Linear, nn.LayerNorm, nn.ReLU, nn.Dropout] * 2
    assert net[4].bias is None
    net.eval()
    assert (net(torch.randn(3, 4)) >= 0).all()


def test_activation_kwargs_and_layer_kwargs():
    net = MLP(
        4,
        2,
        depth=1,
        num_cells=8,
        activation_class=nn.LeakyReLU,
        activation_kwargs={"negative_slope": 0.3},
        layer_kwargs={"dtype": torch.float64},
    )
    assert net[1].negative_slope == 0.3
    assert net[0].weight.dtype == torch.float64


def test_errors_say_what_to_do():
    with pytest.raises(ValueError, match="MLP: out_features is required"):
        MLP(4)
    with pytest.raises(ValueError, match=r"depth=3 does not match num_cells of length 2"):
        MLP(4, 2, depth=3, num_cells=[8, 8])
    with pytest.raises(ValueError, match=r"in_features=None needs layer_class=nn\.Linear"):
        MLP(out_features=2, layer_class=nn.Bilinear)
    with pytest.raises(ValueError, match="expected depth >= 0"):
        MLP(4, 2, depth=-1)


def test_gradients_flow():
    net = MLP(3, 1)
    net(torch.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())


def test_several_inputs_with_equal_or_broadcast_batch_shapes():
    torch.manual_seed(0)
    mlp = MLP(5, 2, depth=1, num_cells=4)
    obs, act = torch.randn(3, 4, 3), torch.randn(3, 4, 2)
    torch.testing.assert_close(mlp(obs, act), mlp(torch.cat([obs, act], -1)), rtol=0, atol=0)
    shared = torch.randn(4, 3)  # broadcast over the leading dim of act
    expected = mlp(torch.cat([shared.expand(3, 4, 3), act], -1))
    torch.testing.assert_close(mlp(shared, act), expected, rtol=0, atol=0)


def test_torchrl_arguments_single_bias_and_norm_kwargs_naming_the_width():
    with pytest.raises(NotImplementedError, match="single_bias_last_layer=True is not built"):
        MLP(3, 2, single_bias_last_layer=True)
    plain = MLP(3, 2, num_cells=[4], single_bias_last_layer=False)
    assert [type(m).__name__ for m in plain] == ["Linear", "Tanh", "Linear"]
    # TorchRL writes the norm's width in norm_kwargs; ours fills it in when it is not there
    named = MLP(3, 2, num_cells=[4], norm_class=nn.BatchNorm1d, norm_kwargs={"num_features": 4})
    filled = MLP(3, 2, num_cells=[4], norm_class=nn.BatchNorm1d)
    assert named[1].num_features == filled[1].num_features == 4
    layer_norm = MLP(3, 2, num_cells=[4], norm_class=nn.LayerNorm, norm_kwargs={"eps": 1e-3})
    assert (layer_norm[1].normalized_shape, layer_norm[1].eps) == ((4,), 1e-3)
