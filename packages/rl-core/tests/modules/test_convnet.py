import pytest
import torch
from torch import nn

from rl_core.modules import ConvNet


def test_leading_batch_dims_are_kept():
    torch.manual_seed(0)
    net = ConvNet(3, num_cells=[4, 8], kernel_sizes=[3, 2], strides=[2, 1])
    x = torch.randn(2, 5, 3, 17, 17)
    out = net(x)
    # 17 -> (17 - 3) // 2 + 1 = 8 -> 8 - 2 + 1 = 7
    assert out.shape == (2, 5, 8 * 7 * 7)
    torch.testing.assert_close(out[1, 3], net(x[1, 3]))
    torch.testing.assert_close(out.reshape(10, -1), net(x.reshape(10, 3, 17, 17)))


def test_lazy_channels_and_default_depth():
    net = ConvNet(num_cells=4)
    out = net(torch.randn(6, 2, 10, 10))
    assert out.shape == (6, 4 * 4 * 4)
    convs = [m for m in net.layers if isinstance(m, nn.Conv2d)]
    assert len(convs) == 3
    assert convs[0].in_channels == 2


def test_last_layer_is_activated_by_default():
    net = ConvNet(1, num_cells=[2], activation_class=nn.ReLU)
    assert isinstance(net.layers[-1], nn.ReLU)
    assert (net(torch.randn(3, 1, 5, 5)) >= 0).all()
    net = ConvNet(1, num_cells=[2], activate_last_layer=False)
    assert isinstance(net.layers[-1], nn.Conv2d)


def test_paddings_norm_and_no_aggregator():
    net = ConvNet(
        2,
        num_cells=[3],
        kernel_sizes=3,
        paddings=1,
        norm_class=nn.BatchNorm2d,
        aggregator_class=None,
    )
    assert isinstance(net.layers[1], nn.BatchNorm2d)
    assert net(torch.randn(4, 2, 9, 9)).shape == (4, 3, 9, 9)


def test_squeeze_output():
    net = ConvNet(1, num_cells=[1], kernel_sizes=5, squeeze_output=True)
    assert net(torch.randn(7, 1, 5, 5)).shape == (7,)
    net = ConvNet(1, num_cells=[1], kernel_sizes=(5, 3), aggregator_class=None, squeeze_output=True)
    assert net(torch.randn(7, 1, 5, 5)).shape == (7, 3)


def test_errors():
    with pytest.raises(ValueError, match=r"expected one stride per layer \(2\), got 3"):
        ConvNet(1, num_cells=[2, 2], strides=[1, 1, 1])
    with pytest.raises(
        ValueError, match=r"expected an input of shape \[\*B, C, H, W\], got \(4, 4\)"
    ):
        ConvNet(1, num_cells=[2])(torch.zeros(4, 4))
    with pytest.raises(ValueError, match="expected at least one layer"):
        ConvNet(1, depth=0)


def test_norm_kwargs_may_name_the_channels_as_torchrl_writes_them():
    net = ConvNet(3, num_cells=[8], kernel_sizes=3, norm_class=nn.BatchNorm2d,
                  norm_kwargs={"num_features": 8}, activate_last_layer=True)  # fmt: skip
    norms = [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    assert [m.num_features for m in norms] == [8]
