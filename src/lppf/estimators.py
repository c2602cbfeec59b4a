"""scikit-learn style estimators for locally private Poisson factorization.

>>> model = PoissonMF(n_components=25, method="private", random_state=0).fit(Y_noisy, alpha=0.5)
>>> model.mu_hat_, model.theta_, model.components_, model.y_hat_
>>> Theta_new = model.transform(Y_noisy_new)   # topics held fixed
>>> model.score(Y_noisy_new)                   # held-out log likelihood per cell

The estimators are scikit-learn estimators (``clone``, ``get_params``, ``Pipeline``,
``GridSearchCV``). ``__init__`` only stores its arguments; :meth:`fit` validates them and the
data with :mod:`lppf.validation` (raising :class:`lppf.validation.InputError` with a one-line
message), runs the backend
(:mod:`lppf.mcmc` or :mod:`lppf.cavi`) and copies the :class:`lppf.results.FitResult` into
attributes ending in ``_``. The fit itself is :mod:`lppf.fitting`, which ``lppf fit`` calls
without scikit-learn; :data:`DEFAULTS` (from there) holds every default.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from lppf import fitting
from lppf._numba import threads as numba_threads
from lppf.fitting import DEFAULTS
from lppf.results import FitResult
from lppf.validation import (
    INFERENCES,
    MECHANISMS,
    METHODS,
    SAMPLERS,
    FitData,
    InputError,
    factor_shapes,
)

# numpydoc of the estimators' parameters; the defaults are read from DEFAULTS
_PARAMETERS = f"""
    Parameters
    ----------
    n_components : int, default={DEFAULTS['n_components']}
        Components: topics K (PoissonMF) or communities C (CommunityModel).
    method : str, default={DEFAULTS['method']!r}
        One of {", ".join(METHODS)}. ``private*`` treat the true counts as latent given
        the privatized ones (two samplers of them); ``naive`` fits ``max(y~, 0)`` as if
        true; ``nonprivate`` fits true counts.
    inference : str, default={DEFAULTS['inference']!r}
        One of {", ".join(INFERENCES)}: MCMC (Gibbs sampling; HMC for the fixed counts of
        the community model) or coordinate-ascent variational inference.
    a0, b0 : float, default={DEFAULTS['a0']}, {DEFAULTS['b0']}
        Shape and rate of the gamma prior on every factor.
    max_iter : int, default={DEFAULTS['max_iter']}
        MCMC: iterations per chain including burn-in; CAVI: the most iterations.
    burnin, thin : int, default={DEFAULTS['burnin']}, {DEFAULTS['thin']}
        MCMC: iterations discarded, then every ``thin``-th one kept.
    n_chains : int, default={DEFAULTS['n_chains']}
        MCMC: independent chains, their samples pooled.
    extend : int, default={DEFAULTS['extend']}
        MCMC: while the chains (at least 4) miss the convergence criterion, up to this many
        times, run them on for twice the last sampling window with twice the thinning (the
        same number of samples), all sweeps before counted as burn-in.
    sampler : str, default={DEFAULTS['sampler']!r}
        MCMC of the community model's fixed counts (``naive``, ``nonprivate``, free
        factors), one of {", ".join(SAMPLERS)}: HMC with the allocation summed out, or the
        Gibbs sweep; ``auto`` takes HMC under ``a0 >= 1``. A ``private-collapsed``
        fit: ``auto`` adds Langevin moves of the factors with the true counts summed out
        when the noise hides most of the counts, ``gibbs`` never. Every other fit is Gibbs.
    tol : float, default={DEFAULTS['tol']:g}
        CAVI: stop when the relative change of ``mu_hat`` drops below it (0: never).
    restarts : int, default={DEFAULTS['restarts']}
        CAVI: random starts, the best final objective kept.
    random_state : int, numpy.random.Generator or None, default=None
        The seed, a generator to draw it from, or None for a fresh one (see ``seed_``).
    threads : int or None, default=None
        numba threads (None: numba's default); results do not depend on it.
    verbose : bool, default=False
        Show a progress bar.
    alpha : float or array or None, default=None
        Noise level used when :meth:`fit`, :meth:`transform` or :meth:`score` get none.
    mechanism : str, default={DEFAULTS['mechanism']!r}
        The noise of the data, one of {", ".join(MECHANISMS)}; ``alpha`` is then its
        parameter (alpha, the discrete Gaussian's sigma or the Skellam mu). ``private``
        needs the geometric mechanism.
"""

_ATTRIBUTES = """
    Attributes
    ----------
    mu_hat_ : ndarray of shape (n_rows, n_cols)
        Posterior mean (MCMC) or variational mean (CAVI) of the rates, every cell.
    {factors}
    components_ : ndarray of shape (n_components, n_cols)
        {components}
    y_hat_ : ndarray of shape (n_rows, n_cols) or None
        Posterior mean of the true counts (private methods).
    samples_ : dict of str to ndarray
        Thinned factor samples, leading axis S (MCMC; chains pooled).
    log_joint_ : ndarray of shape (S,) or None
        Log joint probability of each saved sample (MCMC).
    trace_, variational_ : dict of str to ndarray
        Per-iteration traces; CAVI's variational parameters.
    elapsed_ : dict of str to float
        Seconds per phase and in ``total``.
    n_iter_ : int
        Iterations run.
    n_features_in_ : int
        Columns seen by :meth:`fit`.
    alpha_ : ndarray or None
        The noise level fitted (2-d, as :class:`lppf.validation.FitData` holds it).
    seed_, threads_ : int
        The seed and the numba threads used.
    result_ : lppf.results.FitResult
        The backend's result.
"""


def _doc(summary: str, factors: str, components: str) -> str:
    return summary + _PARAMETERS + _ATTRIBUTES.format(factors=factors, components=components)


class _PoissonFactorization(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Shared machinery; subclasses set the model name and the factor shapes."""

    _model = ""
    _factors: tuple[str, ...] = ()

    def __init__(self, n_components: int = DEFAULTS["n_components"], *,
                 method: str = DEFAULTS["method"], inference: str = DEFAULTS["inference"],
                 a0: float = DEFAULTS["a0"], b0: float = DEFAULTS["b0"],
                 max_iter: int = DEFAULTS["max_iter"], burnin: int = DEFAULTS["burnin"],
                 thin: int = DEFAULTS["thin"], n_chains: int = DEFAULTS["n_chains"],
                 extend: int = DEFAULTS["extend"], sampler: str = DEFAULTS["sampler"],
                 tol: float = DEFAULTS["tol"],
                 restarts: int = DEFAULTS["restarts"],
                 random_state: int | np.random.Generator | None = DEFAULTS["random_state"],
                 threads: int | None = DEFAULTS["threads"],
                 verbose: bool = DEFAULTS["verbose"], alpha: Any = DEFAULTS["alpha"],
                 mechanism: str = DEFAULTS["mechanism"]) -> None:
        self.n_components = n_components
        self.method = method
        self.inference = inference
        self.a0 = a0
        self.b0 = b0
        self.max_iter = max_iter
        self.burnin = burnin
        self.thin = thin
        self.n_chains = n_chains
        self.extend = extend
        self.sampler = sampler
        self.tol = tol
        self.restarts = restarts
        self.random_state = random_state
        self.threads = threads
        self.verbose = verbose
        self.alpha = alpha
        self.mechanism = mechanism

    # -- validation (lppf.validation, through lppf.fitting)
    def _check_params(self) -> None:
        fitting.check_settings(self.get_params(), self._model)

    def _factor_shapes(self, shape: tuple[int, int]) -> dict[str, tuple[int, int]]:
        return factor_shapes(self._model, shape, self.n_components)

    def _check_data(self, Y: Any, alpha: Any, mask: Any, fix: dict | None,
                    model: str | None = None) -> FitData:
        return fitting.check_data(model or self._model, self.get_params(), Y, alpha, mask, fix)

    # -- fitting
    def fit(self, Y: Any, y: None = None, *, alpha: Any = None, mask: Any = None,
            fix: dict | None = None) -> _PoissonFactorization:
        """Fit to counts ``Y`` (privatized for private/naive methods, true for nonprivate).

        Parameters
        ----------
        Y : array-like or sparse matrix of shape (n_rows, n_cols)
            Integer counts, |y| < 2**31 (negative only when privatized).
        y : None
            Ignored (scikit-learn's signature).
        alpha : float or array-like, default=None
            Noise level in [0, 1) (or the parameter of the ``mechanism``: sigma, mu): a
            scalar, one per row, one per column or one per cell (required for private
            methods; ignored by nonprivate). None: the ``alpha`` parameter.
        mask : array-like of bool of shape (n_rows, n_cols), default=None
            True = held out.
        fix : dict of str to ndarray, default=None
            Factors held at given values, e.g. ``{"phi": Phi_KV}``.

        Returns
        -------
        self
            Warns scikit-learn's ``ConvergenceWarning`` when an MCMC fit misses the
            criterion of :mod:`lppf.diagnostics` or a CAVI fit stops at ``max_iter``
            before ``tol``.
        """
        _check_y(y)
        self._check_params()
        data = self._check_data(Y, self.alpha if alpha is None else alpha, mask, fix)
        validate_data(self, Y, reset=True, skip_check_array=True)
        fit = fitting.fit(self._model, data, self.get_params())
        fit.names = _names(Y)
        self._store(fit)
        problem = fit.convergence_problem()
        if problem is not None:
            warnings.warn(f"{type(self).__name__} did not converge: {problem}",
                          ConvergenceWarning, stacklevel=2)
        return self

    def _alpha(self, alpha: Any) -> Any:
        """The noise level of new rows: ``alpha``, else the ``alpha`` parameter, else the
        fit's when it is one number (a per-row or per-cell level belongs to the fitted
        rows)."""
        if alpha is not None or self.alpha is not None:
            return self.alpha if alpha is None else alpha
        fitted = getattr(self, "alpha_", None)
        if fitted is None or np.size(fitted) == 1 or self.method == "nonprivate":
            return fitted
        raise InputError("alpha: the fit's alpha holds one value per fitted row or cell; pass "
                         "alpha for the new rows (in a search: enable metadata routing)",
                         "alpha")

    def _store(self, fit: fitting.Fit) -> None:
        result = self.result_ = fit.result
        self.seed_, self.threads_ = fit.seed, fit.threads
        self.alpha_ = fit.alpha
        self.row_names_ = fit.names.get("rows")
        if "columns" in fit.names and not hasattr(self, "feature_names_in_"):
            self.feature_names_in_ = np.asarray(fit.names["columns"], dtype=object)
        self.mu_hat_ = result.mu_hat
        for name in self._factors:
            setattr(self, f"{name}_", result.factors.get(name))
        self.y_hat_ = result.y_hat
        self.samples_ = result.samples
        self.log_joint_ = result.log_joint
        self.trace_ = result.trace
        self.variational_ = result.variational
        self.elapsed_ = {**result.elapsed, "total": fit.seconds}
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
        data = FitData(data.Y, data.alpha, data.mask, {"phi": self.components_},
                       data.mechanism)
        rng = np.random.default_rng((self.seed_, 1))
        with numba_threads(self.threads):
            return fitting.run("pmf", data, rng, self.get_params())

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
        fold = self._fold_in(FitData(data.Y, data.alpha, held, {}, data.mechanism))
        if data.mechanism != "geometric":  # ln p(y~ | mu) = ln Z - mu of the walk
            from lppf import cells, noise_conditional

            log_z = cells.local(data.Y, noise_conditional.fit_tables(data), fold.mu_hat,
                                ~held)[2]
            return float((log_z - fold.mu_hat[held].sum()) / held.sum())
        alpha_DV = np.broadcast_to(data.alpha, data.Y.shape)
        return float(np.mean(privatized_logpmf(data.Y[held], fold.mu_hat[held],
                                               alpha_DV[held])))

    # -- output
    def config(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Every setting of the fit (JSON-serializable)."""
        seed = self.random_state if isinstance(self.random_state, int | None) else None
        return fitting.config(self._model, self.get_params(), getattr(self, "seed_", seed),
                              getattr(self, "threads_", None), input_path)

    def _fit(self) -> fitting.Fit:
        if not hasattr(self, "result_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet; call fit first")
        names = {"rows": self.row_names_} if self.row_names_ is not None else {}
        if hasattr(self, "feature_names_in_"):
            names["columns"] = self.feature_names_in_
        return fitting.Fit(self._model, self.get_params(), self.result_, self.seed_,
                           self.threads_, self.elapsed_["total"], self.alpha_, names)

    def to_arrays(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The fit as the arrays of the ``.npz`` layout (:meth:`lppf.fitting.Fit.to_arrays`)."""
        return self._fit().to_arrays(input_path)

    def to_inference_data(self):
        """The MCMC samples as an ``arviz.InferenceData``: posterior factors and mu at the
        diagnosed cells (chain, draw, ...), the post-burn-in log likelihood in
        ``sample_stats`` (:meth:`lppf.fitting.Fit.to_inference_data`)."""
        return self._fit().to_inference_data()

    def save(self, path: str | os.PathLike[str], *,
             input_path: str | os.PathLike[str] | None = None) -> None:
        """Write the fit ``.npz`` atomically; :meth:`load` reads it back."""
        self._fit().save(path, input_path=input_path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> _PoissonFactorization:
        """The fitted estimator saved in ``path`` (by :meth:`save` or ``lppf fit``): every
        fitted attribute, the settings and the fit's alpha, so that :meth:`transform` and
        :meth:`score` work as after :meth:`fit`."""
        fit = fitting.load(path)
        if fit.model != cls._model:
            raise InputError(f"{path}: a {fit.model} fit, not {cls._model} "
                             f"(use {_CLASSES[fit.model]}.load or lppf.estimators.load)")
        model = cls(**{k: v for k, v in fit.params.items() if k in cls._get_param_names()})
        model._store(fit)
        model.n_features_in_ = fit.result.mu_hat.shape[1]
        return model

    def top_words(self, n: int = 10, names: Any = None) -> list[list[str]]:
        """The ``n`` columns (words; actors for the community model) of largest weight in
        each row of ``components_``, largest first: one list per component. ``names``: the
        column names (default: ``feature_names_in_``, the names the fit saw, else the
        column numbers)."""
        check_is_fitted(self)
        if names is None:
            names = getattr(self, "feature_names_in_", None)
        if names is None:
            names = np.arange(self.components_.shape[1])
        names = np.asarray(names).astype(str)
        if names.shape != (self.components_.shape[1],):
            raise InputError(f"names: {names.shape[0]} names for {self.components_.shape[1]} "
                             "columns", "names")
        n = max(int(n), 1)
        order = np.argsort(-self.components_, axis=1, kind="stable")[:, :n]
        return [names[row].tolist() for row in order]


class PoissonMF(_PoissonFactorization):
    __doc__ = _doc(
        """Poisson matrix factorization (topics): ``Y`` (D, V), ``mu = Theta_DK @ Phi_KV``.

    :meth:`transform` infers theta of new documents given phi.
""",
        """theta_ : ndarray of shape (D, K)
        Document-topic weights.
    phi_ : ndarray of shape (K, V)
        Topics.""",
        "``phi_``.")

    _model = "pmf"
    _factors = ("theta", "phi")

    def _components(self) -> np.ndarray:
        return self.phi_


class CommunityModel(_PoissonFactorization):
    __doc__ = _doc(
        """Overlapping community model (networks): ``Y`` (V, V),
    ``mu_ij = sum_cd theta_ic theta_jd pi_cd``; the diagonal is always held out.

    New actors' outgoing counts to the V fitted actors, ``Y_new`` (n_new, V), have
    ``mu_ij = sum_cd theta_ic pi_cd theta_jd = (Theta_new @ components_)_ij``: a Poisson
    factorization with ``phi = components_`` held fixed, which :meth:`transform` and
    :meth:`score` fit (their incoming counts are not used).
""",
        """theta_ : ndarray of shape (V, C)
        Memberships.
    pi_ : ndarray of shape (C, C)
        Community-to-community rates.""",
        "``E[Pi_CC @ Theta_VC.T]``: the rate from community c to each fitted actor (the "
        "posterior mean over the saved samples for MCMC, the product of the means for CAVI).")

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


_CLASSES = {"pmf": "PoissonMF", "community": "CommunityModel"}


def load(path: str | os.PathLike[str]) -> _PoissonFactorization:
    """The fitted :class:`PoissonMF` or :class:`CommunityModel` saved in ``path``."""
    return {"pmf": PoissonMF, "community": CommunityModel}[fitting.load(path).model].load(path)


def _check_y(y: Any) -> None:
    """scikit-learn's ``y`` is ignored; a number there is a noise level given positionally."""
    if isinstance(y, int | float | np.number) and not isinstance(y, bool):
        raise InputError(f"fit(Y, {y!r}): the second argument is scikit-learn's ignored y; "
                         f"pass the noise level by name, fit(Y, alpha={y!r})", "alpha")


def _names(Y: Any) -> dict[str, np.ndarray]:
    """Row names of a pandas DataFrame (unless its index is the default 0, 1, ...)."""
    if not hasattr(Y, "columns") or not hasattr(Y, "index"):
        return {}
    import pandas as pd

    return {} if isinstance(Y.index, pd.RangeIndex) else {"rows": np.asarray(Y.index, str)}


__all__ = ["DEFAULTS", "CommunityModel", "PoissonMF", "load"]
