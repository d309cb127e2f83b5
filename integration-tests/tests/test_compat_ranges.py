"""Every sibling declares the rl-core range it supports, and the installed rl-core is inside it."""

import pytest

from rl_core.compat import check_rl_core, declared_range

SIBLINGS = ("rl-envs", "rl-buffers", "rl-collectors", "rl-objectives", "rl-llm", "rl-kernels")


@pytest.mark.parametrize("dist", SIBLINGS)
def test_sibling_declares_an_rl_core_range_that_holds(dist):
    assert declared_range(dist, "rl-core") is not None, f"{dist} declares no rl-core range"
    check_rl_core(dist)
