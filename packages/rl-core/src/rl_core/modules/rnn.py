"""LSTM and GRU written in plain PyTorch operations: ``LSTMCell``, ``GRUCell``, ``LSTM``, ``GRU``.

They compute what ``torch.nn.LSTMCell``, ``torch.nn.GRUCell``, ``torch.nn.LSTM`` and
``torch.nn.GRU`` compute, with the same parameter names and initialisation (a state dict moves
between the two), but without cuDNN or a fused kernel: every step is a few matrix products, so
they run under :func:`torch.vmap` and :func:`torch.compile`, and the multi-step modules can
restart their state inside a sequence (``is_init``), which is how ``LSTMModule`` and
``GRUModule`` built with ``python_based=True`` handle resets without splitting the batch.

Differences from ``torch.nn``: ``LSTM`` and ``GRU`` are batch-first by default, and
bidirectional or projected (``proj_size``) layers are refused.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.rnn import RNNCellBase


def _lstm_step(
    gates_x: torch.Tensor,
    h: torch.Tensor,
    c: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One LSTM step from the input's share of the gates ``gates_x = W_ih x + b_ih``.

    Shapes: ``gates_x`` ``[*B, 4H]``, ``h`` and ``c`` ``[*B, H]``, ``weight_hh`` ``[4H, H]``.
    Gate order as in torch: input, forget, cell, output.
    """
    gates = gates_x + F.linear(h, weight_hh, bias_hh)
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h = torch.sigmoid(o) * torch.tanh(c)
    return h, c


def _gru_step(
    gates_x: torch.Tensor,
    h: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_hh: torch.Tensor | None,
) -> torch.Tensor:
    """One GRU step from ``gates_x = W_ih x + b_ih`` (``[*B, 3H]``; order reset, update, new)."""
    gates_h = F.linear(h, weight_hh, bias_hh)
    r_x, z_x, n_x = gates_x.chunk(3, dim=-1)
    r_h, z_h, n_h = gates_h.chunk(3, dim=-1)
    r = torch.sigmoid(r_x + r_h)
    z = torch.sigmoid(z_x + z_h)
    n = torch.tanh(n_x + r * n_h)
    return (1 - z) * n + z * h


def _check_cell_input(where: str, x: torch.Tensor, input_size: int) -> None:
    if x.dim() not in (1, 2) or x.shape[-1] != input_size:
        raise ValueError(
            f"{where}: expected an input of shape [batch, {input_size}] or [{input_size}], got "
            f"{list(x.shape)}."
        )


class LSTMCell(RNNCellBase):
    """One LSTM step, in plain PyTorch operations: what ``torch.nn.LSTMCell`` computes.

    Same parameters (``weight_ih`` ``[4H, I]``, ``weight_hh`` ``[4H, H]``, ``bias_ih``,
    ``bias_hh``), initialisation and call as ``torch.nn.LSTMCell``; usable under
    :func:`torch.vmap`.

    Args:
        input_size: number of input features ``I``.
        hidden_size: number of hidden features ``H``.
        bias: whether the cell has biases. Defaults to ``True``.
        device: device of the parameters.
        dtype: dtype of the parameters.

    Examples:
        >>> import torch
        >>> cell = LSTMCell(3, 8)
        >>> h, c = cell(torch.zeros(4, 3))
        >>> h.shape, c.shape
        (torch.Size([4, 8]), torch.Size([4, 8]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(
        self, input: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns the next ``(h, c)``, each ``[batch, H]`` (``[H]`` for an unbatched input).

        Args:
            input: ``[batch, I]`` or ``[I]``.
            hx: ``(h, c)`` of the input's batch shape and ``H`` features; zeros when ``None``.
        """
        _check_cell_input("LSTMCell.forward", input, self.input_size)
        if hx is None:
            zeros = input.new_zeros((*input.shape[:-1], self.hidden_size))
            hx = (zeros, zeros)
        gates_x = F.linear(input, self.weight_ih, self.bias_ih)
        return _lstm_step(gates_x, hx[0], hx[1], self.weight_hh, self.bias_hh)


class GRUCell(RNNCellBase):
    """One GRU step, in plain PyTorch operations: what ``torch.nn.GRUCell`` computes.

    Same parameters (``weight_ih`` ``[3H, I]``, ``weight_hh`` ``[3H, H]``, ``bias_ih``,
    ``bias_hh``), initialisation and call as ``torch.nn.GRUCell``; usable under
    :func:`torch.vmap`. Arguments as for :class:`LSTMCell`.

    Examples:
        >>> import torch
        >>> GRUCell(3, 8)(torch.zeros(4, 3)).shape
        torch.Size([4, 8])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: torch.Tensor, hx: torch.Tensor | None = None) -> torch.Tensor:
        """Returns the next hidden state ``[batch, H]`` (``[H]`` for an unbatched input), as
        :meth:`LSTMCell.forward` does with its one state ``hx`` (zeros when ``None``)."""
        _check_cell_input("GRUCell.forward", input, self.input_size)
        if hx is None:
            hx = input.new_zeros((*input.shape[:-1], self.hidden_size))
        gates_x = F.linear(input, self.weight_ih, self.bias_ih)
        return _gru_step(gates_x, hx, self.weight_hh, self.bias_hh)


def _refuse_unsupported(where: str, bidirectional: bool, proj_size: int) -> None:
    if bidirectional:
        raise NotImplementedError(
            f"{where}: bidirectional layers are not supported, got bidirectional=True. Use "
            "torch.nn's module, or run two modules on the sequence and its reverse."
        )
    if proj_size:
        raise NotImplementedError(
            f"{where}: projected hidden states are not supported, got proj_size={proj_size}. "
            "Use proj_size=0."
        )


class _PythonRNNMixin:
    """The multi-step loop shared by :class:`LSTM` and :class:`GRU`.

    ``_run(x, states, is_init)`` takes a batch-first input ``[N, T, I]``, the initial states as
    a list of ``[num_layers, N, H]`` tensors and an optional ``[N, T]`` reset mask; it returns
    the last layer's output ``[N, T, H]`` and each state at every step, ``[N, T, L, H]``.
    A step where ``is_init`` is True starts from zero states in every layer.
    """

    num_layers: int
    hidden_size: int
    dropout: float
    training: bool
    _n_states: int

    def _layer_step(
        self, gates_x: torch.Tensor, states: list[torch.Tensor], layer: int
    ) -> list[torch.Tensor]:
        raise NotImplementedError

    def _run(
        self,
        x: torch.Tensor,
        states: list[torch.Tensor],
        is_init: torch.Tensor | None,
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        t = x.shape[1]
        keep = None if is_init is None else (~is_init).to(x.dtype).unsqueeze(-1)  # [N, T, 1]
        per_layer_states: list[list[torch.Tensor]] = []
        layer_input = x
        for layer in range(self.num_layers):
            weight_ih = getattr(self, f"weight_ih_l{layer}")
            bias_ih = getattr(self, f"bias_ih_l{layer}", None)
            # the input's share of the gates, for all steps in one product
            gates_x = F.linear(layer_input, weight_ih, bias_ih)
            current = [s[layer] for s in states]
            outputs: list[list[torch.Tensor]] = [[] for _ in range(self._n_states)]
            for step in range(t):
                if keep is not None:
                    current = [s * keep[:, step] for s in current]
                current = self._layer_step(gates_x[:, step], current, layer)
                for out, s in zip(outputs, current):
                    out.append(s)
            stacked = [torch.stack(out, 1) for out in outputs]  # each [N, T, H]
            per_layer_states.append(stacked)
            layer_input = stacked[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        all_states = [
            torch.stack([per_layer_states[k][i] for k in range(self.num_layers)], 2)
            for i in range(self._n_states)
        ]
        return per_layer_states[-1][0], all_states

    def _forward_sequence(
        self, input: torch.Tensor, hx: list[torch.Tensor] | None, batch_first: bool, where: str
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        input_size = self.input_size  # type: ignore[attr-defined]
        if input.dim() not in (2, 3) or input.shape[-1] != input_size:
            raise ValueError(
                f"{where}: expected an input of shape [batch, time, {input_size}] (batch_first) "
                f"or [time, {input_size}], got {list(input.shape)}."
            )
        unbatched = input.dim() == 2
        x = input.unsqueeze(0) if unbatched else (input if batch_first else input.transpose(0, 1))
        n = x.shape[0]
        if hx is None:
            hx = [x.new_zeros(self.num_layers, n, self.hidden_size)] * self._n_states
        elif unbatched:
            hx = [s.unsqueeze(1) for s in hx]
        expected = (self.num_layers, n, self.hidden_size)
        for s in hx:
            if tuple(s.shape) != expected:
                raise ValueError(
                    f"{where}: expected hidden states of shape {list(expected)} "
                    f"(num_layers, batch, hidden_size), got {list(s.shape)}."
                )
        y, all_states = self._run(x, list(hx), None)
        last = [s[:, -1].transpose(0, 1) for s in all_states]  # [L, N, H]
        if unbatched:
            return y.squeeze(0), [s.squeeze(1) for s in last]
        return (y if batch_first else y.transpose(0, 1)), last


class LSTM(_PythonRNNMixin, nn.LSTM):
    """A multi-layer LSTM in plain PyTorch operations: what ``torch.nn.LSTM`` computes.

    Same parameters (``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``,
    ``bias_hh_l{k}``), initialisation and call as ``torch.nn.LSTM``, but batch-first by
    default and without cuDNN, so it runs under :func:`torch.vmap` and :func:`torch.compile`.
    The input's share of the gates is one matrix product over all steps; the recurrence is a
    Python loop over time.

    Args:
        input_size: number of input features ``I``.
        hidden_size: number of hidden features ``H``.
        num_layers: number of stacked layers. Defaults to 1.
        batch_first: inputs and outputs are ``[batch, time, feature]``. Defaults to ``True``.
        bias: whether the layers have biases. Defaults to ``True``.
        dropout: dropout on the outputs of every layer but the last, in training mode.
            Defaults to 0.
        bidirectional: must be ``False``.
        proj_size: must be 0.
        device: device of the parameters.
        dtype: dtype of the parameters.

    Raises:
        NotImplementedError: ``bidirectional=True`` or ``proj_size > 0``.

    Examples:
        >>> import torch
        >>> lstm = LSTM(3, 8, num_layers=2)
        >>> y, (h, c) = lstm(torch.zeros(4, 10, 3))
        >>> y.shape, h.shape
        (torch.Size([4, 10, 8]), torch.Size([2, 4, 8]))
    """

    _n_states = 2

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        batch_first: bool = True,
        bias: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        _refuse_unsupported("LSTM", bidirectional, proj_size)
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias=bias,
            batch_first=batch_first,
            dropout=dropout,
            device=device,
            dtype=dtype,
        )

    def _layer_step(
        self, gates_x: torch.Tensor, states: list[torch.Tensor], layer: int
    ) -> list[torch.Tensor]:
        h, c = _lstm_step(
            gates_x,
            states[0],
            states[1],
            getattr(self, f"weight_hh_l{layer}"),
            getattr(self, f"bias_hh_l{layer}", None),
        )
        return [h, c]

    def forward(  # type: ignore[override]
        self, input: torch.Tensor, hx: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Runs the sequence; returns the output and the last ``(h, c)``.

        Args:
            input: ``[batch, time, I]`` (``[time, batch, I]`` if not ``batch_first``), or
                ``[time, I]`` unbatched.
            hx: ``(h_0, c_0)``, each ``[num_layers, batch, H]`` (``[num_layers, H]``
                unbatched); zeros when ``None``.

        Returns:
            ``(output, (h_n, c_n))``: the last layer's ``h`` at every step, of the input's
            layout with ``H`` features, and each layer's last state.
        """
        y, (h, c) = self._forward_sequence(
            input, None if hx is None else list(hx), self.batch_first, "LSTM.forward"
        )
        return y, (h, c)


class GRU(_PythonRNNMixin, nn.GRU):
    """A multi-layer GRU in plain PyTorch operations: what ``torch.nn.GRU`` computes.

    Same parameters, initialisation and call as ``torch.nn.GRU``, but batch-first by default
    and without cuDNN, so it runs under :func:`torch.vmap` and :func:`torch.compile`.
    Arguments as for :class:`LSTM` (``bias`` before ``batch_first``, as in ``torch.nn.GRU``),
    without ``proj_size``.

    Raises:
        NotImplementedError: ``bidirectional=True``.

    Examples:
        >>> import torch
        >>> y, h = GRU(3, 8)(torch.zeros(4, 10, 3))
        >>> y.shape, h.shape
        (torch.Size([4, 10, 8]), torch.Size([1, 4, 8]))
    """

    _n_states = 1

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        _refuse_unsupported("GRU", bidirectional, 0)
        super().__init__(
            input_size,
            hidden_size,
            num_layers,
            bias=bias,
            batch_first=batch_first,
            dropout=dropout,
            device=device,
            dtype=dtype,
        )

    def _layer_step(
        self, gates_x: torch.Tensor, states: list[torch.Tensor], layer: int
    ) -> list[torch.Tensor]:
        h = _gru_step(
            gates_x,
            states[0],
            getattr(self, f"weight_hh_l{layer}"),
            getattr(self, f"bias_hh_l{layer}", None),
        )
        return [h]

    def forward(  # type: ignore[override]
        self, input: torch.Tensor, hx: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Runs the sequence; returns ``(output, h_n)``, as :meth:`LSTM.forward` does with its
        one state ``h`` (``hx`` is ``h_0``, zeros when ``None``)."""
        y, (h,) = self._forward_sequence(
            input, None if hx is None else [hx], self.batch_first, "GRU.forward"
        )
        return y, h


__all__ = ["LSTMCell", "GRUCell", "LSTM", "GRU"]
