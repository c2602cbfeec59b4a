"""Reading and writing the project's files.

Every read failure of an input file (missing, truncated, corrupt, pickled objects, wrong
dtype, out-of-range counts) becomes an :class:`~lppf.validation.InputError` whose message is
one line naming the file and the key. Every output is written atomically: to a temporary
file beside the target, then renamed onto it, so a reader sees the old file or the new one,
never half of one. Outputs get the mode a plain ``open`` would give (the umask's for a new
file, the old mode when a file is replaced). An output that is a symbolic link is written
through: the file it points to is replaced and the link stays. Only regular files are
written: an output that is a directory, a FIFO, a device or a socket, or a name ending in
``/``, is refused. Several outputs of one command are renamed together with the termination
signals held back, so they appear all or none. The temporary files (and any directories made
for them) are removed on any error, on ``SIGINT`` and on ``SIGTERM``/``SIGHUP`` (the process
then exits with status 128 + the signal number).
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import stat
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

from lppf.validation import (
    MECHANISMS,
    NOISE_PARAMS,
    InputError,
    check_noise,
    check_sparse,
    reason,
)

PathLike = str | os.PathLike[str]


# -- reading
_READ_ERRORS = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error,
                RuntimeError, TypeError, MemoryError, NotImplementedError)


def _missing(path: Path, what: str = "") -> InputError:
    where = f" ({what})" if what else ""
    if path.is_dir():
        return InputError(f"{path}: is a directory, expected a file{where}")
    try:
        mode = path.stat().st_mode
    except OSError:
        return InputError(f"{path}: no such file{where}")
    return InputError(f"{path}: is {_kind(mode)}, expected a regular file{where}")


def _open(path: Path, what: str = "") -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as exc:
        where = f" ({what})" if what else ""
        raise InputError(f"{path}: cannot read ({exc.strerror or reason(exc)}){where}") from None


def load_npz(path: PathLike) -> dict[str, Any]:
    """Load an ``.npz`` into a dict; a scipy sparse matrix saved by ``scipy.sparse.save_npz``
    comes back under key ``Y``. Every failure is an :class:`InputError` naming the file (and
    the key when one member is unreadable)."""
    path = Path(path)
    if not path.is_file():
        raise _missing(path)
    data = {}
    with _open(path) as fh:
        try:
            loaded = np.load(fh, allow_pickle=False)
        except _READ_ERRORS as exc:
            raise InputError(f"{path}: not a readable .npz file ({reason(exc)})") from None
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise InputError(f"{path}: not an .npz archive (a single .npy array?)")
        with loaded as z:
            for key in z.files:
                try:
                    data[key] = z[key]
                except _READ_ERRORS as exc:
                    raise InputError(f"{path}: key {key!r} is unreadable ({reason(exc)})"
                                     ) from None
    if {"format", "shape", "data"} <= data.keys() and "Y" not in data:
        data = {"Y": _sparse(path, data)}
    return data


def _sparse(path: Path, data: dict[str, Any]) -> Any:
    import scipy.sparse as sp

    try:
        matrix = sp.load_npz(io.BytesIO(path.read_bytes()))
    except _READ_ERRORS as exc:
        raise InputError(f"{path}: not a readable sparse matrix ({reason(exc)})") from None
    return check_sparse(matrix, str(path))


# -- the noise of a privatized file: key ``mechanism`` (absent: "geometric", the files of
# earlier versions) and the parameter under its name (``alpha``, ``sigma`` or ``mu``)


def noise_entries(mechanism: str, param: Any) -> dict[str, np.ndarray]:
    """The entries that record the noise of a privatized file."""
    return {"mechanism": np.array(mechanism), NOISE_PARAMS[mechanism]: np.asarray(
        param, dtype=np.float64)}


def read_noise(data: Mapping[str, Any], path: PathLike,
               shape: tuple[int, ...] | None = None) -> tuple[str | None, np.ndarray | None]:
    """(mechanism, parameter) recorded in ``data``, the arrays of the privatized file at
    ``path``: mechanism None when the file names none and holds no ``alpha`` (noise given
    elsewhere), parameter None when absent; checked for counts of ``shape``."""
    if "mechanism" in data:
        mechanism = str(np.asarray(data["mechanism"]))
        if mechanism not in MECHANISMS:
            raise InputError(f"{path}: key 'mechanism' is {_short(mechanism)!r}, not one of "
                             f"{', '.join(MECHANISMS)}")
    elif "alpha" in data:
        mechanism = "geometric"
    else:
        return None, None
    key = NOISE_PARAMS[mechanism]
    if key not in data:
        return mechanism, None
    return mechanism, check_noise(mechanism, data[key], shape, name=f"{path}: {key}")


# -- reading users' count matrices
DELIMITED = {".csv": ",", ".tsv": "\t", ".txt": None}
NAME_KEYS = ("rows", "columns")  # row and column names stored beside a matrix


def read_counts(path: PathLike) -> dict[str, Any]:
    """Read a count matrix and what travels with it from ``path``, by its extension.

    ``.npz``: the arrays of :func:`load_npz` (``Y`` or ``Y_noisy``, ``alpha``, ``rows``,
    ``columns``, ...). ``.csv``, ``.tsv``, ``.txt`` (whitespace): a table of integers, with
    or without a header row (column names) and an index column (row names), detected by
    their non-numeric entries; returned under ``counts`` with ``rows``/``columns`` when
    present. ``.mtx``: a Matrix Market file (``counts``). Names come back as string arrays.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".mtx":
        return {"counts": _read_mtx(path)}
    if suffix in DELIMITED:
        return _read_table(path, DELIMITED[suffix])
    return load_npz(path)


def _read_mtx(path: Path) -> Any:
    import scipy.io

    if not path.is_file():
        raise _missing(path)
    with _open(path) as fh:
        try:
            matrix = scipy.io.mmread(fh)
        except _READ_ERRORS as exc:
            raise InputError(f"{path}: not a readable Matrix Market file ({reason(exc)})"
                             ) from None
    return check_sparse(matrix, str(path)) if hasattr(matrix, "tocsr") else matrix


def _is_number(cells: Any) -> np.ndarray:
    import pandas as pd

    return pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce").notna().to_numpy()


def _read_table(path: Path, sep: str | None) -> dict[str, Any]:
    """A delimited table of counts; a first row (column) with a non-numeric entry beyond the
    corner is a header (an index)."""
    import pandas as pd

    if not path.is_file():
        raise _missing(path)
    with _open(path) as fh:
        try:
            table = pd.read_csv(fh, sep=sep if sep else r"\s+", header=None, dtype=str,
                                keep_default_na=False, engine="python" if sep is None else "c")
        except (*_READ_ERRORS, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: not a readable table ({reason(exc)})") from None
    cells = table.to_numpy(dtype=object)
    if cells.size == 0:
        raise InputError(f"{path}: empty table")
    header = cells.shape[0] > 1 and not _is_number(cells[0, 1:]).all()
    index = cells.shape[1] > 1 and not _is_number(cells[int(header):, 0]).all()
    out: dict[str, Any] = {}
    if header:
        out["columns"] = np.array([str(c) for c in cells[0, int(index):]])
    if index:
        out["rows"] = np.array([str(c) for c in cells[int(header):, 0]])
    body = cells[int(header):, int(index):]
    numeric = pd.DataFrame(body).apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = np.argwhere(np.isnan(numeric))
    if bad.size:
        r, c = bad[0]
        raise InputError(f"{path}: row {r + 1 + int(header)}, column {c + 1 + int(index)}: "
                         f"expected a count, got {body[r, c]!r}")
    out["counts"] = numeric
    return out


def load_npy(path: PathLike, what: str) -> np.ndarray:
    """Load one array from a ``.npy`` file; errors name the file and ``what`` it is for."""
    path = Path(path)
    if not path.is_file():
        raise _missing(path, what)
    with _open(path, what) as fh:
        try:
            array = np.load(fh, allow_pickle=False)
        except _READ_ERRORS as exc:
            raise InputError(f"{path}: not a readable .npy file ({what}: {reason(exc)})"
                             ) from None
        if not isinstance(array, np.ndarray):
            array.close()
            raise InputError(f"{path}: not a readable .npy file ({what}: an .npz archive)")
    return array


def require_key(data: Mapping[str, Any], key: str, path: PathLike) -> Any:
    """Return ``data[key]`` or raise an :class:`InputError` naming the file and the key."""
    if key not in data:
        found = ", ".join(sorted(data)) or "none"
        raise InputError(f"{path}: missing key {key!r} (found: {found})")
    return data[key]


def load_json_entry(npz: Mapping[str, Any], key: str) -> Any:
    """Decode a dict stored by :func:`save_npz`."""
    return json.loads(str(np.asarray(npz[key])[()]))


# -- writing
@contextmanager
def _cleanup_on_termination() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into ``SystemExit(128 + signum)`` while files are staged, so that
    the ``finally`` clauses that remove temporary files run (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            previous[sig] = signal.signal(sig, terminate)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _name_max(directory: Path) -> int:
    """The longest file name (bytes) the file system of ``directory`` (or its first existing
    ancestor) accepts."""
    for d in (directory, *directory.parents):
        try:
            return os.pathconf(d, "PC_NAME_MAX")
        except (OSError, ValueError):
            continue
    return 255  # pragma: no cover - no ancestor readable


def _check_name(path: Path) -> None:
    """Refuse a path with a component longer than the file system allows."""
    for part in reversed(path.parts):
        size, limit = len(os.fsencode(part)), _name_max(path.parent)
        if size > limit:
            raise InputError(f"{_short(path)}: the name {_short(part)!r} is {size} bytes long, "
                             f"more than the {limit} the file system allows")


def _short(text: Any, keep: int = 60) -> str:
    text = str(text)
    return text if len(text) <= keep else f"{text[:keep]}..."


def _target(path: PathLike) -> Path:
    """The regular file to replace (or create): ``path``, or the file a symbolic link at
    ``path`` points to. Directories, FIFOs, devices, sockets, a name ending in ``/`` and names
    longer than the file system allows are refused."""
    text = os.fspath(path)
    if not text or text.endswith(os.sep):
        raise InputError(f"{text!r}: names a directory, expected a file name")
    path = Path(text)
    _check_name(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(f"{path}: is {_kind(mode)}, not a regular file: cannot write a file "
                         "there")
    return target


def check_output(path: PathLike, create_dirs: bool = False) -> None:
    """Fail early (before a long computation) if ``path`` cannot be written. Its directory
    must exist unless ``create_dirs`` (then the nearest existing ancestor must be writable)."""
    target = _target(path)
    parent = next((p for p in (target.parent, *target.parent.parents) if p.exists()), None)
    try:
        if parent is None or not parent.is_dir():
            raise NotADirectoryError(f"{parent} is not a directory")
        if parent != target.parent and not create_dirs:
            raise InputError(f"{path}: no such directory {str(target.parent)!r} (create it "
                             "first)")
        with tempfile.TemporaryFile(dir=parent):  # removed on close, even if we are killed
            pass
    except OSError as exc:
        raise InputError(f"{path}: cannot write ({exc.strerror or reason(exc)})") from None


def make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing ancestors; return those created, deepest first."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    existing = next((d for d in (directory, *directory.parents) if d.exists()), None)
    if existing is not None and not existing.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{existing} is not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    return missing


def remove_empty(created: Sequence[Path]) -> None:
    """Remove directories made for outputs that were not written (those still empty),
    deepest first."""
    for d in sorted(created, key=lambda d: -len(d.parts)):
        try:
            d.rmdir()
        except OSError:
            break


def _temporary(target: Path) -> tuple[int, str]:
    """A new temporary file beside ``target``: ``.NAME.XXXXXXXX.tmp``, or ``.lppf.XXXXXXXX.tmp``
    when NAME is too long for that (names up to the file system's limit stay writable)."""
    long = len(os.fsencode(target.name)) + 14 > _name_max(target.parent)
    prefix = ".lppf." if long else f".{target.name}."
    return tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=target.parent)


def _stage(path: PathLike, write: Callable[[IO[bytes]], None],
           created: list[Path]) -> tuple[Path, Path]:
    """Write a temporary file beside ``path``'s target; return (temporary, target). Directories
    made on the way are appended to ``created``."""
    target = _target(path)
    try:
        created.extend(make_parents(target.parent))
        fd, tmp = _temporary(target)
    except OSError as exc:
        raise InputError(f"{path}: cannot write ({exc.strerror or reason(exc)})") from None
    try:
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except OSError:
            mode = 0o666 & ~_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise InputError(f"{path}: cannot write ({exc.strerror or reason(exc)})") from None
        raise
    return Path(tmp), target


_HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back until the block ends, then act on them as their
    handlers would have. Python runs signal handlers in the main thread only, so elsewhere
    this holds nothing back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
                for sig in _HELD}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for sig in dict.fromkeys(caught):
            signal.raise_signal(sig)


def _publish(staged: Sequence[tuple[Path, Path]]) -> None:
    """Rename every temporary file onto its target with termination signals held back, so
    that a signal acts before the first rename or after the last. A target that became
    something other than a regular file meanwhile is refused before any rename."""
    with _signals_held():
        for _, target in staged:
            _target(target)
        for tmp, target in staged:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise InputError(f"{target}: cannot write ({exc.strerror or reason(exc)})"
                                 ) from None


def write_files(files: Sequence[tuple[PathLike, Callable[[IO[bytes]], None]]]) -> None:
    """Write several files all or nothing: each ``write(fh)`` fills one temporary file; only
    when all succeeded are they renamed onto their targets, with termination signals held
    back meanwhile. Directories created for them are removed again on failure."""
    staged: list[tuple[Path, Path]] = []
    created: list[Path] = []
    done = False
    with _cleanup_on_termination():
        try:
            for path, write in files:
                staged.append(_stage(path, write, created))
            _publish(staged)
            done = True
        finally:
            for tmp, _ in staged:
                tmp.unlink(missing_ok=True)
            if not done:
                remove_empty(created)


def _npz_payload(arrays: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (json.dumps(v, sort_keys=True) if isinstance(v, Mapping) else v)
            for k, v in arrays.items()}


def npz_writer(compressed: bool = True, **arrays: Any) -> Callable[[IO[bytes]], None]:
    """A writer for :func:`write_files` of an ``.npz`` (dict values stored as JSON)."""
    payload = _npz_payload(arrays)
    return lambda fh: (np.savez_compressed if compressed else np.savez)(fh, **payload)


def text_writer(text: str) -> Callable[[IO[bytes]], None]:
    """A writer for :func:`write_files` of UTF-8 text (encoded before anything is written;
    characters UTF-8 cannot encode, such as undecodable file-name bytes, become escapes)."""
    data = text.encode("utf-8", "backslashreplace")
    return lambda fh: fh.write(data)


def save_npz(path: PathLike, compressed: bool = True, **arrays: Any) -> None:
    """Write ``arrays`` to ``path`` as ``.npz`` atomically.

    Dict values are stored as JSON strings (0-d unicode arrays); read them back with
    :func:`load_json_entry`.
    """
    write_files([(path, npz_writer(compressed, **arrays))])


def save_npy(path: PathLike, array: Any) -> None:
    """Write one array to ``path`` as ``.npy`` atomically."""
    array = np.asarray(array)
    write_files([(path, lambda fh: np.save(fh, array, allow_pickle=False))])


def write_text(path: PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    write_files([(path, text_writer(text))])


__all__ = ["check_output", "load_json_entry", "load_npy", "load_npz",
           "make_parents", "npz_writer", "read_counts", "remove_empty", "require_key",
           "save_npy", "save_npz", "text_writer", "write_files", "write_text"]
