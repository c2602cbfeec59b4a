"""Reading the files a fit is judged by, every array checked before it is used.

:func:`read_fit` reads a fit ``.npz`` (the layout of :meth:`lppf.fitting.Fit.to_arrays`),
:func:`read_truth` a truth ``.npz`` (``lppf simulate``), :func:`read_privatized` the output of
``lppf privatize`` and :func:`read_mask` a held-out mask, each against the shape of the true
counts. Every refusal is one :class:`~lppf.validation.InputError` line naming the file and the key.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from lppf.io import load_npy, load_npz, read_noise, require_key
from lppf.results import FACTORS, SECONDS, part, part_key, samples_key
from lppf.validation import (
    COUNT_LIMIT,
    MODELS,
    NOISE_PARAMS,
    InputError,
    as_count_matrix,
)

PathLike = str | os.PathLike[str]
DIAGNOSTICS = tuple(part_key("diagnostics", k) for k in ("rhat_loglik", "ess_bulk_loglik"))


WINDOWS = ("window_rhat", "window_ess", "window_rhat_mu")  # an MCMC fit's per-window diagnostics


def _numbers(data: dict, key: str, path: PathLike, shape: tuple | None = None, *,
             ndim: int | None = None, finite: bool = True, nonnegative: bool = True,
             nan: bool = False) -> np.ndarray:
    """``data[key]`` as a float array (of ``shape``, or ``ndim`` dimensions): integers or
    floats (no bools, complex numbers or text), no NaN, finite and >= 0 unless told
    otherwise."""
    value = np.asarray(require_key(data, key, path))
    want = f"shape {shape}" if shape is not None else f"{ndim} dimension(s)"
    if (value.dtype.kind not in "iuf" or (shape is not None and value.shape != shape)
            or (ndim is not None and value.ndim != ndim)):
        raise InputError(f"{path}: key {key!r} has shape {value.shape} and dtype {value.dtype}, "
                         f"expected numbers of {want}")
    value = value.astype(float)
    if (not nan and np.isnan(value).any()) or (finite and not np.isfinite(value).all()):
        raise InputError(f"{path}: key {key!r} contains NaN{'' if not finite else ' or inf'}")
    if nonnegative and (value < 0).any():
        raise InputError(f"{path}: key {key!r} contains negative values (min "
                         f"{value.min():.6g})")
    return value


def _integer(data: dict, key: str, path: PathLike, limit: int = 2**63) -> int | None:
    """``data[key]``, one integer in [0, limit), or None when absent."""
    if key not in data:
        return None
    value = np.asarray(data[key])
    if value.shape != () or value.dtype.kind not in "iu" or not 0 <= value.item() < limit:
        bound = f"2**{limit.bit_length() - 1}" if limit & (limit - 1) == 0 else limit
        raise InputError(f"{path}: key {key!r} must be one integer in [0, {bound}), got "
                         f"shape {value.shape} dtype {value.dtype}")
    return int(value)


def _config(data: dict, path: PathLike) -> dict[str, Any]:
    if "config" not in data:
        return {}
    value = np.asarray(data["config"])
    try:
        if value.shape != () or value.dtype.kind != "U":
            raise ValueError(f"shape {value.shape} dtype {value.dtype}")
        config = json.loads(str(value[()]))
        if not isinstance(config, dict):
            raise ValueError(f"a JSON {type(config).__name__}")
    except ValueError as exc:
        raise InputError(f"{path}: key 'config' is not a JSON object ({exc})") from None
    return config


def _model_of(data: dict, config: dict, path: PathLike, model: str) -> None:
    """Refuse a fit of the other model (its factors or its recorded ``model``)."""
    other = next(m for m in MODELS if m != model)
    key = next((k for k in (FACTORS[other][1], samples_key(FACTORS[other][1])) if k in data),
               None)
    if config.get("model", model) != model or key is not None:
        why = f"key {key!r}" if key else f"config model {config.get('model')!r}"
        raise InputError(f"{path}: a fit of another model ({why}), evaluated as --model {model}")


def _components(data: dict, names: tuple[str, str]) -> int:
    """K: the columns of theta, else the rows of phi / pi (-1 when neither is a matrix)."""
    for name, axis in zip(names, (-1, -2), strict=True):
        for key in (name, samples_key(name)):
            if key in data and np.ndim(data[key]) >= 2:
                return np.shape(data[key])[axis]
    return -1


def _factors(data: dict, path: PathLike, model: str, shape: tuple[int, int]) -> dict:
    """The factors and their samples (S, ...), of one K and one S, and ``log_joint`` (S,)."""
    names = FACTORS[model]
    K = _components(data, names)
    expected = {"theta": (shape[0], K), "phi": (K, shape[1]), "pi": (K, K)}
    out: dict[str, np.ndarray] = {}
    n_samples = set()
    for name in names:
        if name in data:
            out[name] = _numbers(data, name, path, expected[name])
        key = samples_key(name)
        if key in data:
            if np.ndim(data[key]) != 3:
                raise InputError(f"{path}: key {key!r} has shape {np.shape(data[key])}, "
                                 f"expected (samples, *{expected[name]})")
            S = np.shape(data[key])[0]
            if S == 0:
                raise InputError(f"{path}: key {key!r} holds no samples")
            out[key] = _numbers(data, key, path, (S, *expected[name]))
            n_samples.add(S)
    if len(n_samples) > 1:
        raise InputError(f"{path}: the factor samples differ in number ({sorted(n_samples)})")
    if "log_joint" in data:
        S = n_samples.pop() if n_samples else np.size(data["log_joint"])
        out["log_joint"] = _numbers(data, "log_joint", path, (S,), finite=False,
                                    nonnegative=False)
    return out


def _chains_split(fit: dict, path: PathLike, n_chains: int) -> None:
    """The saved samples split into ``n_chains`` equal runs, one per chain."""
    S = next((len(v) for k, v in fit.items() if k.endswith("_samples")), None)
    if S is not None and S % n_chains:
        raise InputError(f"{path}: {S} saved samples do not split into the {n_chains} chains "
                         "of key 'extra_n_chains'")


def _diagnostics(data: dict, path: PathLike) -> dict:
    """The ``diag_*`` arrays: R-hat and ESS scalars (NaN where a fit could not compute them:
    too few draws, or a trace that never moved), ``rhat_mu`` (m,) of the cells (m, 2)."""
    if not part(data, "diagnostics"):
        return {}
    out = {k: _numbers(data, k, path, (), finite=False, nan=True) for k in DIAGNOSTICS}
    tail, rhat_key, cells_key = (part_key("diagnostics", k)
                                 for k in ("ess_tail_loglik", "rhat_mu", "cells"))
    if tail in data:
        out[tail] = _numbers(data, tail, path, (), finite=False, nan=True)
    rhat = np.asarray(require_key(data, rhat_key, path))
    if rhat.ndim != 1 or rhat.dtype.kind not in "iuf":
        raise InputError(f"{path}: key {rhat_key!r} has shape {rhat.shape} and dtype "
                         f"{rhat.dtype}, expected numbers of 1 dimension(s)")
    cells = np.asarray(require_key(data, cells_key, path))
    if cells.shape != (len(rhat), 2) or cells.dtype.kind not in "iu":
        raise InputError(f"{path}: key {cells_key!r} has shape {cells.shape} and dtype "
                         f"{cells.dtype}, expected integers of shape ({len(rhat)}, 2)")
    return {**out, rhat_key: rhat.astype(float), cells_key: cells}


def read_fit(path: PathLike, model: str, shape: tuple[int, int],
             counts: str = "the counts") -> dict[str, Any]:
    """A fit ``.npz`` of ``model`` for counts of ``shape``, checked: ``mu_hat`` (shape, finite,
    >= 0); the factors and their samples (S, ...) of one K; ``log_joint`` (S,); the ``diag_*``
    scalars; ``config`` (a JSON object); ``seed``, ``iterations`` (integers); and
    ``elapsed_seconds``; ``extra_n_chains``, ``extra_extended`` (integers), the diagnostics
    of each sampling window (``extra_window_*``, 1-d, NaN allowed) and ``extra_objective``
    where present. Returns the checked arrays, ``config`` decoded.
    ``counts`` names the counts in messages."""
    data = load_npz(path)
    config = _config(data, path)
    _model_of(data, config, path, model)
    mu_hat = np.asarray(require_key(data, "mu_hat", path))
    if mu_hat.shape != tuple(shape):
        raise InputError(f"{path}: mu_hat shape {mu_hat.shape} differs from {counts} "
                         f"{tuple(shape)}")
    out: dict[str, Any] = {"mu_hat": _numbers(data, "mu_hat", path, tuple(shape)),
                           **_factors(data, path, model, tuple(shape)),
                           **_diagnostics(data, path), "config": config,
                           "seed": _integer(data, "seed", path),
                           "iterations": _integer(data, "iterations", path, COUNT_LIMIT)}
    if SECONDS in data:
        out[SECONDS] = float(_numbers(data, SECONDS, path, ()))
    chains, objective = part_key("extra", "n_chains"), part_key("extra", "objective")
    if chains in data:
        out[chains] = _integer(data, chains, path, COUNT_LIMIT)
        if out[chains] < 1:
            raise InputError(f"{path}: key {chains!r} must be >= 1, got 0")
        _chains_split(out, path, out[chains])
    extended = part_key("extra", "extended")
    if extended in data:
        out[extended] = _integer(data, extended, path, COUNT_LIMIT)
    for name in WINDOWS:
        key = part_key("extra", name)
        if key in data:
            out[key] = _numbers(data, key, path, ndim=1, finite=False, nan=True)
    if objective in data:
        out[objective] = _numbers(data, objective, path, ndim=1, nonnegative=False)
    return out


def read_truth(path: PathLike, model: str) -> dict[str, np.ndarray]:
    """A truth ``.npz``: the true counts ``Y`` (non-negative, square for the community
    model), and if present the true rates ``mu`` (finite, >= 0, Y's shape) and, for pmf, the
    true topics ``phi`` (K, n_cols)."""
    data = load_npz(path)
    Y = as_count_matrix(require_key(data, "Y", path), name=f"{path}: Y")
    if Y.size == 0:
        raise InputError(f"{path}: Y: empty matrix (shape {Y.shape}), nothing to evaluate")
    if model == "community" and (Y.shape[0] != Y.shape[1] or Y.shape[0] < 2):
        raise InputError(f"{path}: Y: the community model needs a square matrix of at least "
                         f"2 actors, got shape {Y.shape}")
    out = {"Y": Y}
    if "mu" in data:
        out["mu"] = _numbers(data, "mu", path, Y.shape)
    if model == "pmf" and "phi" in data:
        phi = np.asarray(data["phi"])
        out["phi"] = _numbers(data, "phi", path, (phi.shape[0] if phi.ndim else 0, Y.shape[1]))
    return out


def read_privatized(path: PathLike, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """The output of ``lppf privatize`` for counts of ``shape``: integer ``Y_noisy`` of that
    shape (|y| < 2**31), ``mechanism`` and its parameter under ``alpha`` (alpha, sigma or mu;
    :func:`lppf.io.read_noise`) broadcastable to it."""
    data = load_npz(path)
    Y_noisy = as_count_matrix(require_key(data, "Y_noisy", path), name=f"{path}: Y_noisy",
                              signed=True)
    if Y_noisy.shape != tuple(shape):
        raise InputError(f"{path}: Y_noisy has shape {Y_noisy.shape}, the true counts "
                         f"{tuple(shape)}")
    mechanism, alpha = read_noise(data, path, tuple(shape))
    if alpha is None:
        require_key(data, NOISE_PARAMS[mechanism or "geometric"], path)  # raises
    return {"Y_noisy": Y_noisy, "alpha": alpha, "mechanism": mechanism}


def read_mask(path: PathLike, shape: tuple[int, int], cells: np.ndarray) -> np.ndarray:
    """A held-out mask (True = held out): bool or 0/1 integers of ``shape`` holding out some,
    but not all, of the evaluated ``cells``."""
    mask = load_npy(path, "--mask")
    if mask.dtype != bool and not (mask.dtype.kind in "iu" and np.isin(mask, (0, 1)).all()):
        raise InputError(f"{path}: mask: expected a boolean (or 0/1) array, got dtype "
                         f"{mask.dtype}")
    if mask.shape != tuple(shape):
        raise InputError(f"{path}: mask shape {mask.shape} differs from Y {tuple(shape)}")
    mask = mask.astype(bool)
    held = int((mask & cells).sum())
    if held == 0 or held == int(cells.sum()):
        raise InputError(f"{path}: mask holds out {'no' if held == 0 else 'every'} evaluated "
                         "cell: no held-out error to measure")
    return mask


__all__ = ["read_fit", "read_mask", "read_privatized", "read_truth"]
