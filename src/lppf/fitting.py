"""One fit, from settings and data to the output ``.npz``: the code path shared by the
scikit-learn estimators (:mod:`lppf.estimators`) and ``lppf fit``.

Settings are a dict with the keys of :data:`DEFAULTS` (the estimators' ``get_params()``),
the fields of :class:`Settings`. :func:`check` validates them and the data
(:mod:`lppf.validation`) into a :class:`~lppf.validation.FitData`, :func:`fit` runs the
backend of the model and inference (:func:`lppf.mcmc.fit_mcmc`, :func:`lppf.cavi.fit_cavi`:
the table of :mod:`lppf.backends`), and :meth:`Fit.to_arrays` lays the result out as the
``.npz``.
This module imports neither scikit-learn, numba nor a backend before it is used: every
workflow job is an ``lppf fit`` process whose start-up counts, and the workflow reads
:data:`DEFAULTS` when it is parsed.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from lppf.io import NAME_KEYS, load_json_entry, load_npz, npz_writer, require_key, write_files
from lppf.results import FACTORS, SECONDS, FitResult
from lppf.validation import (
    FitData,
    InputError,
    check_mechanism,
    check_params,
    check_sampler,
    fit_data,
)


@dataclass(frozen=True)
class Settings:
    """Every setting of a fit, with its default: the estimators' parameters (``get_params()``)
    and ``lppf fit``'s options. :meth:`keywords` turns them into a backend's arguments."""

    n_components: int = 10
    method: str = "private"
    inference: str = "mcmc"
    a0: float = 0.1  # gamma prior shape
    b0: float = 1.0  # gamma prior rate
    max_iter: int = 2000  # MCMC: total iterations including burn-in; CAVI: maximum iterations
    burnin: int = 1000
    thin: int = 20
    n_chains: int = 1  # MCMC: independent chains, samples pooled
    extend: int = 0  # MCMC: times the chains may run on while they miss the criterion
    sampler: str = "auto"  # MCMC: auto, gibbs or hmc (community fixed counts; pmf moves)
    tol: float = 1e-5  # CAVI: stop when the relative change of mu_hat drops below (0: never)
    restarts: int = 1  # CAVI: random restarts, best ELBO kept
    random_state: Any = None  # int, None (a fresh seed) or a numpy Generator; see ``seed_``
    threads: int | None = None  # numba threads; None: numba's default
    verbose: bool = False  # progress bar
    alpha: Any = None  # noise level used when fit/transform/score get no ``alpha``
    mechanism: str = "geometric"  # the noise of the data; ``alpha`` holds its parameter

    @classmethod
    def of(cls, params: dict[str, Any]) -> Settings:
        """The settings in ``params`` (a dict with the keys of :data:`DEFAULTS`)."""
        return cls(**{name: params[name] for name in DEFAULTS})

    def keywords(self, rng: np.random.Generator) -> dict[str, Any]:
        """The arguments of the backend of :attr:`inference` (:mod:`lppf.backends`)."""
        common = {"method": self.method, "n_components": int(self.n_components),
                  "a0": float(self.a0), "b0": float(self.b0), "rng": rng,
                  "threads": self.threads, "progress": bool(self.verbose)}
        if self.inference == "mcmc":
            return {**common, "n_iter": int(self.max_iter), "burnin": int(self.burnin),
                    "thin": int(self.thin), "n_chains": int(self.n_chains),
                    "extend": int(self.extend), "sampler": self.sampler}
        return {**common, "max_iter": int(self.max_iter), "tol": float(self.tol),
                "restarts": int(self.restarts)}


DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Settings)}


def check(model: str, params: dict[str, Any], Y: Any, alpha: Any, mask: Any,
          fix: dict | None) -> FitData:
    """Validate the settings ``params`` and the data of a ``model`` fit."""
    check_settings(params, model)
    return check_data(model, params, Y, alpha, mask, fix)


def check_settings(params: dict[str, Any], model: str | None = None) -> None:
    """Validate the settings ``params`` (:func:`lppf.validation.check_params`); with the
    ``model``, those that depend on it too (:func:`lppf.validation.check_sampler`)."""
    check_params(**{k: v for k, v in params.items()
                    if k not in ("verbose", "alpha", "mechanism")})
    check_mechanism(params.get("mechanism", "geometric"))
    if model is not None and params["inference"] == "mcmc":
        check_sampler(params["sampler"], model)


def check_data(model: str, params: dict[str, Any], Y: Any, alpha: Any, mask: Any,
               fix: dict | None) -> FitData:
    """Validate the data of a ``model`` fit with settings ``params`` (already checked)."""
    n_saved = (max((int(params["max_iter"]) - int(params["burnin"])) // int(params["thin"]), 1)
               * int(params["n_chains"]) if params["inference"] == "mcmc" else 1)
    return fit_data(model, params["method"], Y, alpha, mask, fix,
                    n_components=params["n_components"], n_saved=n_saved,
                    mechanism=params.get("mechanism", "geometric"))


def draw_seed(random_state: int | np.random.Generator | None) -> int:
    """The seed of a fit: ``random_state`` itself, or drawn from it (a Generator) or from the
    operating system (None)."""
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**32))
    return int(random_state)


def run(model: str, data: FitData, rng: np.random.Generator, params: dict[str, Any]
        ) -> FitResult:
    """The backend's fit of ``model`` to ``data`` with settings ``params``."""
    settings = Settings.of(params)
    if settings.inference == "mcmc":
        from lppf.mcmc import fit_mcmc as fit_by
    else:
        from lppf.cavi import fit_cavi as fit_by
    return fit_by(model, data, **settings.keywords(rng))


def config(model: str, params: dict[str, Any], seed: int | None, threads: int | None,
           input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Every setting of a fit (JSON-serializable), as stored under ``config``."""
    params = {k: v for k, v in params.items() if k not in ("verbose", "random_state", "alpha")}
    return {"model": model, **params, "seed": seed, "numba_threads": threads,
            "input": None if input_path is None else str(input_path)}


@dataclass
class Fit:
    """A finished fit: its settings, the backend's result, the seed and numba threads used,
    the wall time in seconds, the noise level fitted (``alpha``, 2-d as in
    :class:`~lppf.validation.FitData`: the parameter of the mechanism in
    ``params["mechanism"]``; None for nonprivate) and the row and column names
    (``names``: ``rows``, ``columns``, string arrays) when known."""

    model: str
    params: dict[str, Any]
    result: FitResult
    seed: int
    threads: int
    seconds: float
    alpha: np.ndarray | None = None
    names: dict[str, np.ndarray] = field(default_factory=dict)

    def to_arrays(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The fit as the arrays of the ``.npz`` layout (docs/usage.md, "Output .npz"): the
        result's (:meth:`~lppf.results.FitResult.to_arrays`), then ``seed``, ``config``,
        ``alpha`` and the row and column names."""
        out = self.result.to_arrays(self.seconds)
        out["seed"] = np.int64(self.seed)
        settings = config(self.model, self.params, self.seed, self.threads, input_path)
        out["config"] = np.array(json.dumps(settings, sort_keys=True))
        if self.alpha is not None:
            out["alpha"] = np.asarray(self.alpha, dtype=np.float64)
        out.update({k: np.asarray(v, dtype=str) for k, v in self.names.items()})
        return out

    def convergence_problem(self) -> str | None:
        """Why the fit is not to be trusted, as one phrase, or None: an MCMC fit that misses
        the criterion (:func:`lppf.diagnostics.convergence_problem`), a CAVI fit stopped at
        ``max_iter`` before ``tol``."""
        r = self.result
        if r.diagnostics:
            from lppf.diagnostics import convergence_problem

            return convergence_problem(r.diagnostics, int(r.extra["n_chains"]))
        tol = float(self.params["tol"])
        if tol > 0 and not r.extra.get("converged", True):
            return (f"CAVI stopped at max_iter {r.n_iter} before the relative change of "
                    f"mu_hat fell below tol {tol:g}")
        return None

    def warning_line(self) -> str | None:
        """One line for the user when :meth:`convergence_problem` finds one, else None."""
        problem = self.convergence_problem()
        if problem is None:
            return None
        if self.result.diagnostics:
            from lppf.diagnostics import warning_line

            return warning_line(self.result.diagnostics, int(self.result.extra["n_chains"]))
        return f"warning: not converged: {problem}; raise max_iter"

    def to_inference_data(self):
        """The MCMC samples as an ``arviz.InferenceData``
        (:func:`lppf.diagnostics.to_inference_data`)."""
        r = self.result
        if not r.diagnostics:
            raise ValueError("to_inference_data needs an MCMC fit (inference='mcmc')")
        from lppf.diagnostics import _arviz, to_inference_data

        try:
            _arviz()
        except ImportError:
            raise ImportError("to_inference_data needs ArviZ: pip install 'lppf[arviz]'"
                              ) from None
        n_chains = int(r.extra["n_chains"])
        burnin = int(r.extra.get("burnin", self.params["burnin"]))  # extended: more
        loglik = np.reshape(r.trace["loglik"], (n_chains, -1))[:, burnin:]
        return to_inference_data(r.samples, loglik, r.diagnostics["mu_cells"], n_chains)

    def writer(self, input_path: str | os.PathLike[str] | None = None):
        """A writer of the fit ``.npz`` for :func:`lppf.io.write_files`, uncompressed: its
        samples and posterior means are floats that zlib shrinks by 3-4% at about 30 MB/s,
        which made writing a saved sample cost a fifth of a sweep."""
        return npz_writer(compressed=False, **self.to_arrays(input_path))

    def save(self, path: str | os.PathLike[str], *,
             input_path: str | os.PathLike[str] | None = None) -> None:
        """Write the fit ``.npz`` atomically (:meth:`writer`)."""
        write_files([(path, self.writer(input_path))])


def load(path: str | os.PathLike[str]) -> Fit:
    """Read a fit ``.npz`` written by :meth:`Fit.save` (``lppf fit``, ``model.save``) back
    into a :class:`Fit`; a file that is not one is an :class:`InputError` naming it."""
    data = load_npz(path)
    try:
        settings = load_json_entry(data, "config") if "config" in data else None
    except (ValueError, TypeError):
        settings = None
    if not isinstance(settings, dict) or settings.get("model") not in FACTORS:
        raise InputError(f"{path}: not a fit file (no valid 'config'; write one with "
                         "`lppf fit` or model.save)")
    model = settings["model"]
    result = FitResult.from_arrays(data, model, lambda key: require_key(data, key, path))
    params = {**DEFAULTS, **{k: v for k, v in settings.items() if k in DEFAULTS},
              "random_state": settings.get("seed")}
    names = {k: data[k].astype(str) for k in NAME_KEYS if k in data}
    return Fit(model, params, result, int(require_key(data, "seed", path)),
               settings.get("numba_threads"), float(data.get(SECONDS, np.nan)),
               data.get("alpha"), names)


def fit(model: str, data: FitData, params: dict[str, Any]) -> Fit:
    """Fit ``model`` to validated ``data`` (:func:`check`) with settings ``params``: draw the
    seed from ``params["random_state"]`` and run the backend on ``params["threads"]``
    numba threads."""
    from lppf._numba import threads as numba_threads  # here: the workflow imports DEFAULTS

    seed = draw_seed(params["random_state"])
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    with numba_threads(params["threads"]) as n_threads:
        result = run(model, data, rng, params)
    alpha = None if params["method"] == "nonprivate" else data.alpha
    return Fit(model, dict(params), result, seed, n_threads, time.perf_counter() - start,
               alpha)
