"""Input validation errors and atomic file output shared by the CLI, the API and the workflow."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp


class InputError(ValueError):
    """Bad user input. The message is one line naming the file, key or value at fault."""


def _atomic_target(path: str | os.PathLike[str], suffix: str) -> tuple[Path, int, str]:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    return path, fd, tmp


def save_npz(path: str | os.PathLike[str], compressed: bool = True, **arrays: Any) -> None:
    """Write ``arrays`` to ``path`` as ``.npz`` atomically (temporary file, then rename).

    Dict values are stored as JSON strings (0-d unicode arrays); read them back with
    :func:`load_json_entry`.
    """
    payload = {k: (json.dumps(v, sort_keys=True) if isinstance(v, Mapping) else v)
               for k, v in arrays.items()}
    path, fd, tmp = _atomic_target(path, ".npz")
    try:
        with os.fdopen(fd, "wb") as fh:
            (np.savez_compressed if compressed else np.savez)(fh, **payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    path, fd, tmp = _atomic_target(path, ".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_json_entry(npz: Mapping[str, Any], key: str) -> Any:
    """Decode a dict stored by :func:`save_npz`."""
    return json.loads(str(np.asarray(npz[key])[()]))


def load_npz(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load an ``.npz`` into a dict; a scipy sparse matrix saved by ``scipy.sparse.save_npz``
    comes back under key ``Y``. Errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable .npz file ({exc})") from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise InputError(f"{path}: not an .npz archive (a single .npy array?)")
    with loaded as z:
        data = {k: z[k] for k in z.files}
    if {"format", "shape", "data"} <= data.keys() and "Y" not in data:
        data = {"Y": sp.load_npz(path)}
    return data


def load_npy(path: str | os.PathLike[str], what: str) -> np.ndarray:
    """Load one array from a ``.npy`` file; errors name the file and ``what`` it is for."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file ({what})")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable .npy file ({what}: {exc})") from None
    if not isinstance(array, np.ndarray):
        array.close()
        raise InputError(f"{path}: not a readable .npy file ({what}: an .npz archive)")
    return array


def require_key(data: Mapping[str, Any], key: str, path: str | os.PathLike[str]) -> Any:
    """Return ``data[key]`` or raise an :class:`InputError` naming the file and the key."""
    if key not in data:
        found = ", ".join(sorted(data)) or "none"
        raise InputError(f"{path}: missing key {key!r} (found: {found})")
    return data[key]


def as_count_matrix(Y: Any, name: str = "Y", signed: bool = False) -> np.ndarray:
    """Validate a count matrix and return it as a dense ``int64`` array.

    Accepts dense arrays and scipy sparse matrices. Rejects NaN/inf, non-integer values and,
    unless ``signed``, negative values, with a message naming ``name``.
    """
    if sp.issparse(Y):
        Y = Y.toarray()
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise InputError(f"{name}: expected a 2-d matrix, got shape {Y.shape}")
    if Y.dtype.kind == "b" or Y.dtype.kind not in "iuf":
        raise InputError(f"{name}: expected numeric counts, got dtype {Y.dtype}")
    if Y.dtype.kind == "f":
        if not np.all(np.isfinite(Y)):
            raise InputError(f"{name}: contains NaN or infinite values")
        if np.any(Y != np.round(Y)):
            raise InputError(f"{name}: contains non-integer values")
    if not signed and Y.size and Y.min() < 0:
        raise InputError(f"{name}: contains negative counts (min {Y.min()})")
    return Y.astype(np.int64)
