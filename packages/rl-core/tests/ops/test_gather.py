"""rl_core.ops.gather_rows: the public wrapper, on whichever CPU kernel is registered."""

from __future__ import annotations

import pytest
import torch

from rl_core import ops
from rl_core.ops import reference


def test_rows_of_every_table_as_index_select():
    gen = torch.Generator().manual_seed(0)
    tables = [
        torch.randn(30, 5, generator=gen),
        torch.rand(30, 1, generator=gen) < 0.5,
        torch.randint(0, 9, (30,), generator=gen),
        torch.randn(30, 4, generator=gen, dtype=torch.float64)[:, 1:],
    ]
    index = torch.randint(0, 30, (64,), generator=gen)
    rows = ops.gather_rows(tables, index)
    for got, table in zip(rows, tables, strict=True):
        assert torch.equal(got, table.index_select(0, index))
    assert [r.shape for r in rows] == [r.shape for r in reference.gather_rows(tables, index)]


def test_integer_index_of_another_dtype_and_tuple_of_tables():
    table = torch.arange(6.0).reshape(3, 2)
    (rows,) = ops.gather_rows((table,), torch.tensor([2, 0], dtype=torch.int32))
    assert rows.tolist() == [[4.0, 5.0], [0.0, 1.0]]


def test_bad_input_is_refused():
    table = torch.zeros(4, 2)
    with pytest.raises(
        TypeError, match=r"gather_rows: expected index to be an integer tensor, got"
    ):
        ops.gather_rows([table], torch.tensor([0.0]))
    with pytest.raises(TypeError, match=r"expected index to be an integer tensor, got list"):
        ops.gather_rows([table], [0])
    with pytest.raises(ValueError, match=r"expected index to be 1-D, got shape \(1, 2\)"):
        ops.gather_rows([table], torch.tensor([[0, 1]]))
    with pytest.raises(TypeError, match=r"expected tables\[1\] to be a tensor, got ndarray"):
        ops.gather_rows([table, table.numpy()], torch.tensor([0]))
    with pytest.raises(ValueError, match=r"expected tables\[0\] with at least 1 dim on cpu"):
        ops.gather_rows([torch.tensor(1.0)], torch.tensor([0]))
    with pytest.raises(IndexError):
        ops.gather_rows([table], torch.tensor([4]))
