"""PILCO's policy: :class:`RBFController`, a radial-basis-function network with analytic
moments for a Gaussian input."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from rl_objectives.modules._gp_moments import moment_match

__all__ = ["RBFController"]


class RBFController(nn.Module):
    """A radial-basis-function policy that maps a Gaussian state to a Gaussian action.

    The deterministic policy is ``pi(x) = max_action * sin(sum_i w_i phi_i(x))`` with
    ``phi_i(x) = exp(-1/2 (x - c_i)^T Lambda^{-1} (x - c_i))``, ``Lambda = diag(lengthscales^2)``
    (Deisenroth & Rasmussen 2011, Sec. 3.1). For ``x ~ N(mean, covariance)`` the pre-squash
    moments are exact (the RBF network is the mean of a GP with unit signal variance,
    :func:`~rl_objectives.modules._gp_moments.moment_match`) and the sine squashing's are too
    (:meth:`squash_sin`); so a whole rollout of beliefs is differentiable in closed form.

    Args:
        input_dim: ``D``, the state dimension.
        output_dim: ``F``, the action dimension.
        max_action: the action bound (a number, or ``F`` per-dimension bounds); ``None``
            leaves the RBF output unsquashed.
        n_basis: number of basis functions. Defaults to 10.

    Attributes:
        centers: ``[n_basis, D]`` parameter, drawn from ``N(0, 0.5^2)``.
        weights: ``[n_basis, F]`` parameter, drawn from ``N(0, 0.1^2)``.
        lengthscales: ``[D]`` parameter, starting at ones.

    Raises:
        ValueError: a non-positive dimension or ``n_basis``, or a non-positive ``max_action``.

    Examples:
        >>> import torch
        >>> from rl_objectives.modules import RBFController
        >>> policy = RBFController(input_dim=3, output_dim=1, max_action=2.0, n_basis=5)
        >>> mean, cov = torch.zeros(4, 3), 0.1 * torch.eye(3).expand(4, 3, 3)
        >>> a_mean, a_cov, cross = policy(mean, cov)
        >>> a_mean.shape, a_cov.shape, cross.shape
        (torch.Size([4, 1]), torch.Size([4, 1, 1]), torch.Size([4, 3, 1]))
    """

    def __init__(
        self,
        input_dim: int,
        output_dim: int,
        max_action: float | Tensor | None,
        n_basis: int = 10,
    ) -> None:
        super().__init__()
        for name, value in (
            ("input_dim", input_dim),
            ("output_dim", output_dim),
            ("n_basis", n_basis),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"RBFController: expected {name} to be an integer >= 1, got {value!r}."
                )
        if max_action is not None:
            bound = torch.as_tensor(max_action, dtype=torch.get_default_dtype()).reshape(-1)
            if bound.numel() not in (1, output_dim) or not bool((bound > 0).all()):
                raise ValueError(
                    f"RBFController: expected max_action to be a positive number or {output_dim} "
                    f"positive bounds, got {max_action!r}."
                )
            self.register_buffer("_bound", bound.expand(output_dim).clone())
        else:
            self._bound = None
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.max_action = max_action
        self.n_basis = n_basis
        self.centers = nn.Parameter(torch.randn(n_basis, input_dim) * 0.5)
        self.weights = nn.Parameter(torch.randn(n_basis, output_dim) * 0.1)
        self.lengthscales = nn.Parameter(torch.ones(input_dim))
        self.variance = 1.0

    @staticmethod
    def squash_sin(
        mean: Tensor, covariance: Tensor, max_action: float | Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Exact moments of ``y = max_action * sin(x)`` (elementwise) for ``x ~ N(mean, covariance)``.

        ``E[sin x_i] = exp(-S_ii / 2) sin(m_i)``;
        ``E[sin x_i sin x_j] = 1/2 (exp(-(S_ii + S_jj - 2 S_ij) / 2) cos(m_i - m_j)
        - exp(-(S_ii + S_jj + 2 S_ij) / 2) cos(m_i + m_j))``; and ``S^{-1} Cov[x, y]`` is
        ``diag(max_action * exp(-S_ii / 2) cos(m_i))``.

        Args:
            mean: ``[*B, K]``.
            covariance: ``[*B, K, K]``.
            max_action: a number or ``K`` bounds.

        Returns:
            ``(mean, covariance, cross)``: ``[*B, K]``, ``[*B, K, K]`` and ``[*B, K, K]``.
        """
        bound = torch.as_tensor(max_action, dtype=mean.dtype, device=mean.device)
        bound = bound.reshape(-1).expand(mean.shape[-1])
        var = torch.diagonal(covariance, dim1=-2, dim2=-1)
        damp = torch.exp(-0.5 * var)
        out_mean = bound * damp * torch.sin(mean)
        vsum = var.unsqueeze(-1) + var.unsqueeze(-2)
        diff = mean.unsqueeze(-1) - mean.unsqueeze(-2)
        add = mean.unsqueeze(-1) + mean.unsqueeze(-2)
        second = 0.5 * (
            torch.exp(-0.5 * (vsum - 2 * covariance)) * torch.cos(diff)
            - torch.exp(-0.5 * (vsum + 2 * covariance)) * torch.cos(add)
        )
        outer = bound.unsqueeze(-1) * bound.unsqueeze(-2)
        out_cov = outer * second - out_mean.unsqueeze(-1) * out_mean.unsqueeze(-2)
        cross = torch.diag_embed(bound * damp * torch.cos(mean))
        return out_mean, 0.5 * (out_cov + out_cov.mT), cross

    def forward(self, mean: Tensor, covariance: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The action's mean ``[*B, F]``, covariance ``[*B, F, F]`` and
        ``covariance^{-1} Cov[x, u]`` ``[*B, D, F]`` for a state ``N(mean, covariance)``
        (``mean`` ``[*B, D]``, ``covariance`` ``[*B, D, D]``; a zero covariance gives the
        deterministic action).

        Raises:
            ValueError: ``mean`` or ``covariance`` do not end with ``(D,)`` / ``(D, D)``.
        """
        d = self.input_dim
        if mean.shape[-1:] != (d,) or covariance.shape[-2:] != (d, d):
            raise ValueError(
                f"RBFController: expected mean of shape (*B, {d}) and covariance of shape "
                f"(*B, {d}, {d}), got {tuple(mean.shape)} and {tuple(covariance.shape)}."
            )
        batch = mean.shape[:-1]
        mean_flat = mean.reshape(-1, d).to(self.centers.dtype)
        cov_flat = covariance.reshape(-1, d, d).to(self.centers.dtype)
        f = self.output_dim
        signal = torch.full((f,), self.variance, dtype=mean_flat.dtype, device=mean_flat.device)
        a_mean, a_cov, io = moment_match(
            mean_flat, cov_flat, self.centers, self.weights.mT,
            self.lengthscales.expand(f, d), signal,
        )  # fmt: skip
        a_cov = a_cov + 1e-6 * torch.eye(f, dtype=a_cov.dtype, device=a_cov.device)
        if self._bound is not None:
            a_mean, a_cov, squash = self.squash_sin(a_mean, a_cov, self._bound.to(a_mean.dtype))
            io = io @ squash
        return (
            a_mean.reshape(*batch, f),
            a_cov.reshape(*batch, f, f),
            io.reshape(*batch, d, f),
        )
