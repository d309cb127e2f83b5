import torch

from rl_buffers.storages import _memory
from rl_buffers.storages._memory import HUGE_PAGE, huge_page_span


def test_huge_page_span_is_the_aligned_inside():
    assert huge_page_span(HUGE_PAGE, 3 * HUGE_PAGE) == (HUGE_PAGE, 3 * HUGE_PAGE)
    assert huge_page_span(HUGE_PAGE + 64, 3 * HUGE_PAGE) == (2 * HUGE_PAGE, 2 * HUGE_PAGE)
    assert huge_page_span(64, 2 * HUGE_PAGE) is None  # one aligned huge page: not asked for
    assert huge_page_span(0, 0) is None


def test_zeros_asks_for_the_aligned_span_and_gives_zeros(monkeypatch):
    calls = []
    monkeypatch.setattr(_memory, "_madvise", lambda *args: calls.append(args) or 0)
    big = _memory.zeros((3_000_000, 2), torch.float32)  # 24 MB
    assert big.shape == (3_000_000, 2)
    assert big.dtype == torch.float32
    assert not big.any()
    ((address, length, advice),) = calls
    start, end = big.data_ptr(), big.data_ptr() + big.nbytes
    assert address % HUGE_PAGE == 0
    assert length % HUGE_PAGE == 0
    assert start <= address
    assert address + length <= end
    assert length >= end - start - 2 * HUGE_PAGE
    assert advice == 14
    calls.clear()
    small = _memory.zeros((10, 3), torch.int64)
    assert calls == []
    assert small.tolist() == [[0, 0, 0]] * 10
