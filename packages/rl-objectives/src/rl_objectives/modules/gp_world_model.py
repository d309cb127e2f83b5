"""PILCO's probabilistic dynamics model: :class:`GPWorldModel`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from torch import Tensor, nn

from rl_core.keys import NestedKey
from rl_objectives.modules._gp_moments import (
    gp_factorize,
    gp_marginal_nll,
    gp_predict,
    moment_match,
)

__all__ = ["GPWorldModel"]

_DEFAULT_IN_KEYS: list[NestedKey] = [
    ("action", "mean"),
    ("action", "var"),
    ("action", "cross_covariance"),
    ("observation", "mean"),
    ("observation", "var"),
]
_DEFAULT_OUT_KEYS: list[NestedKey] = [
    ("next", "observation", "mean"),
    ("next", "observation", "var"),
]


class GPWorldModel(nn.Module):
    """Gaussian-process dynamics with moment-matched propagation of a Gaussian state (PILCO).

    From Deisenroth & Rasmussen, "PILCO: A Model-Based and Data-Efficient Approach to Policy
    Search" (ICML 2011). One GP per state dimension ``a`` predicts the change
    ``Delta_a = x_{t+1,a} - x_{t,a}`` from ``x~ = [x_t, u_t]``, with a squared-exponential ARD
    kernel whose length-scales ``ell`` ``[D, D+F]``, signal variances ``alpha_sq`` ``[D, 1]``
    and noise variances ``sigma_sq_eps`` ``[D]`` maximise the marginal likelihood
    (:meth:`fit`, L-BFGS on their logarithms, with PILCO's penalty on length-scales far beyond
    the data's spread and on signal-to-noise ratios above 1000, which keeps the Gram matrices
    well conditioned on deterministic data).

    :meth:`forward` reads a Gaussian belief over the state and the controller's Gaussian action
    (``in_keys``: action mean ``[*B, F]``, action covariance ``[*B, F, F]``, the
    state-action term ``Sigma_x^{-1} Cov[x, u]`` ``[*B, D, F]`` as
    :class:`~rl_objectives.modules.RBFController` returns it, state mean ``[*B, D]`` and state
    covariance ``[*B, D, D]``) and writes the next state's mean and covariance (``out_keys``).
    With all covariances zero it is the GP posterior at a point (:meth:`deterministic_forward`,
    a diagonal covariance of the posterior variances); otherwise the exact moments of the
    predictive distribution (:meth:`uncertain_forward`, the paper's Eqs. 10-23).
    Unbatched ``(D,)`` beliefs are accepted too.

    Args:
        obs_dim: ``D``, the state dimension.
        action_dim: ``F``, the action dimension.
        in_keys: the five keys read, in the order above. Defaults to
            ``[("action", "mean"), ("action", "var"), ("action", "cross_covariance"),
            ("observation", "mean"), ("observation", "var")]``.
        out_keys: the next state's mean and covariance. Defaults to
            ``[("next", "observation", "mean"), ("next", "observation", "var")]``.

    Keyword Args:
        fit_steps: L-BFGS iterations of :meth:`fit`. Defaults to 100.

    Raises:
        ValueError: a non-positive dimension or ``fit_steps``, or key lists of the wrong length.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> from rl_objectives.modules import GPWorldModel
        >>> _ = torch.manual_seed(0)
        >>> x, u = torch.randn(30, 2, dtype=torch.float64), torch.randn(30, 1, dtype=torch.float64)
        >>> data = TensorDict(observation=x, action=u, batch_size=[30])
        >>> data["next", "observation"] = x + 0.1 * u
        >>> model = GPWorldModel(obs_dim=2, action_dim=1, fit_steps=20)
        >>> model.fit(data)
        >>> belief = TensorDict(batch_size=[])
        >>> belief["observation", "mean"] = torch.zeros(2, dtype=torch.float64)
        >>> belief["observation", "var"] = 0.01 * torch.eye(2, dtype=torch.float64)
        >>> belief["action", "mean"] = torch.ones(1, dtype=torch.float64)
        >>> belief["action", "var"] = torch.zeros(1, 1, dtype=torch.float64)
        >>> belief["action", "cross_covariance"] = torch.zeros(2, 1, dtype=torch.float64)
        >>> out = model(belief)
        >>> out["next", "observation", "mean"].shape, out["next", "observation", "var"].shape
        (torch.Size([2]), torch.Size([2, 2]))
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        *,
        fit_steps: int = 100,
    ) -> None:
        super().__init__()
        for name, value in (
            ("obs_dim", obs_dim),
            ("action_dim", action_dim),
            ("fit_steps", fit_steps),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"GPWorldModel: expected {name} to be an integer >= 1, got {value!r}."
                )
        in_keys = list(_DEFAULT_IN_KEYS if in_keys is None else in_keys)
        out_keys = list(_DEFAULT_OUT_KEYS if out_keys is None else out_keys)
        if len(in_keys) != 5:
            raise ValueError(
                f"GPWorldModel: expected 5 in_keys (action mean, action covariance, state-action "
                f"cross-covariance, observation mean, observation covariance), got {in_keys!r}."
            )
        if len(out_keys) != 2:
            raise ValueError(
                f"GPWorldModel: expected 2 out_keys (next mean, next covariance), got {out_keys!r}."
            )
        self.obs_dim = obs_dim
        self.action_dim = action_dim
        self.state_action_dim = obs_dim + action_dim
        self.in_keys = in_keys
        self.out_keys = out_keys
        self.fit_steps = fit_steps
        self.register_buffer("X_tilde_train", torch.empty(0, self.state_action_dim))
        self.register_buffer("ell", torch.ones(obs_dim, self.state_action_dim))
        self.register_buffer("alpha_sq", torch.ones(obs_dim, 1))
        self.register_buffer("sigma_sq_eps", torch.ones(obs_dim))
        self.register_buffer("_cached_inv_K_noisy", torch.empty(obs_dim, 0, 0))
        self.register_buffer("_cached_beta", torch.empty(obs_dim, 0))

    @property
    def device(self) -> torch.device:
        """The device of the fitted data."""
        return self.ell.device

    @property
    def is_fitted(self) -> bool:
        """Whether :meth:`fit` has run."""
        return self.X_tilde_train.shape[0] > 0

    def fit(self, dataset: TensorDictBase) -> None:
        """Fits the GPs to transitions by maximising their marginal likelihood.

        Args:
            dataset: a flat TensorDict of ``n >= 2`` transitions with ``"observation"``
                ``[n, D]``, ``"action"`` ``[n, F]`` and ``("next", "observation")`` ``[n, D]``
                (reshape a ``[B, T]`` batch with ``dataset.reshape(-1)`` first). Computations
                use the observations' floating dtype (float64 is advised).

        Raises:
            KeyError: an entry is missing (named).
            ValueError: an entry of the wrong shape (named, with the expected shape).
        """
        x = self._entry(dataset, "observation", self.obs_dim)
        u = self._entry(dataset, "action", self.action_dim).to(x.dtype)
        x_next = self._entry(dataset, ("next", "observation"), self.obs_dim).to(x.dtype)
        if x.shape[0] != u.shape[0] or x.shape[0] != x_next.shape[0] or x.shape[0] < 2:
            raise ValueError(
                f"GPWorldModel.fit: expected at least 2 transitions with as many observations, "
                f"actions and next observations, got {x.shape[0]}, {u.shape[0]} and "
                f"{x_next.shape[0]}."
            )
        inputs = torch.cat([x, u], dim=-1).detach().to(self.device)
        targets = (x_next - x).detach().to(self.device).mT.contiguous()  # [D, n]
        log_ell, log_sf, log_sn = self._optimise(inputs, targets)
        with torch.no_grad():
            ell, sf2, sn2 = log_ell.exp(), (2 * log_sf).exp(), (2 * log_sn).exp()
            inv_k, beta = gp_factorize(inputs, targets, ell, sf2, sn2)
        self.X_tilde_train = inputs
        self.ell = ell
        self.alpha_sq = sf2.unsqueeze(-1)
        self.sigma_sq_eps = sn2
        self._cached_inv_K_noisy = inv_k
        self._cached_beta = beta

    def _entry(self, dataset: TensorDictBase, key: NestedKey, width: int) -> Tensor:
        value = dataset.get(key, None)
        if value is None:
            raise KeyError(f"GPWorldModel.fit: the dataset has no {key!r} entry.")
        if value.dim() != 2 or value.shape[-1] != width:
            raise ValueError(
                f"GPWorldModel.fit: expected {key!r} of shape (n, {width}), got "
                f"{tuple(value.shape)}. Flatten batched data with dataset.reshape(-1)."
            )
        return value if value.is_floating_point() else value.to(torch.get_default_dtype())

    def _optimise(self, inputs: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        spread = inputs.std(0).clamp_min(1e-3)  # [E]
        target_std = targets.std(-1).clamp_min(1e-6)  # [D]
        log_ell = spread.log().expand(self.obs_dim, -1).clone().requires_grad_(True)
        log_sf = target_std.log().clone().requires_grad_(True)
        log_sn = (target_std / 10).log().clone().requires_grad_(True)
        params = [log_ell, log_sf, log_sn]
        optim = torch.optim.LBFGS(params, max_iter=self.fit_steps, line_search_fn="strong_wolfe")
        n = inputs.shape[0]

        def closure() -> Tensor:
            optim.zero_grad()
            nll = gp_marginal_nll(
                inputs, targets, log_ell.exp(), (2 * log_sf).exp(), (2 * log_sn).exp()
            ).sum()
            # PILCO's curb: length-scales beyond 100 times the data's spread and
            # signal-to-noise ratios beyond 1000 are penalised steeply.
            curb = ((log_ell - spread.log()) / math.log(100)).pow(30).sum()
            curb = curb + ((log_sf - log_sn) / math.log(1000)).pow(30).sum()
            loss = (nll + curb) / n
            loss.backward()
            return loss

        optim.step(closure)
        return log_ell.detach(), log_sf.detach(), log_sn.detach()

    def compute_factorizations(self) -> tuple[Tensor, Tensor]:
        """``((K_a + sigma_a^2 I)^{-1}, beta_a)`` of every output: ``[D, n, n]`` and ``[D, n]``."""
        return self._cached_inv_K_noisy, self._cached_beta

    def _check_fitted(self, where: str) -> None:
        if not self.is_fitted:
            raise RuntimeError(
                f"GPWorldModel.{where}: the model is not fitted; call fit(dataset) first."
            )

    def _read(self, tensordict: TensorDictBase, index: int, shape: tuple[int, ...]) -> Tensor:
        key = self.in_keys[index]
        value = tensordict.get(key, None)
        if value is None:
            raise KeyError(f"GPWorldModel: the input has no {key!r} entry.")
        if tuple(value.shape[value.dim() - len(shape) :]) != shape:
            raise ValueError(
                f"GPWorldModel: expected {key!r} to end with shape {shape}, got "
                f"{tuple(value.shape)}."
            )
        return value

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The next state's belief: :meth:`uncertain_forward` if any input covariance is
        non-zero, else :meth:`deterministic_forward`. Returns ``tensordict``, updated.

        Raises:
            RuntimeError: the model is not fitted.
            KeyError: an input entry is missing.
            ValueError: an input entry has the wrong shape.
        """
        self._check_fitted("forward")
        d, f = self.obs_dim, self.action_dim
        covariances = (self._read(tensordict, 1, (f, f)), self._read(tensordict, 2, (d, f)))
        covariances += (self._read(tensordict, 4, (d, d)),)
        if any(bool((c != 0).any()) for c in covariances):
            return self.uncertain_forward(tensordict)
        return self.deterministic_forward(tensordict)

    def deterministic_forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """The GP posterior at the state and action means: ``x + m(x, u)`` and a diagonal
        covariance of the posterior variances (Eqs. 7-8)."""
        self._check_fitted("deterministic_forward")
        mu_x = self._read(tensordict, 3, (self.obs_dim,))
        mu_u = self._read(tensordict, 0, (self.action_dim,)).to(mu_x.dtype)
        batch = mu_x.shape[:-1]
        x_test = torch.cat([mu_x.reshape(-1, self.obs_dim), mu_u.reshape(-1, self.action_dim)], -1)
        inv_k, beta = self.compute_factorizations()
        mean, var = gp_predict(
            self.X_tilde_train, beta, inv_k, self.ell, self.alpha_sq.squeeze(-1), x_test
        )
        tensordict.set(self.out_keys[0], mu_x + mean.reshape(*batch, self.obs_dim))
        tensordict.set(
            self.out_keys[1], torch.diag_embed(var).reshape(*batch, self.obs_dim, self.obs_dim)
        )
        return tensordict

    def uncertain_forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Moment matching (Eqs. 10-23): with the joint belief ``x~ ~ N([mu_x, mu_u],
        [[S_x, S_x C], [C^T S_x, S_u]])`` (``C`` the cross-covariance entry), the next state
        has mean ``mu_x + E[Delta]`` and covariance
        ``S_x + Cov[Delta] + Cov[x, Delta] + Cov[Delta, x]``."""
        self._check_fitted("uncertain_forward")
        d, f = self.obs_dim, self.action_dim
        mu_x = self._read(tensordict, 3, (d,))
        batch = mu_x.shape[:-1]
        mu_x = mu_x.reshape(-1, d)
        s_x = self._read(tensordict, 4, (d, d)).reshape(-1, d, d)
        mu_u = self._read(tensordict, 0, (f,)).reshape(-1, f)
        s_u = self._read(tensordict, 1, (f, f)).reshape(-1, f, f)
        c_xu = self._read(tensordict, 2, (d, f)).reshape(-1, d, f)
        s_xu = s_x @ c_xu
        joint_mean = torch.cat([mu_x, mu_u], dim=-1)
        joint_cov = torch.cat(
            [torch.cat([s_x, s_xu], dim=-1), torch.cat([s_xu.mT, s_u], dim=-1)], dim=-2
        )
        inv_k, beta = self.compute_factorizations()
        m_delta, s_delta, io = moment_match(
            joint_mean, joint_cov, self.X_tilde_train, beta, self.ell,
            self.alpha_sq.squeeze(-1), inv_k,
        )  # fmt: skip
        c_x_delta = (joint_cov @ io)[:, :d]  # Cov[x, Delta]: [B, D, D]
        mean = mu_x + m_delta
        cov = s_x + s_delta + c_x_delta + c_x_delta.mT
        cov = 0.5 * (cov + cov.mT)
        tensordict.set(self.out_keys[0], mean.reshape(*batch, d))
        tensordict.set(self.out_keys[1], cov.reshape(*batch, d, d))
        return tensordict
