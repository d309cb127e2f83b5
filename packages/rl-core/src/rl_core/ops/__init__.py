"""Hot ops declared with ``torch.library``: value estimates, prioritized-replay trees, row reads.

Each op lives in the ``rl_core`` namespace (``torch.ops.rl_core.<name>``) with a schema, a
pure-torch reference kernel, a fake kernel for ``torch.compile``/``torch.export``, and (value
ops) an autograd formula. The functions named below are thin wrappers that check their
arguments, move them to the kernel layout and call the op; the tree ops' wrappers sit beside
the prioritized samplers that use them, in ``rl_buffers.trees`` (rl-buffers):

=================================  =========================================================
op (``torch.ops.rl_core.*``)       public wrapper
=================================  =========================================================
``generalized_advantage_estimate`` :func:`generalized_advantage_estimate`
``td_lambda_return_estimate``      :func:`td_lambda_return_estimate`
``vtrace_advantage_estimate``      :func:`vtrace_advantage_estimate`
``sum_tree_update_``               ``rl_buffers.trees.sum_tree_update_``
``min_tree_update_``               ``rl_buffers.trees.min_tree_update_``
``sum_tree_find_prefixsum``        ``rl_buffers.trees.sum_tree_find_prefixsum``
``sum_min_tree_update_``           ``rl_buffers.trees.sum_min_tree_update_`` (both trees)
``sum_tree_sample``                ``rl_buffers.trees.sum_tree_sample`` (draws + weights)
``sum_min_tree_priority_update_``  ``rl_buffers.trees.sum_min_tree_priority_update_``
                                   (checks + powers + both trees, one call)
``gather_rows``                    :func:`gather_rows` (rows of several tables, one call)
=================================  =========================================================

:func:`td0_return_estimate` is elementwise and needs no op.

Kernel layout (the contract a compiled kernel implements; schemas in
``rl_core.ops._library.SCHEMAS``): value-op tensors are ``[T, N]`` with time first (any
strides: the wrappers pass views of the caller's tensors where they can, so time may be
the fast axis; outputs are shaped and strided like ``torch.empty_like(reward)``, as the
fake kernels say), floats in one dtype, ``done``/``terminated`` bool; trees are 1-D of size
``2 * capacity``. :mod:`rl_core.ops.reference` documents each kernel and is the oracle to
test a compiled kernel against (same arguments as the op).

How a kernel package overrides an op: the reference kernels are registered for the
``CompositeExplicitAutograd`` dispatch key, and the dispatcher prefers a kernel registered
for a backend key. A package such as ``rl-kernels`` therefore registers its kernels for the
``CPU`` and/or ``CUDA`` keys of the existing ops, without defining them again::

    // C++: the namespace must be "rl_core"; the op names and schemas come from rl_core.
    TORCH_LIBRARY_IMPL(rl_core, CPU, m) {
      m.impl("generalized_advantage_estimate", &gae_cpu);
    }

    # or Python: keep the Library object alive for as long as the kernel should be used
    _lib = torch.library.Library("rl_core", "IMPL")
    _lib.impl("generalized_advantage_estimate", gae_cpu, "CPU")

``import rl_core.ops`` must run first (it defines the schemas); the kernel package must not
register for ``Autograd``, ``CompositeImplicitAutograd`` or ``Meta``, so that the autograd
formulas and fake kernels here keep working on top of its kernels. A backend kernel replaces
the reference together with its checks, so it checks the layout itself (``TORCH_CHECK``)
and raises ``ValueError`` (``TORCH_CHECK_VALUE``) for leaf indices outside
``[0, capacity)``; a repeated leaf index must keep its last value. Callers change nothing:
every call through these wrappers or ``torch.ops.rl_core`` picks the backend kernel for
tensors on that backend and the reference kernel elsewhere.

The fused tree ops (``sum_min_tree_update_``, ``sum_tree_sample``,
``sum_min_tree_priority_update_``) are the exception to "reference registered for
``CompositeExplicitAutograd``": their default kernel calls the basic tree ops (the last
one: ``sum_min_tree_update_``) through the dispatcher, so on a backend where a package
registered only the basic ops the fused ops run those kernels; :mod:`rl_core.ops.reference` holds their pure
reference (the oracle) all the same, and a package may register fused kernels too.

How a kernel package is found: it declares an entry point in the group
``"rl_core.ops"`` (:data:`ENTRY_POINT_GROUP`), and the first call of any wrapper (here or in
``rl_buffers.trees``) runs
:func:`load_kernel_packages`, which imports it (see :mod:`rl_core.ops.kernel_packages`).
Nothing is loaded at ``import rl_core``. A kernel package that fails to load gives one
:class:`KernelLoadWarning` and the reference kernels stay in place. Code that calls
``torch.ops.rl_core.*`` directly and never a wrapper calls :func:`load_kernel_packages`
once itself.

Examples:
    >>> import torch
    >>> import rl_core.ops
    >>> reward = torch.ones(1, 4, 1)
    >>> value = torch.zeros(1, 4, 1)
    >>> done = torch.zeros(1, 4, 1, dtype=torch.bool)
    >>> adv, target = rl_core.ops.generalized_advantage_estimate(0.9, 0.95, value, value, reward, done)
    >>> adv.shape
    torch.Size([1, 4, 1])
"""

from __future__ import annotations

from rl_core.ops import reference
from rl_core.ops.advantage import (
    generalized_advantage_estimate,
    td0_return_estimate,
    td_lambda_return_estimate,
)
from rl_core.ops.gather import gather_rows
from rl_core.ops.kernel_packages import (
    ENTRY_POINT_GROUP,
    KernelLoadWarning,
    load_kernel_packages,
)
from rl_core.ops.vtrace import vtrace_advantage_estimate

__all__ = [
    # value estimates
    "generalized_advantage_estimate",
    "td_lambda_return_estimate",
    "td0_return_estimate",
    "vtrace_advantage_estimate",
    # replay reads
    "gather_rows",
    # the reference kernels (test oracle)
    "reference",
    # kernel packages (rl-kernels) found through entry points
    "ENTRY_POINT_GROUP",
    "KernelLoadWarning",
    "load_kernel_packages",
]
