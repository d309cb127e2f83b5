"""Pure tensor functions of PILCO's Gaussian-process algebra (Deisenroth & Rasmussen, 2011).

Notation of the paper: ``E = D + F`` inputs (state and action), ``D`` outputs, ``n`` training
points (or basis centres for the RBF controller). Each output ``a`` has a squared-exponential
ARD kernel ``k_a(x, x') = alpha_a^2 exp(-1/2 (x - x')^T Lambda_a^{-1} (x - x'))`` with
``Lambda_a = diag(lengthscales_a^2)``, weights ``beta_a = (K_a + sigma_a^2 I)^{-1} y_a``.

:func:`se_ard_kernel`, :func:`gp_marginal_nll` and :func:`gp_predict` are the ordinary GP
formulas; :func:`moment_match` is the exact mean and covariance of ``f(x)`` for a Gaussian
input ``x ~ N(mean, cov)`` (the paper's Eqs. 14-23), used both by
:class:`~rl_objectives.modules.GPWorldModel` (with ``inv_k``: a GP's posterior) and by
:class:`~rl_objectives.modules.RBFController` (without: a deterministic RBF network).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = ["se_ard_kernel", "gp_marginal_nll", "gp_factorize", "gp_predict", "moment_match"]


def se_ard_kernel(x1: Tensor, x2: Tensor, lengthscales: Tensor, signal_var: Tensor) -> Tensor:
    """The squared-exponential ARD kernel matrix.

    Args:
        x1: ``[*S, n, E]`` inputs.
        x2: ``[*S, m, E]`` inputs.
        lengthscales: ``[*S, E]`` length-scales (not squared).
        signal_var: ``[*S]`` signal variances ``alpha^2``.

    Returns:
        ``[*S, n, m]``: ``alpha^2 exp(-1/2 sum_e (x1_e - x2_e)^2 / l_e^2)``.
    """
    a = x1 / lengthscales.unsqueeze(-2)
    b = x2 / lengthscales.unsqueeze(-2)
    sq = (a.unsqueeze(-2) - b.unsqueeze(-3)).square().sum(-1)
    return signal_var[..., None, None] * torch.exp(-0.5 * sq)


def _noisy_gram(x: Tensor, lengthscales: Tensor, signal_var: Tensor, noise_var: Tensor) -> Tensor:
    eye = torch.eye(x.shape[-2], dtype=x.dtype, device=x.device)
    gram = se_ard_kernel(
        x.expand(*lengthscales.shape[:-1], *x.shape[-2:]), x, lengthscales, signal_var
    )
    return gram + (noise_var[..., None, None] + 1e-8) * eye


def gp_marginal_nll(
    x: Tensor, y: Tensor, lengthscales: Tensor, signal_var: Tensor, noise_var: Tensor
) -> Tensor:
    """The negative log marginal likelihood of independent GPs, one per output.

    ``-log p(y_a | X) = 1/2 y_a^T (K_a + sigma_a^2 I)^{-1} y_a + 1/2 log|K_a + sigma_a^2 I|
    + n/2 log(2 pi)`` for each output ``a``.

    Args:
        x: ``[n, E]`` training inputs (shared by the outputs).
        y: ``[D, n]`` training targets, one row per output.
        lengthscales: ``[D, E]``.
        signal_var: ``[D]``.
        noise_var: ``[D]``.

    Returns:
        ``[D]``: the negative log marginal likelihood of each output's GP.
    """
    chol = torch.linalg.cholesky(_noisy_gram(x, lengthscales, signal_var, noise_var))
    alpha = torch.cholesky_solve(y.unsqueeze(-1), chol).squeeze(-1)
    log_det = 2.0 * torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)
    n = x.shape[-2]
    return 0.5 * (y * alpha).sum(-1) + 0.5 * log_det + 0.5 * n * math.log(2 * math.pi)


def gp_factorize(
    x: Tensor, y: Tensor, lengthscales: Tensor, signal_var: Tensor, noise_var: Tensor
) -> tuple[Tensor, Tensor]:
    """``(inv_k, beta)``: ``(K_a + sigma_a^2 I)^{-1}`` ``[D, n, n]`` and
    ``beta_a = (K_a + sigma_a^2 I)^{-1} y_a`` ``[D, n]`` (shapes as :func:`gp_marginal_nll`)."""
    chol = torch.linalg.cholesky(_noisy_gram(x, lengthscales, signal_var, noise_var))
    eye = torch.eye(x.shape[-2], dtype=x.dtype, device=x.device).expand_as(chol)
    inv_k = torch.cholesky_solve(eye, chol)
    beta = torch.cholesky_solve(y.unsqueeze(-1), chol).squeeze(-1)
    return inv_k, beta


def gp_predict(
    x_train: Tensor,
    beta: Tensor,
    inv_k: Tensor,
    lengthscales: Tensor,
    signal_var: Tensor,
    x_test: Tensor,
) -> tuple[Tensor, Tensor]:
    """The GP posterior of the latent function at deterministic test inputs.

    ``m_a(x) = k_a(x, X) beta_a`` and ``var_a(x) = k_a(x, x) - k_a(x, X) inv_k_a k_a(X, x)``.

    Args:
        x_train: ``[n, E]``.
        beta: ``[D, n]``.
        inv_k: ``[D, n, n]``.
        lengthscales: ``[D, E]``.
        signal_var: ``[D]``.
        x_test: ``[B, E]``.

    Returns:
        ``(mean, var)``, each ``[B, D]``.
    """
    d = lengthscales.shape[0]
    k_star = se_ard_kernel(x_test.expand(d, *x_test.shape), x_train, lengthscales, signal_var)
    mean = (k_star * beta.unsqueeze(-2)).sum(-1)  # [D, B]
    var = signal_var.unsqueeze(-1) - ((k_star @ inv_k) * k_star).sum(-1)
    return mean.mT, var.clamp_min(0.0).mT


def moment_match(
    mean: Tensor,
    cov: Tensor,
    x_train: Tensor,
    beta: Tensor,
    lengthscales: Tensor,
    signal_var: Tensor,
    inv_k: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """Exact mean and covariance of ``f(x) = [beta_a^T k_a(X, x)]_a`` for ``x ~ N(mean, cov)``.

    With ``nu_i = x_i - mean``:

    - ``E[f_a] = beta_a^T q_a``, ``q_ai = alpha_a^2 |cov Lambda_a^{-1} + I|^{-1/2}
      exp(-1/2 nu_i^T (cov + Lambda_a)^{-1} nu_i)`` (Eqs. 14-16);
    - ``E[f_a f_b] = beta_a^T Q_ab beta_b``, ``Q_ab,ij = k_a(x_i, mean) k_b(x_j, mean)
      |R|^{-1/2} exp(1/2 z^T R^{-1} cov z)`` with ``R = cov (Lambda_a^{-1} + Lambda_b^{-1}) + I``
      and ``z = Lambda_a^{-1} nu_i + Lambda_b^{-1} nu_j`` (Eqs. 20-22);
    - with ``inv_k`` (a GP posterior, not a deterministic RBF network) the diagonal adds the
      expected posterior variance ``alpha_a^2 - tr(inv_k_a Q_aa)`` (Eq. 23).

    Args:
        mean: ``[B, E]`` input means.
        cov: ``[B, E, E]`` input covariances.
        x_train: ``[n, E]`` training inputs (the RBF centres).
        beta: ``[D, n]`` weights.
        lengthscales: ``[D, E]`` (not squared).
        signal_var: ``[D]``.
        inv_k: ``[D, n, n]`` inverse noisy Gram matrices, or ``None``.

    Returns:
        ``(f_mean, f_cov, io)``: ``[B, D]``, ``[B, D, D]`` and ``[B, E, D]``, where ``io`` is
        ``cov^{-1} Cov[x, f(x)]`` (the paper's input-output term, kept in this form so that
        chaining a squashing function is a product and no covariance is ever inverted).
    """
    dtype, device = mean.dtype, mean.device
    e = mean.shape[-1]
    eye = torch.eye(e, dtype=dtype, device=device)
    ell_sq = lengthscales.square()  # [D, E]
    inv_lam = 1.0 / ell_sq  # [D, E]
    nu = x_train.unsqueeze(0) - mean.unsqueeze(-2)  # [B, n, E]

    # mean: q_a, E[f_a]
    s = cov.unsqueeze(1) + torch.diag_embed(ell_sq).unsqueeze(0)  # [B, D, E, E]
    s_nu = torch.linalg.solve(s, nu.unsqueeze(1).mT).mT  # [B, D, n, E] = (cov + Lambda_a)^-1 nu
    quad = (nu.unsqueeze(1) * s_nu).sum(-1)  # [B, D, n]
    log_c = 0.5 * (torch.log(ell_sq).sum(-1) - torch.linalg.slogdet(s)[1])  # [B, D]
    q = signal_var[:, None] * torch.exp(log_c.unsqueeze(-1) - 0.5 * quad)  # [B, D, n]
    bq = beta * q  # [B, D, n]
    f_mean = bq.sum(-1)  # [B, D]
    io = torch.einsum("bdn,bdne->bed", bq, s_nu)  # [B, E, D]

    # second moments: Q_ab for every pair of outputs
    scaled = nu.unsqueeze(1) * inv_lam[None, :, None, :]  # [B, D, n, E] = Lambda_a^-1 nu
    log_k = torch.log(signal_var)[None, :, None] - 0.5 * (nu.unsqueeze(1) * scaled).sum(-1)
    pair = inv_lam[:, None, :] + inv_lam[None, :, :]  # [D, D, E]
    r = cov[:, None, None] * pair[None, :, :, None, :] + eye  # [B, D, D, E, E]
    m = torch.linalg.solve(r, cov[:, None, None].expand_as(r))  # R^-1 cov
    m = 0.5 * (m + m.mT)
    a_m = torch.einsum("bxne,bxyef->bxynf", scaled, m)  # [B, D, D, n, E]
    aa = (a_m * scaled.unsqueeze(2)).sum(-1)  # [B, D, D, n]
    b_m = torch.einsum("byne,bxyef->bxynf", scaled, m)
    bb = (b_m * scaled.unsqueeze(1)).sum(-1)  # [B, D, D, n]
    # log Q_ab,ij = row_i + col_j + z-cross term, with the 1/2 z^T R^-1 cov z expanded
    row = log_k[:, :, None, :] + 0.5 * aa - 0.5 * torch.linalg.slogdet(r)[1].unsqueeze(-1)
    col = log_k[:, None, :, :] + 0.5 * bb
    cross = a_m @ scaled.unsqueeze(1).mT  # [B, D, D, n, n]
    big_q = torch.exp(cross + row.unsqueeze(-1) + col.unsqueeze(-2))
    second = ((big_q @ beta[None, None, :, :, None]).squeeze(-1) * beta[None, :, None]).sum(-1)
    f_cov = second - f_mean.unsqueeze(-1) * f_mean.unsqueeze(-2)
    if inv_k is not None:
        d = beta.shape[0]
        diag_q = big_q[:, torch.arange(d), torch.arange(d)]  # [B, D, n, n]
        expected_var = signal_var - (inv_k.unsqueeze(0) * diag_q).sum((-1, -2))
        f_cov = f_cov + torch.diag_embed(expected_var)
    f_cov = 0.5 * (f_cov + f_cov.mT)
    return f_mean, f_cov, io
