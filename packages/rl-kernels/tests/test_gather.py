"""The CPU kernel of rl_core's gather_rows against the reference (index_select per table),
byte for byte, on every kind of table the kernel copies itself or hands to index_select."""

from __future__ import annotations

import pytest
import torch

import rl_kernels  # noqa: F401  (registers the kernels)
from rl_core.ops import reference


def test_gather_rows_is_registered_for_cpu():
    assert torch._C._dispatch_has_kernel_for_dispatch_key("rl_core::gather_rows", "CPU")


def _tables(rows, gen):
    complex_rows = torch.randn(rows, 2, generator=gen, dtype=torch.complex64)
    return [
        torch.randn(rows, 17, generator=gen),  # rows straddling cache lines
        torch.randn(rows, generator=gen, dtype=torch.float64),  # 1-D: one element per row
        torch.rand(rows, 1, generator=gen) < 0.5,  # bool
        torch.randint(-9, 9, (rows, 2, 3), generator=gen, dtype=torch.int8),
        torch.randn(rows, 4, generator=gen).to(torch.bfloat16),
        # rows that are blocks apart from one another: copied by the kernel
        torch.randn(rows, 41, generator=gen)[:, 3:20],  # a column slice of a wider table
        torch.randn(rows, 2, 9, generator=gen)[:, 1, 2:8].unflatten(1, (2, 3)),
        torch.randn(rows * 3, generator=gen)[::3],  # 1-D, every third element
        torch.randn(1, 5, generator=gen).expand(rows, 5),  # every row the same block
        torch.randn(rows, 6, generator=gen)[:, ::2],  # strided rows: index_select
        torch.randn(4, rows, generator=gen).t(),  # transposed: index_select
        complex_rows.conj(),  # conjugate view: index_select
        torch.empty(rows, 0),  # rows of no elements
    ]


@pytest.mark.parametrize(("rows", "count"), [(1, 1), (7, 3), (1000, 256), (50, 0), (3, 40)])
def test_matches_index_select(rows, count):
    gen = torch.Generator().manual_seed(rows * 7 + count)
    tables = _tables(rows, gen)
    index = torch.randint(0, rows, (count,), generator=gen)
    got = torch.ops.rl_core.gather_rows(tables, index)
    expected = reference.gather_rows(tables, index)
    assert len(got) == len(expected)
    for out, ref in zip(got, expected, strict=True):
        assert out.dtype == ref.dtype
        assert out.shape == ref.shape
        assert out.is_contiguous()
        assert out.is_conj() == ref.is_conj()
        assert torch.equal(out.resolve_conj(), ref.resolve_conj())


def test_rows_are_copies():
    table = torch.arange(12.0).reshape(6, 2)
    (rows,) = torch.ops.rl_core.gather_rows([table], torch.tensor([5, 0]))
    rows.zero_()
    assert table[5].tolist() == [10.0, 11.0]


def test_strided_index_and_no_tables():
    table = torch.arange(10.0).reshape(5, 2)
    index = torch.tensor([4, 9, 1, 9, 0, 9])[::2]
    (rows,) = torch.ops.rl_core.gather_rows([table], index)
    assert rows.tolist() == [[8.0, 9.0], [2.0, 3.0], [0.0, 1.0]]
    assert torch.ops.rl_core.gather_rows([], index) == []


def test_bad_input_is_refused():
    tables = [torch.zeros(4, 2), torch.zeros(3)]
    with pytest.raises(IndexError, match=r"rl_core::gather_rows: expected indices in \[0, 3\) "):
        torch.ops.rl_core.gather_rows(tables, torch.tensor([0, 3]))
    with pytest.raises(IndexError, match=r"got values in \[-1, 0\]"):
        torch.ops.rl_core.gather_rows(tables, torch.tensor([0, -1]))
    with pytest.raises(RuntimeError, match=r"expected index 1-D int64, got torch.int32"):
        torch.ops.rl_core.gather_rows(tables, torch.tensor([0], dtype=torch.int32))
    with pytest.raises(RuntimeError, match=r"expected tables\[1\] with at least 1 dim"):
        torch.ops.rl_core.gather_rows([tables[0], torch.tensor(1.0)], torch.tensor([0]))


def test_opcheck():
    gen = torch.Generator().manual_seed(3)
    tables = [t for t in _tables(20, gen) if not t.is_conj()]  # (opcheck clones conj views)
    torch.library.opcheck(
        torch.ops.rl_core.gather_rows.default, (tables, torch.randint(0, 20, (9,), generator=gen))
    )
