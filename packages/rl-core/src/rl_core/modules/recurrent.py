"""LSTM and GRU policies' building blocks that keep their hidden state in the TensorDict."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch
from torch import nn

from rl_core._transform.primer import TensorDictPrimer
from rl_core.exploration import recurrent_mode, set_recurrent_mode
from rl_core.keys import IS_INIT, NestedKey
from rl_core.modules._recurrent import RecurrentModuleBase, _default_keys
from rl_core.modules.rnn import GRU, LSTM
from rl_core.specs import Composite

LSTM_STATE_KEYS = ("recurrent_state_h", "recurrent_state_c")
GRU_STATE_KEYS = ("recurrent_state",)


def _build_rnn(
    cls: type[nn.LSTM] | type[nn.GRU],
    given: nn.Module | None,
    input_size: int | None,
    hidden_size: int | None,
    num_layers: int,
    *,
    bias: bool,
    dropout: float,
    device: torch.device | str | None,
    where: str,
    arg: str,
    python_based: bool,
    batch_first: bool,
) -> nn.Module:
    if batch_first is not True:  # TorchRL's argument, which accepts only True as well
        raise ValueError(
            f"{where}: expected batch_first=True (inputs are [*batch, time, features]), got "
            f"batch_first={batch_first!r}."
        )
    if given is None:
        if input_size is None or hidden_size is None:
            raise ValueError(
                f"{where}: expected input_size and hidden_size, got input_size={input_size}, "
                f"hidden_size={hidden_size}. Pass both, or an existing module as {arg}=."
            )
        if python_based:
            cls = LSTM if cls is nn.LSTM else GRU
        return cls(
            input_size,
            hidden_size,
            num_layers,
            bias=bias,
            batch_first=True,
            dropout=dropout,
            device=device,
        )
    if not isinstance(given, cls):
        raise TypeError(f"{where}: expected {arg} to be an {cls.__name__}, got {type(given)}.")
    if input_size is not None or hidden_size is not None:
        raise ValueError(f"{where}: pass either {arg}= or input_size/hidden_size, not both.")
    if not given.batch_first or given.bidirectional or getattr(given, "proj_size", 0):
        raise ValueError(
            f"{where}: expected a batch_first, unidirectional {cls.__name__} without "
            f"projection, got batch_first={given.batch_first}, "
            f"bidirectional={given.bidirectional}. Build it with batch_first=True."
        )
    return given


def _default_mode(recurrent_mode: bool, default_recurrent_mode: bool | None, where: str) -> bool:
    if default_recurrent_mode is None:
        return bool(recurrent_mode)
    if recurrent_mode and not default_recurrent_mode:
        raise ValueError(
            f"{where}: recurrent_mode=True and default_recurrent_mode=False contradict each "
            f"other; pass one of them."
        )
    return bool(default_recurrent_mode)


class LSTMModule(RecurrentModuleBase):
    """An LSTM that reads and writes its hidden states ``h`` and ``c`` in the TensorDict.

    Keys: reads ``[in_key, "recurrent_state_h", "recurrent_state_c", "is_init"]`` and writes
    ``[out_key, ("next", "recurrent_state_h"), ("next", "recurrent_state_c")]``; each state is
    ``[*B, num_layers, hidden_size]``. Missing states are zeros, and where ``"is_init"`` is True
    the state restarts from zeros.

    - Step mode (default, for collection): input ``[*B, F]`` -> output ``[*B, H]``.
    - Sequence mode (``default_recurrent_mode=True``, a :func:`set_recurrent_mode` block, or
      the :meth:`set_recurrent_mode` copy; for training on ``[B, T]`` slices): input
      ``[*B, T, F]`` -> output ``[*B, T, H]`` in one call of the fused LSTM; the states are
      read at ``t = 0`` and every ``is_init`` inside the slice cuts it into a fresh segment
      (on CPU, one fused call per stretch of time between distinct reset times; on CUDA, one
      call on the packed segments).
      The outputs equal those of step mode run step by step on the same data.

    Args:
        input_size: number of input features.
        hidden_size: number of hidden features.
        num_layers: number of stacked LSTM layers. Defaults to 1.

    Keyword Args:
        bias: whether the LSTM has biases. Defaults to ``True``.
        dropout: dropout between layers. Defaults to 0.
        in_key: the input key (the state keys are the defaults). Exclusive with ``in_keys``.
        in_keys: ``[input, h, c]`` keys, optionally followed by ``is_init_key``.
        out_key: the output key (the next states go to ``("next", ...)``). Exclusive with
            ``out_keys``.
        out_keys: ``[output, next_h, next_c]`` keys.
        is_init_key: the boolean reset marker. Defaults to ``"is_init"``.
        device: device of the parameters.
        lstm: an existing batch-first ``nn.LSTM`` to wrap instead of building one.
        recurrent_mode: start in sequence mode. Defaults to ``False``.
        default_recurrent_mode: TorchRL's name of ``recurrent_mode`` (the mode used outside
            a :func:`set_recurrent_mode` block); wins over it when given.
        python_based: build the plain-PyTorch :class:`~rl_core.modules.LSTM` instead of
            ``nn.LSTM``: it runs under ``torch.vmap``/``torch.compile``, and in sequence
            mode it restarts the state at each ``is_init`` inside its time loop instead of
            cutting the slice at the resets. Defaults to ``False``.
        batch_first: must be ``True`` (TorchRL's argument: time follows the batch dims).

    Raises:
        ValueError: sizes, keys or modes are missing or contradictory, ``batch_first`` is not
            ``True``, or ``lstm`` is not batch-first and unidirectional.
        TypeError: ``lstm`` is not an ``nn.LSTM``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import LSTMModule
        >>> lstm = LSTMModule(3, 8, num_layers=2, in_key="embed", out_key="features")
        >>> td = lstm(TensorDict(embed=torch.zeros(4, 3), batch_size=[4]))
        >>> td["features"].shape, td["next", "recurrent_state_h"].shape
        (torch.Size([4, 8]), torch.Size([4, 2, 8]))
        >>> seq = lstm.set_recurrent_mode(True)
        >>> seq(TensorDict(embed=torch.zeros(4, 10, 3), batch_size=[4, 10]))["features"].shape
        torch.Size([4, 10, 8])
    """

    _state_names = LSTM_STATE_KEYS

    def __init__(
        self,
        input_size: int | None = None,
        hidden_size: int | None = None,
        num_layers: int = 1,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        in_key: NestedKey | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        is_init_key: NestedKey = IS_INIT,
        device: torch.device | str | None = None,
        lstm: nn.LSTM | None = None,
        recurrent_mode: bool = False,
        python_based: bool = False,
        batch_first: bool = True,
        default_recurrent_mode: bool | None = None,
    ) -> None:
        rnn = _build_rnn(
            nn.LSTM,
            lstm,
            input_size,
            hidden_size,
            num_layers,
            bias=bias,
            dropout=dropout,
            device=device,
            where="LSTMModule",
            arg="lstm",
            python_based=python_based,
            batch_first=batch_first,
        )
        keys_in, keys_out = _default_keys(
            in_key, in_keys, out_key, out_keys, self._state_names, "LSTMModule", is_init_key
        )
        mode = _default_mode(recurrent_mode, default_recurrent_mode, "LSTMModule")
        super().__init__(rnn, keys_in, keys_out, is_init_key=is_init_key, recurrent_mode=mode)

    @property
    def lstm(self) -> nn.LSTM:
        """The wrapped ``nn.LSTM``."""
        return self.rnn

    def _to_torch(self, states: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        h, c = states
        return h.transpose(0, 1).contiguous(), c.transpose(0, 1).contiguous()

    def _from_torch(self, states: tuple[torch.Tensor, torch.Tensor]) -> list[torch.Tensor]:
        return [s.transpose(0, 1) for s in states]


class GRUModule(RecurrentModuleBase):
    """A GRU that reads and writes its hidden state in the TensorDict.

    Like :class:`LSTMModule` with a single state: reads ``[in_key, "recurrent_state",
    "is_init"]`` and
    writes ``[out_key, ("next", "recurrent_state")]``, the state being
    ``[*B, num_layers, hidden_size]``; step mode by default, sequence mode through
    :meth:`set_recurrent_mode`, restarts from zeros where ``"is_init"`` is True.

    Arguments as for :class:`LSTMModule`, with ``gru`` (an existing batch-first ``nn.GRU``)
    instead of ``lstm``, ``[input, state]`` (and optionally the reset key) as ``in_keys`` and ``[output, next_state]`` as
    ``out_keys``; ``python_based`` builds the plain-PyTorch :class:`~rl_core.modules.GRU`.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_core.modules import GRUModule
        >>> gru = GRUModule(3, 8, in_key="embed", out_key="features", recurrent_mode=True)
        >>> td = TensorDict(embed=torch.zeros(2, 5, 3), batch_size=[2, 5])
        >>> gru(td)["next", "recurrent_state"].shape
        torch.Size([2, 5, 1, 8])
    """

    _state_names = GRU_STATE_KEYS

    def __init__(
        self,
        input_size: int | None = None,
        hidden_size: int | None = None,
        num_layers: int = 1,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        in_key: NestedKey | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_key: NestedKey | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        is_init_key: NestedKey = IS_INIT,
        device: torch.device | str | None = None,
        gru: nn.GRU | None = None,
        recurrent_mode: bool = False,
        python_based: bool = False,
        batch_first: bool = True,
        default_recurrent_mode: bool | None = None,
    ) -> None:
        rnn = _build_rnn(
            nn.GRU,
            gru,
            input_size,
            hidden_size,
            num_layers,
            bias=bias,
            dropout=dropout,
            device=device,
            where="GRUModule",
            arg="gru",
            python_based=python_based,
            batch_first=batch_first,
        )
        keys_in, keys_out = _default_keys(
            in_key, in_keys, out_key, out_keys, self._state_names, "GRUModule", is_init_key
        )
        mode = _default_mode(recurrent_mode, default_recurrent_mode, "GRUModule")
        super().__init__(rnn, keys_in, keys_out, is_init_key=is_init_key, recurrent_mode=mode)

    @property
    def gru(self) -> nn.GRU:
        """The wrapped ``nn.GRU``."""
        return self.rnn

    def _to_torch(self, states: list[torch.Tensor]) -> torch.Tensor:
        (h,) = states
        return h.transpose(0, 1).contiguous()

    def _from_torch(self, states: torch.Tensor) -> list[torch.Tensor]:
        return [states.transpose(0, 1)]


def get_primers_from_module(module: nn.Module) -> TensorDictPrimer | None:
    """Returns one primer for every recurrent module inside ``module`` (a whole policy).

    ``env.append_transform(get_primers_from_module(policy))`` adds the hidden states of all
    the policy's recurrent modules at once.

    Args:
        module: any module; its submodules with a ``make_tensordict_primer`` method (such as
            :class:`LSTMModule` and :class:`GRUModule`) are collected.

    Returns:
        A :class:`~rl_core.TensorDictPrimer` holding the entries of all their primers, or
        ``None`` (with a warning) when ``module`` holds no recurrent module.

    Raises:
        ValueError: two recurrent modules declare the same state key with different specs.

    Examples:
        >>> from tensordict.nn import TensorDictSequential
        >>> from rl_core.modules import GRUModule, LSTMModule
        >>> policy = TensorDictSequential(
        ...     LSTMModule(3, 8, in_key="obs", out_key="a"),
        ...     GRUModule(8, 4, in_key="a", out_key="b"),
        ... )
        >>> sorted(get_primers_from_module(policy).out_keys)
        ['recurrent_state', 'recurrent_state_c', 'recurrent_state_h']
    """
    merged = Composite()
    for sub in module.modules():
        if not hasattr(sub, "make_tensordict_primer"):
            continue
        primers = sub.make_tensordict_primer().primers
        for key in primers.keys(include_nested=True, leaves_only=True):
            spec = primers[key]
            known = merged.get(key, None)
            if known is not None and known != spec:
                raise ValueError(
                    f"get_primers_from_module: two recurrent modules write the state {key!r} "
                    f"with different specs ({known} and {spec}). Give them distinct in_keys."
                )
            merged[key] = spec
    if not merged.keys():
        warnings.warn(
            f"get_primers_from_module: no recurrent module in {type(module).__name__}; no "
            f"primer to make.",
            stacklevel=2,
        )
        return None
    return TensorDictPrimer(merged)


__all__ = [
    "LSTMModule",
    "GRUModule",
    "get_primers_from_module",
    "set_recurrent_mode",
    "recurrent_mode",
]
