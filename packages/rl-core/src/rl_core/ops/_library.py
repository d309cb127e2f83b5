"""The ``rl_core`` operator namespace: schemas, reference kernels, fake kernels, autograd.

Every op is defined here once. Its pure-torch reference kernel (:mod:`rl_core.ops.reference`)
is registered for the ``CompositeExplicitAutograd`` key, which serves every backend that has
no kernel of its own; a kernel registered for a backend key (``CPU``, ``CUDA``) takes
precedence on that backend. The fake kernels describe output shapes so that
``torch.compile`` and ``torch.export`` can trace the ops without running them. The value ops
also get an autograd formula (:mod:`rl_core.ops._autograd`) on the ``Autograd`` key, which
runs whatever kernel computed the forward pass.
"""

from __future__ import annotations

import torch
from torch import Tensor

from rl_core.ops import _autograd, reference

NAMESPACE = "rl_core"

SCHEMAS: dict[str, str] = {
    "generalized_advantage_estimate": (
        "(float gamma, float lmbda, Tensor state_value, Tensor next_state_value, Tensor reward, "
        "Tensor done, Tensor terminated) -> (Tensor, Tensor)"
    ),
    "td_lambda_return_estimate": (
        "(float gamma, float lmbda, Tensor next_state_value, Tensor reward, Tensor done, "
        "Tensor terminated) -> Tensor"
    ),
    "vtrace_advantage_estimate": (
        "(float gamma, float rho_thresh, float c_thresh, Tensor log_pi, Tensor log_mu, "
        "Tensor state_value, Tensor next_state_value, Tensor reward, Tensor done, "
        "Tensor terminated) -> (Tensor, Tensor)"
    ),
    "sum_tree_update_": "(Tensor(a!) tree, Tensor index, Tensor value) -> ()",
    "min_tree_update_": "(Tensor(a!) tree, Tensor index, Tensor value) -> ()",
    "sum_tree_find_prefixsum": "(Tensor tree, Tensor value) -> Tensor",
    "sum_min_tree_update_": (
        "(Tensor(a!) sum_tree, Tensor(b!) min_tree, Tensor index, Tensor value) -> ()"
    ),
    "sum_tree_sample": (
        "(Tensor sum_tree, Tensor min_tree, Tensor uniform, float beta) -> (Tensor, Tensor)"
    ),
    "sum_min_tree_priority_update_": (
        "(Tensor(a!) sum_tree, Tensor(b!) min_tree, Tensor(c!) max_value, Tensor index, "
        "Tensor priority, float eps, float alpha, int max_index) -> ()"
    ),
    "gather_rows": "(Tensor[] tables, Tensor index) -> Tensor[]",
}


def _check_value_layout(name: str, floats: dict[str, Tensor], masks: dict[str, Tensor]) -> None:
    """Checks the ``[T, N]`` kernel layout of a value op called through ``torch.ops``."""
    first_name, first = next(iter(floats.items()))
    torch._check(
        first.dim() == 2,
        lambda: (
            f"rl_core::{name}: expected {first_name} in the [T, N] layout (2-D), got shape "
            f"{tuple(first.shape)}."
        ),
    )
    for arg, tensor in {**floats, **masks}.items():
        torch._check(
            tensor.shape == first.shape,
            lambda arg=arg, tensor=tensor: (
                f"rl_core::{name}: expected {arg} of shape {tuple(first.shape)} like "
                f"{first_name}, got {tuple(tensor.shape)}."
            ),
        )
        torch._check(
            tensor.device == first.device,
            lambda arg=arg, tensor=tensor: (
                f"rl_core::{name}: expected {arg} on {first.device}, got {tensor.device}."
            ),
        )
    for arg, tensor in floats.items():
        torch._check(
            tensor.dtype == first.dtype and tensor.is_floating_point(),
            lambda arg=arg, tensor=tensor: (
                f"rl_core::{name}: expected {arg} of dtype {first.dtype}, got {tensor.dtype}."
            ),
        )
    for arg, tensor in masks.items():
        torch._check(
            tensor.dtype == torch.bool,
            lambda arg=arg, tensor=tensor: (
                f"rl_core::{name}: expected {arg} of dtype torch.bool, got {tensor.dtype}."
            ),
        )


def _gae_check(gamma, lmbda, state_value, next_state_value, reward, done, terminated):
    _check_value_layout(
        "generalized_advantage_estimate",
        {"state_value": state_value, "next_state_value": next_state_value, "reward": reward},
        {"done": done, "terminated": terminated},
    )


def _td_lambda_check(gamma, lmbda, next_state_value, reward, done, terminated):
    _check_value_layout(
        "td_lambda_return_estimate",
        {"next_state_value": next_state_value, "reward": reward},
        {"done": done, "terminated": terminated},
    )


def _vtrace_check(
    gamma,
    rho_thresh,
    c_thresh,
    log_pi,
    log_mu,
    state_value,
    next_state_value,
    reward,
    done,
    terminated,
):
    _check_value_layout(
        "vtrace_advantage_estimate",
        {
            "log_pi": log_pi,
            "log_mu": log_mu,
            "state_value": state_value,
            "next_state_value": next_state_value,
            "reward": reward,
        },
        {"done": done, "terminated": terminated},
    )


def _check_tree_layout(name: str, tree: Tensor, index: Tensor | None, value: Tensor) -> None:
    size = tree.shape[0] if tree.dim() == 1 else 0
    torch._check(
        tree.dim() == 1 and size >= 2 and (size & (size - 1)) == 0,
        lambda: (
            f"rl_core::{name}: expected a 1-D tree of size 2 * capacity (a power of two), "
            f"got shape {tuple(tree.shape)}."
        ),
    )
    torch._check(
        value.dim() == 1 and value.dtype == tree.dtype and value.device == tree.device,
        lambda: (
            f"rl_core::{name}: expected value 1-D {tree.dtype} on {tree.device}, got "
            f"shape {tuple(value.shape)} {value.dtype} on {value.device}."
        ),
    )
    if index is not None:
        torch._check(
            index.shape == value.shape
            and index.dtype == torch.int64
            and index.device == tree.device,
            lambda: (
                f"rl_core::{name}: expected index int64 of shape {tuple(value.shape)} on "
                f"{tree.device}, got {index.dtype} of shape {tuple(index.shape)} on {index.device}."
            ),
        )


def _sum_tree_update_check(tree, index, value):
    _check_tree_layout("sum_tree_update_", tree, index, value)


def _min_tree_update_check(tree, index, value):
    _check_tree_layout("min_tree_update_", tree, index, value)


def _sum_tree_find_prefixsum_check(tree, value):
    _check_tree_layout("sum_tree_find_prefixsum", tree, None, value)


def _check_tree_pair(name: str, sum_tree: Tensor, min_tree: Tensor) -> None:
    torch._check(
        min_tree.shape == sum_tree.shape
        and min_tree.dtype == sum_tree.dtype
        and min_tree.device == sum_tree.device,
        lambda: (
            f"rl_core::{name}: expected min_tree like sum_tree ({tuple(sum_tree.shape)} "
            f"{sum_tree.dtype} on {sum_tree.device}), got {tuple(min_tree.shape)} "
            f"{min_tree.dtype} on {min_tree.device}."
        ),
    )


def _sum_min_tree_update_check(sum_tree, min_tree, index, value):
    _check_tree_layout("sum_min_tree_update_", sum_tree, index, value)
    _check_tree_pair("sum_min_tree_update_", sum_tree, min_tree)


def _sum_tree_sample_check(sum_tree, min_tree, uniform, beta):
    _check_tree_layout("sum_tree_sample", sum_tree, None, uniform)
    _check_tree_pair("sum_tree_sample", sum_tree, min_tree)


def _sum_min_tree_priority_update_check(
    sum_tree, min_tree, max_value, index, priority, eps, alpha, max_index
):
    name = "sum_min_tree_priority_update_"
    _check_tree_layout(name, sum_tree, index, priority)
    _check_tree_pair(name, sum_tree, min_tree)
    torch._check(
        max_value.numel() == 1
        and max_value.dtype == sum_tree.dtype
        and max_value.device == sum_tree.device,
        lambda: (
            f"rl_core::{name}: expected max_value of one element, {sum_tree.dtype} on "
            f"{sum_tree.device} like sum_tree, got shape {tuple(max_value.shape)} "
            f"{max_value.dtype} on {max_value.device}."
        ),
    )
    torch._check(
        0 <= max_index <= sum_tree.shape[0] // 2,
        lambda: (
            f"rl_core::{name}: expected max_index in [0, {sum_tree.shape[0] // 2}] (the "
            f"capacity), got {max_index}."
        ),
    )


def _gather_rows_check(tables, index):
    torch._check(
        index.dim() == 1 and index.dtype == torch.int64,
        lambda: (
            f"rl_core::gather_rows: expected index 1-D int64, got {index.dtype} of shape "
            f"{tuple(index.shape)}."
        ),
    )
    for number, table in enumerate(tables):
        torch._check(
            table.dim() >= 1 and table.device == index.device,
            lambda number=number, table=table: (
                f"rl_core::gather_rows: expected tables[{number}] with at least 1 dim on "
                f"{index.device} like index, got shape {tuple(table.shape)} on {table.device}."
            ),
        )


def _rows_of_tables(tables, index) -> list[Tensor]:
    return [table.new_empty((index.shape[0], *table.shape[1:])) for table in tables]


# In every value schema, reward is the third argument from the end; outputs are shaped like it.
def _like_reward(*args: Tensor) -> Tensor:
    return torch.empty_like(args[-3])


def _two_like_reward(*args: Tensor) -> tuple[Tensor, Tensor]:
    return torch.empty_like(args[-3]), torch.empty_like(args[-3])


def _no_output(*args: Tensor) -> None:
    return None


def _leaf_indices_like_value(tree: Tensor, value: Tensor) -> Tensor:
    return torch.empty_like(value, dtype=torch.int64)


def _leaves_and_weights(sum_tree, min_tree, uniform, beta) -> tuple[Tensor, Tensor]:
    return torch.empty_like(uniform, dtype=torch.int64), torch.empty_like(uniform)


# The fused tree ops' kernels for backends without a fused kernel of their own: they call
# the basic ops, so a backend with kernels for those (rl-kernels' CUDA ones) runs them. On
# the CPU without a kernel package this is the pure-torch reference.
def _sum_min_tree_update_composite(sum_tree, min_tree, index, value):
    torch.ops.rl_core.sum_tree_update_.default(sum_tree, index, value)
    torch.ops.rl_core.min_tree_update_.default(min_tree, index, value)


def _sum_tree_sample_composite(sum_tree, min_tree, uniform, beta):
    index = torch.ops.rl_core.sum_tree_find_prefixsum.default(sum_tree, uniform * sum_tree[1])
    leaves = sum_tree[sum_tree.shape[0] // 2 :]
    return index, leaves.index_select(0, index).div_(min_tree[1]).pow_(-beta)


def _sum_min_tree_priority_update_composite(
    sum_tree, min_tree, max_value, index, priority, eps, alpha, max_index
):
    value = reference.checked_priority_values(
        "sum_min_tree_priority_update_", index, priority, eps, alpha, max_index
    )
    if value.numel():
        torch.maximum(max_value, value.max(), out=max_value)
    torch.ops.rl_core.sum_min_tree_update_.default(sum_tree, min_tree, index, value)


_COMPOSITES = {
    "sum_min_tree_priority_update_": _sum_min_tree_priority_update_composite,
    "sum_min_tree_update_": _sum_min_tree_update_composite,
    "sum_tree_sample": _sum_tree_sample_composite,
}


# name -> (layout check, fake kernel); the fake kernels only describe the outputs.
_CHECKS_AND_FAKES = {
    "generalized_advantage_estimate": (_gae_check, _two_like_reward),
    "td_lambda_return_estimate": (_td_lambda_check, _like_reward),
    "vtrace_advantage_estimate": (_vtrace_check, _two_like_reward),
    "sum_tree_update_": (_sum_tree_update_check, _no_output),
    "min_tree_update_": (_min_tree_update_check, _no_output),
    "sum_tree_find_prefixsum": (_sum_tree_find_prefixsum_check, _leaf_indices_like_value),
    "sum_min_tree_update_": (_sum_min_tree_update_check, _no_output),
    "sum_tree_sample": (_sum_tree_sample_check, _leaves_and_weights),
    "sum_min_tree_priority_update_": (_sum_min_tree_priority_update_check, _no_output),
    "gather_rows": (_gather_rows_check, _rows_of_tables),
}


def _checked(check, kernel):
    def run(*args):
        check(*args)
        return kernel(*args)

    run.__name__ = kernel.__name__
    return run


# The Library object owns the registrations: they live as long as this module does.
_LIB = torch.library.Library(NAMESPACE, "DEF")
for _name, _schema in SCHEMAS.items():
    _check, _fake = _CHECKS_AND_FAKES[_name]
    _LIB.define(_name + _schema)
    torch.library.impl(
        f"{NAMESPACE}::{_name}",
        "CompositeExplicitAutograd",
        _checked(_check, _COMPOSITES.get(_name) or getattr(reference, _name)),
        lib=_LIB,
    )
    torch.library.register_fake(f"{NAMESPACE}::{_name}", _checked(_check, _fake), lib=_LIB)

torch.library.register_autograd(
    f"{NAMESPACE}::generalized_advantage_estimate",
    _autograd.gae_backward,
    setup_context=_autograd.gae_setup_context,
    lib=_LIB,
)
torch.library.register_autograd(
    f"{NAMESPACE}::td_lambda_return_estimate",
    _autograd.td_lambda_backward,
    setup_context=_autograd.td_lambda_setup_context,
    lib=_LIB,
)
torch.library.register_autograd(
    f"{NAMESPACE}::vtrace_advantage_estimate",
    _autograd.vtrace_backward,
    setup_context=_autograd.vtrace_setup_context,
    lib=_LIB,
)
