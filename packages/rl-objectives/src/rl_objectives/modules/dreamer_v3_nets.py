"""DreamerV3's building blocks: :class:`DreamerV3MLP`, :class:`DreamerV3BlockGRUCell` and
:class:`DreamerV3BlockGRU`.

Hafner et al., "Mastering Diverse Domains through World Models" (DreamerV3,
https://arxiv.org/abs/2301.04104) and its reference implementation:

- an MLP layer is ``SiLU(RMSNorm(Linear(x)))``, the RMS norm over the features with a learned
  scale and shift (``x / sqrt(mean(x**2) + eps) * scale + shift``);
- the recurrent core is a *block* GRU: the belief ``h`` (``hidden_size``) is split into
  ``G = num_blocks`` equal blocks ``h_g``; each block sees its own part of the belief and the
  projections of the whole belief and of the input ``x``; ``num_layers`` block-diagonal linear layers (one weight per block), each
  followed by the RMS norm over all blocks and SiLU, give features ``u``; a last block-diagonal
  layer gives, per block, the gate pre-activations ``(r_g, c_g, z_g)``; then
  ``r = sigmoid(r)``, ``c = tanh(r * c)``, ``z = sigmoid(z - 1)`` and
  ``h' = z * c + (1 - z) * h`` (the ``- 1`` biases the update gate towards keeping ``h``).

Linear weights start from DreamerV3's truncated normal (standard deviation
``1.1368 / sqrt(fan_in)``, cut at two of them), biases at zero.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["DreamerV3MLP", "DreamerV3BlockGRUCell", "DreamerV3BlockGRU"]


def _check_positive_int(where: str, **values: object) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{where}: expected {name} as a positive int, got {value!r}.")


def _truncated_normal_(weight: torch.Tensor, fan_in: int) -> None:
    std = 1.1368 / fan_in**0.5
    nn.init.trunc_normal_(weight, std=std, a=-2 * std, b=2 * std)


class _RMSNorm(nn.Module):
    """``x / sqrt(mean(x**2, -1) + eps) * weight + bias``, computed in float32 or wider."""

    def __init__(self, features: int, eps: float, device: torch.device | str | None) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(features, device=device))
        self.bias = nn.Parameter(torch.zeros(features, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.promote_types(dtype, torch.float32))
        x = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + self.eps)
        return (x * self.weight + self.bias).to(dtype)


def _norm_layer(
    in_features: int,
    out_features: int,
    eps: float,
    device: torch.device | str | None,
    activation_class: type[nn.Module] = nn.SiLU,
) -> nn.Sequential:
    """One DreamerV3 layer, ``act(RMSNorm(Linear(x)))`` (the linear without bias)."""
    linear = nn.Linear(in_features, out_features, bias=False, device=device)
    _truncated_normal_(linear.weight, in_features)
    return nn.Sequential(linear, _RMSNorm(out_features, eps, device), activation_class())


class _BlockLinear(nn.Module):
    """A block-diagonal linear map: ``[*B, G * i] -> [*B, G * o]``, block ``g`` of the output
    being ``x_g @ weight[g]`` plus its part of ``bias``."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        num_blocks: int,
        device: torch.device | str | None,
    ) -> None:
        super().__init__()
        self.num_blocks = num_blocks
        block_in, block_out = in_features // num_blocks, out_features // num_blocks
        self.weight = nn.Parameter(torch.empty(num_blocks, block_in, block_out, device=device))
        self.bias = nn.Parameter(torch.zeros(out_features, device=device))
        _truncated_normal_(self.weight, block_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        blocks = x.unflatten(-1, (self.num_blocks, -1))
        return torch.einsum("...gi,gio->...go", blocks, self.weight).flatten(-2) + self.bias


class DreamerV3MLP(nn.Module):
    """DreamerV3's MLP: ``depth`` layers ``SiLU(RMSNorm(Linear(x)))`` and a linear output.

    The inputs are concatenated along their last dim. The output layer's initial weights are
    scaled by ``outscale``: 0 gives DreamerV3's zero-initialised reward and value heads
    (uniform logits over their bins at the start).

    Args:
        in_features: size of the concatenated input.
        out_features: size of the output.
        depth: number of hidden layers. Defaults to 3.
        num_cells: width of the hidden layers. Defaults to 1024.
        outscale: scale of the output layer's initial weights, >= 0. Defaults to 1.0.
        norm_eps: the RMS norm's epsilon. Defaults to 1e-4.
        device: device of the parameters.

    Raises:
        ValueError: a size that is not a positive int (``depth`` may be 0), or a negative
            ``outscale``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DreamerV3MLP
        >>> mlp = DreamerV3MLP(6, 4, depth=2, num_cells=8)
        >>> mlp(torch.randn(3, 2), torch.randn(3, 4)).shape
        torch.Size([3, 4])
        >>> DreamerV3MLP(6, 255, depth=1, num_cells=8, outscale=0.0)(torch.randn(2, 6)).abs().max().item()
        0.0
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        depth: int = 3,
        num_cells: int = 1024,
        outscale: float = 1.0,
        norm_eps: float = 1e-4,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        where = "DreamerV3MLP"
        _check_positive_int(
            where, in_features=in_features, out_features=out_features, num_cells=num_cells
        )
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise ValueError(f"{where}: expected depth as an int >= 0, got {depth!r}.")
        if not outscale >= 0:
            raise ValueError(f"{where}: expected outscale >= 0, got {outscale!r}.")
        layers: list[nn.Module] = []
        width = in_features
        for _ in range(depth):
            layers += list(_norm_layer(width, num_cells, norm_eps, device))
            width = num_cells
        self.hidden = nn.Sequential(*layers)
        self.out = nn.Linear(width, out_features, device=device)
        _truncated_normal_(self.out.weight, width)
        nn.init.zeros_(self.out.bias)
        with torch.no_grad():
            self.out.weight.mul_(outscale)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        x = inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=-1)
        return self.out(self.hidden(x))


class DreamerV3BlockGRUCell(nn.Module):
    """One step of DreamerV3's block GRU (see the module docstring for the equations).

    The belief ``h`` and the input ``x`` are first projected, each by one
    ``act(RMSNorm(Linear))`` layer of ``projection_size``; block ``g`` then sees
    ``[h_g, p_h(h), p_x(x)]``. The update gate is ``sigmoid(z + update_bias)``.

    Args:
        input_size: size of the input ``x``.
        hidden_size: size of the belief ``h``; a multiple of ``num_blocks``.

    Keyword Args:
        projection_size: width of the belief's and the input's projections. Defaults to 512.
        num_blocks: number of blocks ``G``. Defaults to 8.
        num_layers: block-diagonal hidden layers before the gates. Defaults to 1.
        activation_class: the activation (a parameter-free element-wise module class).
            Defaults to ``nn.SiLU``.
        norm_eps: the RMS norm's epsilon. Defaults to 1e-4.
        update_bias: the constant added to the update gate's logits. Defaults to -1.0.
        device: device of the parameters.

    Raises:
        ValueError: a size that is not a positive int, or ``hidden_size`` not a multiple of
            ``num_blocks``; (when called) an input or belief of the wrong size.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DreamerV3BlockGRUCell
        >>> cell = DreamerV3BlockGRUCell(6, 8, projection_size=4, num_blocks=2)
        >>> cell(torch.randn(3, 6), torch.zeros(3, 8)).shape
        torch.Size([3, 8])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        projection_size: int = 512,
        num_blocks: int = 8,
        num_layers: int = 1,
        activation_class: type[nn.Module] = nn.SiLU,
        norm_eps: float = 1e-4,
        update_bias: float = -1.0,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        where = "DreamerV3BlockGRUCell"
        _check_positive_int(
            where,
            input_size=input_size,
            hidden_size=hidden_size,
            projection_size=projection_size,
            num_blocks=num_blocks,
            num_layers=num_layers,
        )
        if hidden_size % num_blocks:
            raise ValueError(
                f"{where}: expected hidden_size a multiple of num_blocks, got hidden_size="
                f"{hidden_size} and num_blocks={num_blocks}."
            )
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_blocks = num_blocks
        self.update_bias = float(update_bias)
        self.hidden_projection = _norm_layer(
            hidden_size, projection_size, norm_eps, device, activation_class
        )
        self.input_projection = _norm_layer(
            input_size, projection_size, norm_eps, device, activation_class
        )
        layers: list[nn.Module] = []
        # each block: its part of the belief and both projections
        width = hidden_size + num_blocks * 2 * projection_size
        for _ in range(num_layers):
            layers += [
                _BlockLinear(width, hidden_size, num_blocks, device),
                _RMSNorm(hidden_size, norm_eps, device),
                activation_class(),
            ]
            width = hidden_size
        self.hidden_layers = nn.Sequential(*layers)
        self.gates = _BlockLinear(hidden_size, 3 * hidden_size, num_blocks, device)

    def forward(self, input: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """``[*B, input_size]`` and ``[*B, hidden_size]`` -> the next belief
        ``[*B, hidden_size]``."""
        if input.shape[-1:] != (self.input_size,) or hidden.shape[-1:] != (self.hidden_size,):
            raise ValueError(
                f"DreamerV3BlockGRUCell: expected an input [..., {self.input_size}] and a belief "
                f"[..., {self.hidden_size}], got {tuple(input.shape)} and {tuple(hidden.shape)}."
            )
        batch = torch.broadcast_shapes(input.shape[:-1], hidden.shape[:-1])
        hidden = hidden.expand(*batch, -1)
        shared = torch.cat(
            [self.hidden_projection(hidden), self.input_projection(input.expand(*batch, -1))], -1
        )
        blocks = hidden.unflatten(-1, (self.num_blocks, -1))
        shared = shared.unsqueeze(-2).expand(*batch, self.num_blocks, -1)
        features = self.hidden_layers(torch.cat([blocks, shared], -1).flatten(-2))
        gates = self.gates(features).unflatten(-1, (self.num_blocks, 3, -1))
        reset, candidate, update = (gates.select(-2, i).flatten(-2) for i in range(3))
        reset = torch.sigmoid(reset)
        candidate = torch.tanh(reset * candidate)
        update = torch.sigmoid(update + self.update_bias)
        return update * candidate + (1 - update) * hidden


class DreamerV3BlockGRU(nn.Module):
    """DreamerV3's block GRU over a batch-major sequence: :class:`DreamerV3BlockGRUCell` along
    the time dim (the second to last of the input), the belief zeroed before the steps that
    ``is_init`` marks (episode starts).

    Args:
        input_size: size of the input.
        hidden_size: size of the belief; a multiple of ``num_blocks``.

    The keyword arguments (``projection_size``, ``num_blocks``, ``num_layers``,
    ``activation_class``, ``norm_eps``, ``update_bias``, ``device``) are those of
    :class:`DreamerV3BlockGRUCell`.

    Raises:
        ValueError: as :class:`DreamerV3BlockGRUCell`; (when called) an input without a time
            dim, or ``is_init`` not shaped ``[*B, T]`` or ``[*B, T, 1]``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import DreamerV3BlockGRU
        >>> gru = DreamerV3BlockGRU(3, 8, projection_size=4, num_blocks=4)
        >>> out, last = gru(torch.randn(2, 7, 3))
        >>> out.shape, last.shape, bool((out[:, -1] == last).all())
        (torch.Size([2, 7, 8]), torch.Size([2, 8]), True)
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        *,
        projection_size: int = 512,
        num_blocks: int = 8,
        num_layers: int = 1,
        activation_class: type[nn.Module] = nn.SiLU,
        norm_eps: float = 1e-4,
        update_bias: float = -1.0,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        self.cell = DreamerV3BlockGRUCell(
            input_size,
            hidden_size,
            projection_size=projection_size,
            num_blocks=num_blocks,
            num_layers=num_layers,
            activation_class=activation_class,
            norm_eps=norm_eps,
            update_bias=update_bias,
            device=device,
        )

    def forward(
        self,
        input: torch.Tensor,
        hidden: torch.Tensor | None = None,
        is_init: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``input`` ``[*B, T, input_size]``, ``hidden`` ``[*B, hidden_size]`` (zeros when
        ``None``), ``is_init`` ``[*B, T]`` or ``[*B, T, 1]`` booleans -> ``(beliefs
        [*B, T, hidden_size], last belief [*B, hidden_size])``."""
        if input.ndim < 2:
            raise ValueError(
                f"DreamerV3BlockGRU: expected an input [..., T, {self.cell.input_size}] with a "
                f"time dim, got {tuple(input.shape)}. Use DreamerV3BlockGRUCell for one step."
            )
        if hidden is None:
            hidden = input.new_zeros((*input.shape[:-2], self.cell.hidden_size))
        if is_init is not None:
            if is_init.shape[-1:] == (1,) and is_init.ndim == input.ndim:
                is_init = is_init.squeeze(-1)
            if is_init.shape != input.shape[:-1]:
                raise ValueError(
                    f"DreamerV3BlockGRU: expected is_init of shape {tuple(input.shape[:-1])} "
                    f"(one flag per step), got {tuple(is_init.shape)}."
                )
        outputs = []
        for t, step in enumerate(input.unbind(-2)):
            if is_init is not None:
                hidden = torch.where(is_init[..., t, None], torch.zeros_like(hidden), hidden)
            hidden = self.cell(step, hidden)
            outputs.append(hidden)
        return torch.stack(outputs, dim=-2), hidden
