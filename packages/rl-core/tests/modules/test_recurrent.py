import pytest
import torch
from tensordict import TensorDict
from torch import nn

from rl_core.modules import GRUModule, LSTMModule, recurrent_mode, set_recurrent_mode
from rl_core.modules._recurrent import split_at_resets
from rl_core.specs import Unbounded

B, T, F, H, L = 3, 7, 4, 5, 2


def _make(cls, **kwargs):
    torch.manual_seed(0)
    return cls(F, H, num_layers=L, in_key="embed", out_key="features", **kwargs)


def _state_keys(module):
    return module.in_keys[1:-1]


def _data(module, batch=(B,), is_init_at=()):
    """A [*batch, T] slice with random inputs and random stored states at every step."""
    torch.manual_seed(1)
    td = TensorDict(embed=torch.randn(*batch, T, F), batch_size=[*batch, T])
    for key in _state_keys(module):
        td[key] = torch.randn(*batch, T, L, H)
    is_init = torch.zeros(*batch, T, 1, dtype=torch.bool)
    for index in is_init_at:
        is_init[index] = True
    td["is_init"] = is_init
    return td


def _run_step_by_step(module, td):
    """Step mode over the time dim, carrying ("next", state) to the next step's state."""
    outputs, next_states = [], {key: [] for key in _state_keys(module)}
    carried = {key: td[key][..., 0, :, :] for key in _state_keys(module)}
    for t in range(td.shape[-1]):
        step = TensorDict(
            {"embed": td["embed"][..., t, :], "is_init": td["is_init"][..., t, :], **carried},
            batch_size=td.batch_size[:-1],
        )
        step = module(step)
        outputs.append(step["features"])
        carried = {key: step["next", key] for key in _state_keys(module)}
        for key in _state_keys(module):
            next_states[key].append(step["next", key])
    return torch.stack(outputs, -2), {k: torch.stack(v, -3) for k, v in next_states.items()}


@pytest.mark.parametrize("python_based", [False, True], ids=["torch", "python"])
@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
@pytest.mark.parametrize(
    ("batch", "is_init_at"),
    [
        ((B,), ()),
        ((B,), [(0, 0), (1, 3), (1, 4), (2, 6)]),
        ((2, B), [(0, 1, 2), (1, 2, 0), (1, 0, 5)]),
    ],
    ids=["no-reset", "resets-inside", "two-batch-dims"],
)
def test_step_mode_equals_sequence_mode(cls, batch, is_init_at, python_based):
    module = _make(cls, python_based=python_based)
    td = _data(module, batch, is_init_at)
    expected_out, expected_next = _run_step_by_step(module, td)

    seq = module.set_recurrent_mode(True)
    out = seq(td.clone())
    torch.testing.assert_close(out["features"], expected_out)
    # the next state is exact at the end of each segment and zero elsewhere
    is_init = td["is_init"].squeeze(-1)
    ends = torch.zeros_like(is_init)
    ends[..., -1] = True
    ends[..., :-1] = is_init[..., 1:]
    for key in _state_keys(module):
        got = out["next", key]
        torch.testing.assert_close(got[ends], expected_next[key][ends])
        assert (got[~ends] == 0).all()


@pytest.mark.parametrize("python_based", [False, True], ids=["torch", "python"])
@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_sequence_mode_gradients_match_step_mode(cls, python_based):
    module = _make(cls, python_based=python_based)
    td = _data(module, is_init_at=[(1, 3)])
    out, _ = _run_step_by_step(module, td)
    out.square().sum().backward()
    expected = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    module.set_recurrent_mode(True)(td.clone())["features"].square().sum().backward()
    for p, g in zip(module.parameters(), expected):
        torch.testing.assert_close(p.grad, g)


def test_is_init_zeroes_the_state_in_step_mode():
    module = _make(LSTMModule)
    td = TensorDict(embed=torch.randn(4, F), batch_size=[4])
    for key in _state_keys(module):
        td[key] = torch.randn(4, L, H)
    td["is_init"] = torch.tensor([[True], [False], [True], [False]])
    out = module(td.clone())
    fresh = module(td.select("embed"))  # missing states are zeros
    torch.testing.assert_close(out["features"][[0, 2]], fresh["features"][[0, 2]])
    assert not torch.allclose(out["features"][[1, 3]], fresh["features"][[1, 3]])


def test_step_mode_matches_torch_lstm_directly():
    module = _make(LSTMModule)
    x, h, c = torch.randn(6, F), torch.randn(6, L, H), torch.randn(6, L, H)
    td = TensorDict(embed=x, recurrent_state_h=h, recurrent_state_c=c, batch_size=[6])
    out = module(td)
    y, (h1, c1) = module.lstm(x.unsqueeze(1), (h.transpose(0, 1), c.transpose(0, 1)))
    torch.testing.assert_close(out["features"], y.squeeze(1))
    torch.testing.assert_close(out["next", "recurrent_state_h"], h1.transpose(0, 1))
    torch.testing.assert_close(out["next", "recurrent_state_c"], c1.transpose(0, 1))


def test_keys_and_modes():
    lstm = _make(LSTMModule)
    assert lstm.in_keys == ["embed", "recurrent_state_h", "recurrent_state_c", "is_init"]
    assert lstm.out_keys == [
        "features",
        ("next", "recurrent_state_h"),
        ("next", "recurrent_state_c"),
    ]
    gru = _make(GRUModule)
    assert gru.in_keys == ["embed", "recurrent_state", "is_init"]
    assert gru.out_keys == ["features", ("next", "recurrent_state")]
    seq = lstm.set_recurrent_mode(True)
    assert seq.recurrent_mode
    assert not lstm.recurrent_mode
    assert seq.lstm is lstm.lstm
    assert type(seq) is LSTMModule
    assert not seq.set_recurrent_mode(False).recurrent_mode
    custom = LSTMModule(F, H, in_keys=["x", "h", "c"], out_keys=["y", ("nxt", "h"), ("nxt", "c")])
    td = custom(TensorDict(x=torch.zeros(2, F), batch_size=[2]))
    assert td["nxt", "c"].shape == (2, 1, H)


def test_wraps_an_existing_module():
    core = nn.GRU(F, H, batch_first=True)
    gru = GRUModule(gru=core, in_key="embed", out_key="out")
    assert gru.gru is core
    assert gru.state_shape == (1, H)


def test_batch_first_is_accepted_as_torchrl_does_true_only():
    lstm = LSTMModule(F, H, in_key="x", out_key="y", batch_first=True)
    assert lstm.lstm.batch_first
    assert GRUModule(F, H, in_key="x", out_key="y", batch_first=True).gru.batch_first
    for cls in (LSTMModule, GRUModule):
        with pytest.raises(ValueError, match=rf"{cls.__name__}: expected batch_first=True"):
            cls(F, H, in_key="x", out_key="y", batch_first=False)


def test_errors():
    with pytest.raises(ValueError, match="LSTMModule: pass exactly one of in_key"):
        LSTMModule(F, H, out_key="y")
    with pytest.raises(ValueError, match="GRUModule: pass exactly one of out_key or out_keys"):
        GRUModule(F, H, in_key="x")
    with pytest.raises(ValueError, match=r"expected 3 in_keys \(the input and 2 hidden"):
        LSTMModule(F, H, in_keys=["x", "h"], out_key="y")
    with pytest.raises(ValueError, match="LSTMModule: expected input_size and hidden_size"):
        LSTMModule(F, in_key="x", out_key="y")
    with pytest.raises(ValueError, match="expected a batch_first, unidirectional LSTM"):
        LSTMModule(lstm=nn.LSTM(F, H), in_key="x", out_key="y")
    with pytest.raises(TypeError, match="expected gru to be an GRU"):
        GRUModule(gru=nn.LSTM(F, H, batch_first=True), in_key="x", out_key="y")
    seq = _make(GRUModule).set_recurrent_mode(True)
    with pytest.raises(ValueError, match="sequence mode needs a time dimension"):
        seq(TensorDict(embed=torch.zeros(F)))
    step = _make(GRUModule)
    bad = TensorDict(embed=torch.zeros(2, F), recurrent_state=torch.zeros(2, H), batch_size=[2])
    with pytest.raises(
        ValueError, match=r"expected 'recurrent_state' of shape \(2, 2, 5\).*got \(2, 5\)"
    ):
        step(bad)


def test_split_at_resets():
    is_init = torch.tensor([[False, False, True, False], [True, True, False, False]])
    seg = split_at_resets(is_init)
    assert seg.start.tolist() == [0, 2, 4, 5]
    assert seg.lengths.tolist() == [2, 2, 1, 3]
    assert seg.seg_id.tolist() == [0, 0, 1, 1, 2, 3, 3, 3]
    assert seg.pos.tolist() == [0, 1, 0, 1, 0, 0, 1, 2]


@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_recurrent_state_spec_zeros_are_a_fresh_state(cls):
    module = _make(cls)
    spec = module.recurrent_state_spec()
    assert spec.keys() == _state_keys(module)
    for key in _state_keys(module):
        assert spec[key] == Unbounded(shape=(L, H), device="cpu")
    td = spec.zero((6,))
    td["embed"] = torch.randn(6, F)
    primed = module(td.clone())
    fresh = module(td.select("embed"))
    torch.testing.assert_close(primed["features"], fresh["features"])
    assert spec.is_in(TensorDict({k: primed["next", k][0] for k in _state_keys(module)}))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_step_mode_equals_sequence_mode_on_cuda(cls):
    module = _make(cls).cuda()
    td = _data(module, is_init_at=[(0, 2), (2, 5)]).cuda()
    # cuDNN's RNNs may use TF32 (on by default for cuDNN): about 1e-3 apart between a step
    # at a time and a whole sequence. The comparison is of the two modes, in full float32.
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        expected, _ = _run_step_by_step(module, td)
        out = module.set_recurrent_mode(True)(td.clone())
    torch.testing.assert_close(out["features"], expected, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_python_based_shares_torch_parameters_and_outputs(cls):
    from rl_core.modules import GRU, LSTM

    fused, python = _make(cls), _make(cls, python_based=True)
    assert isinstance(python.rnn, LSTM if cls is LSTMModule else GRU)
    python.load_state_dict(fused.state_dict())
    td = _data(fused, is_init_at=[(0, 2), (2, 5)])
    a = fused.set_recurrent_mode(True)(td.clone())
    b = python.set_recurrent_mode(True)(td.clone())
    torch.testing.assert_close(b["features"], a["features"])
    for key in _state_keys(fused):
        torch.testing.assert_close(b["next", key], a["next", key])


@pytest.mark.parametrize("cls", [LSTMModule, GRUModule])
def test_packed_segments_and_time_chunks_agree(cls):
    """CPU runs time chunks, CUDA packed segments: both give the same outputs and end states."""
    module = _make(cls).set_recurrent_mode(True)
    td = _data(module, is_init_at=[(0, 2), (1, 2), (1, 5), (2, 6)])
    x = td["embed"]
    first = [td[key][:, 0] for key in _state_keys(module)]
    is_init = td["is_init"].squeeze(-1)

    def scattered(states, ends):
        out = []
        for s in states:
            full = s.new_zeros(B * T, L, H)
            full[ends] = s
            out.append(full)
        return out

    y_seg, last_seg, ends_seg = module._segmented(x, first, is_init)
    y_chunk, last_chunk, ends_chunk = module._chunked(x, first, is_init)
    torch.testing.assert_close(y_chunk, y_seg)
    for a, b in zip(scattered(last_chunk, ends_chunk), scattered(last_seg, ends_seg)):
        torch.testing.assert_close(a, b)


def test_torchrl_mode_arguments_and_the_global_mode():
    step = _make(LSTMModule)
    seq = _make(LSTMModule, default_recurrent_mode=True)
    assert (step.recurrent_mode, seq.recurrent_mode) == (False, True)
    td = TensorDict(embed=torch.randn(2, 3, F), batch_size=[2, 3])
    with set_recurrent_mode(True):
        assert recurrent_mode() is True
        assert step.recurrent_mode
        torch.testing.assert_close(step(td.clone())["features"], seq(td.clone())["features"])
        with set_recurrent_mode("sequential"):
            assert not seq.recurrent_mode
        with set_recurrent_mode(None):
            assert not step.recurrent_mode
        assert seq.recurrent_mode
    assert recurrent_mode() is None
    assert not step.recurrent_mode

    @set_recurrent_mode(True)
    def train_step(data):
        return step(data)["features"].shape

    assert train_step(td.clone()) == (2, 3, H)
    with pytest.raises(ValueError, match="set_recurrent_mode: expected True/'recurrent'"):
        set_recurrent_mode("parallel")
    with pytest.raises(ValueError, match="recurrent_mode=True and default_recurrent_mode=False"):
        _make(GRUModule, recurrent_mode=True, default_recurrent_mode=False)


def test_in_keys_may_end_with_the_reset_key_as_torchrl_lists_them():
    keys = ["x", "h", "c", "is_init"]
    lstm = LSTMModule(F, H, in_keys=keys, out_keys=["y", ("next", "h"), ("next", "c")])
    assert lstm.in_keys == keys
    with pytest.raises(
        ValueError, match=r"optionally followed by 'is_init', got \['x', 'h', 'c', 'd'\]"
    ):
        LSTMModule(F, H, in_keys=["x", "h", "c", "d"], out_keys=["y", "h2", "c2"])


def test_a_loss_runs_its_recurrent_networks_on_sequences_as_torchrl():
    from rl_core.objectives import LossModule

    class FeatureLoss(LossModule):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, data):
            return self.net(data)

        def feature_loss(self, data):
            return self.net(data)["features"].pow(2).mean()

    step = _make(GRUModule)
    td = TensorDict(embed=torch.randn(2, 3, F), batch_size=[2, 3])
    expected = step.set_recurrent_mode(True)(td.clone())["features"]
    loss = FeatureLoss(step)
    torch.testing.assert_close(loss(td.clone())["features"], expected)
    torch.testing.assert_close(loss.feature_loss(td.clone()), expected.pow(2).mean())
    assert recurrent_mode() is None
    assert step(td[:, 0].clone())["features"].shape == (2, H)  # outside the loss: steps
