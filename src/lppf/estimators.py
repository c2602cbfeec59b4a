"""scikit-learn style estimators for locally private Poisson factorization.

>>> model = PoissonMF(n_components=25, method="private", random_state=0).fit(Y_noisy, alpha=0.5)
>>> model.mu_hat_, model.theta_, model.components_, model.y_hat_
>>> Theta_new = model.transform(Y_noisy_new)   # topics held fixed
>>> model.score(Y_noisy_new)                   # held-out log likelihood per cell

The estimators are scikit-learn estimators (``clone``, ``get_params``, ``Pipeline``,
``GridSearchCV``). ``__init__`` only stores its arguments; :meth:`fit` validates them and the
data with :mod:`lppf.validation` (raising :class:`lppf.io.InputError` with a one-line
message), runs the backend
(:mod:`lppf.mcmc` or :mod:`lppf.cavi`) and copies the :class:`lppf.results.FitResult` into
attributes ending in ``_``. :data:`DEFAULTS` holds every default, shared with ``lppf fit``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from lppf._numba import threads as numba_threads
from lppf.io import InputError, save_npz
from lppf.results import FitData, FitResult
from lppf.validation import check_params, factor_shapes, fit_data

DEFAULTS: dict[str, Any] = {
    "n_components": 10,
    "method": "private",
    "inference": "mcmc",
    "a0": 0.1,  # gamma prior shape
    "b0": 1.0,  # gamma prior rate
    "max_iter": 2000,  # MCMC: total iterations including burn-in; CAVI: maximum iterations
    "burnin": 1000,
    "thin": 20,
    "n_chains": 1,  # MCMC: independent chains, samples pooled
    "tol": 1e-5,  # CAVI: stop when the relative change of mu_hat drops below (0: never)
    "restarts": 1,  # CAVI: random restarts, best ELBO kept
    "random_state": None,  # int, None (a fresh seed) or a numpy Generator; see ``seed_``
    "threads": None,  # numba threads; None: numba's default
    "verbose": False,  # progress bar
    "alpha": None,  # noise level used when fit/transform/score get no ``alpha``
}


class _PoissonFactorization(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared machinery; subclasses set the model name and the factor shapes."""

    _model = ""
    _factors: tuple[str, ...] = ()

    def __init__(self, n_components: int = DEFAULTS["n_components"], *,
                 method: str = DEFAULTS["method"], inference: str = DEFAULTS["inference"],
                 a0: float = DEFAULTS["a0"], b0: float = DEFAULTS["b0"],
                 max_iter: int = DEFAULTS["max_iter"], burnin: int = DEFAULTS["burnin"],
                 thin: int = DEFAULTS["thin"], n_chains: int = DEFAULTS["n_chains"],
                 tol: float = DEFAULTS["tol"],
                 restarts: int = DEFAULTS["restarts"],
                 random_state: int | np.random.Generator | None = DEFAULTS["random_state"],
                 threads: int | None = DEFAULTS["threads"],
                 verbose: bool = DEFAULTS["verbose"], alpha: Any = DEFAULTS["alpha"]) -> None:
        self.n_components = n_components
        self.method = method
        self.inference = inference
        self.a0 = a0
        self.b0 = b0
        self.max_iter = max_iter
        self.burnin = burnin
        self.thin = thin
        self.n_chains = n_chains
        self.tol = tol
        self.restarts = restarts
        self.random_state = random_state
        self.threads = threads
        self.verbose = verbose
        self.alpha = alpha

    # -- validation (lppf.validation)
    def _check_params(self) -> None:
        check_params(method=self.method, inference=self.inference,
                     n_components=self.n_components, a0=self.a0, b0=self.b0,
                     max_iter=self.max_iter, burnin=self.burnin, thin=self.thin,
                     n_chains=self.n_chains, tol=self.tol,
                     restarts=self.restarts, random_state=self.random_state,
                     threads=self.threads)

    def _factor_shapes(self, shape: tuple[int, int]) -> dict[str, tuple[int, int]]:
        return factor_shapes(self._model, shape, self.n_components)

    def _check_data(self, Y: Any, alpha: Any, mask: Any, fix: dict | None,
                    model: str | None = None) -> FitData:
        n_saved = (max((int(self.max_iter) - int(self.burnin)) // int(self.thin), 1)
                   * int(self.n_chains) if self.inference == "mcmc" else 1)
        return fit_data(model or self._model, self.method, Y, alpha, mask, fix,
                        n_components=self.n_components, n_saved=n_saved)

    # -- fitting
    def fit(self, Y: Any, y: None = None, *, alpha: Any = None, mask: Any = None,
            fix: dict | None = None) -> _PoissonFactorization:
        """Fit to counts ``Y`` (privatized for private/naive methods, true for nonprivate).

        y : ignored (scikit-learn's signature).
        alpha : noise level in [0, 1): scalar, one per row or one per cell (required for
            private methods; ignored by nonprivate); None: the ``alpha`` parameter.
        mask : bool, True = held out. fix : factors held at given values, e.g.
            ``{"phi": Phi_KV}``.
        """
        self._check_params()
        data = self._check_data(Y, self._alpha(alpha), mask, fix)
        validate_data(self, Y, reset=True, skip_check_array=True)
        self.seed_ = self._draw_seed()
        rng = np.random.default_rng(self.seed_)
        start = time.perf_counter()
        with numba_threads(self.threads) as n_threads:
            self.threads_ = n_threads
            result = self._run(data, rng)
        self._store(result, time.perf_counter() - start)
        return self

    def _alpha(self, alpha: Any) -> Any:
        return self.alpha if alpha is None else alpha

    def _draw_seed(self) -> int:
        """The seed of this fit: ``random_state`` itself, or drawn from it (a Generator) or
        from the operating system (None)."""
        if self.random_state is None:
            return int(np.random.SeedSequence().generate_state(1)[0])
        if isinstance(self.random_state, np.random.Generator):
            return int(self.random_state.integers(2**32))
        return int(self.random_state)

    def _run(self, data: FitData, rng: np.random.Generator, model: str | None = None,
             ) -> FitResult:
        common = {"method": self.method, "n_components": int(self.n_components),
                  "a0": float(self.a0), "b0": float(self.b0), "rng": rng,
                  "threads": self.threads, "progress": bool(self.verbose)}
        model = model or self._model
        if self.inference == "mcmc":
            from lppf.mcmc import fit_mcmc

            return fit_mcmc(model, data, n_iter=int(self.max_iter),
                            burnin=int(self.burnin), thin=int(self.thin),
                            n_chains=int(self.n_chains), **common)
        from lppf.cavi import fit_cavi

        return fit_cavi(model, data, max_iter=int(self.max_iter), tol=float(self.tol),
                        restarts=int(self.restarts), **common)

    def _store(self, result: FitResult, total: float) -> None:
        self.result_ = result
        self.mu_hat_ = result.mu_hat
        for name in self._factors:
            setattr(self, f"{name}_", result.factors.get(name))
        self.y_hat_ = result.y_hat
        self.samples_ = result.samples
        self.log_joint_ = result.log_joint
        self.trace_ = result.trace
        self.variational_ = result.variational
        self.elapsed_ = {**result.elapsed, "total": total}
        self.n_iter_ = result.n_iter
        self.components_ = self._components()

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "result_")

    def __sklearn_tags__(self):
        """Counts: integers (``categorical``, so scikit-learn's common checks draw integer
        data), sparse accepted, non-negative only for ``nonprivate`` (privatized counts can
        be negative)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = self.method == "nonprivate"
        tags.non_deterministic = self.random_state is None
        return tags

    @property
    def _n_features_out(self) -> int:
        return self.components_.shape[0]

    # -- new rows: transform and score
    def _components(self) -> np.ndarray:
        raise NotImplementedError

    def _check_new(self, Y: Any, alpha: Any, mask: Any = None) -> FitData:
        """Validate new rows against the fit: (n_new, n_features_in_) counts."""
        check_is_fitted(self)
        data = self._check_data(Y, self._alpha(alpha), mask, None, model="pmf")
        try:
            validate_data(self, Y, reset=False, skip_check_array=True)
        except ValueError as exc:
            raise InputError(f"Y: {exc}", "Y") from None
        return data

    def _fold_in(self, data: FitData) -> FitResult:
        """Rows of ``data`` fitted as Poisson factorization with ``phi = components_`` held
        fixed (the same method, inference and settings as the fit); a fixed seed derived
        from ``seed_``, so repeated calls agree."""
        data = FitData(data.Y, data.alpha, data.mask, {"phi": self.components_})
        rng = np.random.default_rng((self.seed_, 1))
        with numba_threads(self.threads):
            return self._run(data, rng, model="pmf")

    def transform(self, Y: Any, alpha: Any = None) -> np.ndarray:
        """Posterior means of the row factors, (n_new, K), of new (privatized) rows ``Y``
        (n_new, n_features_in_) with ``components_`` held fixed: ``Y ~ theta @ components_``.

        alpha : as in :meth:`fit`; None: the ``alpha`` parameter.
        """
        return self._fold_in(self._check_new(Y, alpha)).factors["theta"]

    def fit_transform(self, Y: Any, y: None = None, **fit_params: Any) -> np.ndarray:
        """:meth:`fit`, then the fitted row factors ``theta_``."""
        return self.fit(Y, y, **fit_params).theta_

    def score(self, Y: Any, y: None = None, alpha: Any = None) -> float:
        """Held-out log likelihood of new (privatized) rows ``Y`` per cell; higher is better.

        Document completion: the row factors are inferred (:meth:`transform`) from the
        cells with even ``row + column`` and the other cells are scored by
        ``mean log p(y~ | mu)``, ``mu = theta @ components_``, under the geometric mechanism
        with noise level ``alpha`` (:func:`lppf.likelihood.privatized_logpmf`; Poisson for
        ``nonprivate``). alpha : as in :meth:`fit`; None: the ``alpha`` parameter.
        """
        from lppf.likelihood import privatized_logpmf

        data = self._check_new(Y, alpha)
        held = np.add.outer(np.arange(data.Y.shape[0]), np.arange(data.Y.shape[1])) % 2 == 1
        if not held.any():  # a single cell: nothing left to infer from, score it in sample
            held = ~held
        fold = self._fold_in(FitData(data.Y, data.alpha, held, {}))
        alpha_DV = np.broadcast_to(data.alpha, data.Y.shape)
        return float(np.mean(privatized_logpmf(data.Y[held], fold.mu_hat[held],
                                               alpha_DV[held])))

    # -- output
    def config(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Every setting of the fit (JSON-serializable)."""
        params = self.get_params()
        for name in ("verbose", "random_state", "alpha"):
            params.pop(name)
        seed = self.random_state if isinstance(self.random_state, int | None) else None
        return {"model": self._model, **params, "seed": getattr(self, "seed_", seed),
                "numba_threads": getattr(self, "threads_", None),
                "input": None if input_path is None else str(input_path)}

    def to_arrays(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The fit as the arrays of the ``.npz`` layout (see README.md, "Output .npz")."""
        if not hasattr(self, "result_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit first")
        r = self.result_
        out: dict[str, Any] = {"mu_hat": r.mu_hat, **r.factors}
        if r.y_hat is not None:
            out["y_hat"] = r.y_hat
        out.update({f"{k}_samples": v for k, v in r.samples.items()})
        if r.log_joint is not None:
            out["log_joint"] = r.log_joint
        out.update({f"trace_{k}": v for k, v in r.trace.items()})
        out.update({f"q_{k}": v for k, v in r.variational.items()})
        out["elapsed_seconds"] = np.float64(self.elapsed_["total"])
        out.update({f"elapsed_{k}": np.float64(v) for k, v in r.elapsed.items()
                    if k != "total"})
        out.update({f"extra_{k}": np.asarray(v) for k, v in r.extra.items()})
        out.update({f"diag_{k}": np.asarray(v) for k, v in r.diagnostics.items()})
        out["iterations"] = np.int64(r.n_iter)
        out["seed"] = np.int64(self.seed_)
        out["config"] = np.array(json.dumps(self.config(input_path), sort_keys=True))
        return out

    def to_inference_data(self):
        """The MCMC samples as an ``arviz.InferenceData``: posterior factors and mu at the
        diagnosed cells (chain, draw, ...), the post-burn-in log likelihood in
        ``sample_stats`` (:func:`lppf.diagnostics.to_inference_data`)."""
        if not hasattr(self, "result_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit first")
        r = self.result_
        if not r.diagnostics:
            raise ValueError("to_inference_data needs an MCMC fit (inference='mcmc')")
        from lppf.diagnostics import to_inference_data

        n_chains = int(r.extra["n_chains"])
        loglik = np.reshape(r.trace["loglik"], (n_chains, -1))[:, int(self.burnin):]
        return to_inference_data(r.samples, loglik, r.diagnostics["mu_cells"], n_chains)

    def save(self, path: str | os.PathLike[str], *,
             input_path: str | os.PathLike[str] | None = None) -> None:
        """Write the fit ``.npz`` atomically."""
        save_npz(path, **self.to_arrays(input_path))


class PoissonMF(_PoissonFactorization):
    """Poisson matrix factorization (topics): ``Y`` (D, V), ``mu = Theta_DK @ Phi_KV``.

    Fitted: ``mu_hat_``, ``theta_`` (D, K), ``phi_`` (K, V), ``components_`` (= ``phi_``),
    ``y_hat_``, ``samples_``, ``log_joint_``, ``trace_``, ``variational_``, ``elapsed_``,
    ``n_iter_`` (iterations run), ``n_features_in_`` (V), ``result_``, ``seed_`` (the seed
    used), ``threads_`` (numba threads used). :meth:`transform` infers theta of new
    documents given phi.
    """

    _model = "pmf"
    _factors = ("theta", "phi")

    def _components(self) -> np.ndarray:
        return self.phi_


class CommunityModel(_PoissonFactorization):
    """Overlapping community model (networks): ``Y`` (V, V),
    ``mu_ij = sum_cd theta_ic theta_jd pi_cd``; the diagonal is always held out.

    Fitted as :class:`PoissonMF`, with ``theta_`` (V, C) and ``pi_`` (C, C), and
    ``components_ = E[Pi_CC @ Theta_VC.T]`` (C, V): the rate from community c to each fitted
    actor (the posterior mean over the saved samples for MCMC, the product of the means for
    CAVI). New actors' outgoing counts to the V fitted actors, ``Y_new`` (n_new, V), have
    ``mu_ij = sum_cd theta_ic pi_cd theta_jd = (Theta_new @ components_)_ij``: a Poisson
    factorization with ``phi = components_`` held fixed, which :meth:`transform` and
    :meth:`score` fit (their incoming counts are not used).
    """

    _model = "community"
    _factors = ("theta", "pi")

    def __sklearn_tags__(self):
        """``pairwise``: cross-validation splits actors, fitting on Y[train][:, train] and
        scoring the held-out actors' rows to the fitted ones, Y[test][:, train]."""
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = True
        return tags

    def _components(self) -> np.ndarray:
        if "pi" in self.samples_ and "theta" in self.samples_:
            Theta_SVC, Pi_SCC = self.samples_["theta"], self.samples_["pi"]
            return np.mean(Pi_SCC @ Theta_SVC.transpose(0, 2, 1), axis=0)
        return self.pi_ @ self.theta_.T


__all__ = ["DEFAULTS", "CommunityModel", "PoissonMF"]
