"""Where the Enron corpus comes from: the CMU URL, a local tarball, or an extracted ``maildir/``.

Only ``http://`` and ``https://`` sources are downloaded (a local file is given as a path),
at most :data:`DOWNLOAD_LIMIT` bytes (or the expected size). Downloads resume from a ``.part``
file with an HTTP Range request and are checked against the expected size and SHA-256 before
the file gets its final name; a failed download leaves no ``.part`` (unless the connection
broke mid-transfer: then the part is kept for the next attempt to resume) and no directory
made for it. Tarballs are streamed member by member (``tarfile`` mode ``r|*``); nothing is
extracted to disk. A maildir is walked without following symbolic links (the walk stays
inside SOURCE, as in a tarball) and without recursion; unreadable folders, links and
special files are counted in the summary. Files over :data:`MESSAGE_LIMIT` bytes are skipped
unread.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from lppf.io import InputError, _kind, _name_max, check_output, make_parents, remove_empty

CMU_URL = "https://www.cs.cmu.edu/~enron/enron_mail_20150507.tar.gz"
# Published size and SHA-256 of CMU_URL: to be filled. CMU publishes neither; we only verify
# what is set (config keys enron.size / enron.sha256, CLI --size / --sha256).
CMU_SIZE: int | None = None
CMU_SHA256: str | None = None

OFFLINE_HINT = (
    "set enron.source to a local copy of enron_mail_20150507.tar.gz or to an extracted "
    "maildir/ directory, or create the synthetic stand-in with `lppf enron synth-maildir DIR`"
)
_BLOCK = 1 << 20
DOWNLOAD_LIMIT = 4 << 30  # bytes: the CMU tarball is 0.4 GiB
MESSAGE_LIMIT = 64 << 20  # bytes: the largest Enron message file is a few MiB
SCHEMES = ("http", "https")


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One file of the corpus: ``maildir/<owner>/<folder>/<name>`` and its bytes."""

    owner: str
    folder: str
    name: str
    data: bytes | None
    skipped: str = ""  # why it was not read ("unreadable folder", "symbolic link", ...)

    @property
    def path(self) -> str:
        return "/".join(p for p in (self.owner, self.folder, self.name) if p)


def is_url(source: str | os.PathLike[str]) -> bool:
    """``scheme://...`` (any scheme: those not in SCHEMES are refused when downloaded)."""
    scheme, sep, _ = str(source).partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").isalnum()


def check_url(url: str) -> None:
    """Only http(s) URLs are downloaded."""
    scheme = url.partition("://")[0].lower()
    if scheme not in SCHEMES:
        raise InputError(f"{url}: only http:// and https:// sources are downloaded, not "
                         f"{scheme}://; give a local tarball or maildir as a path")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def _open(url: str, offset: int, timeout: float):
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    return urllib.request.urlopen(request, timeout=timeout)


def _fetch(url: str, part: Path, progress: bool, timeout: float, limit: int) -> None:
    """Append the missing bytes of ``url`` to ``part`` (restart if the server ignores Range),
    refusing more than ``limit`` bytes in all."""
    offset = part.stat().st_size if part.exists() else 0
    with _open(url, offset, timeout) as response:
        resumed = offset > 0 and getattr(response, "status", None) == 206
        if not resumed:
            offset = 0
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdecimal() else None
        if total is not None and total > limit:
            raise InputError(f"{url}: {total} bytes, expected {limit} at most")
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_APPEND if resumed else
                                                            os.O_TRUNC)
        with os.fdopen(os.open(part, flags, 0o666), "ab" if resumed else "wb") as fh, tqdm(
            total=total, initial=offset, unit="B", unit_scale=True, disable=not progress,
            desc=part.name.removesuffix(".part"),
        ) as bar:
            for block in iter(lambda: response.read(_BLOCK), b""):
                offset += len(block)
                if offset > limit:
                    raise InputError(f"{url}: more bytes than expected ({limit} at most)")
                fh.write(block)
                bar.update(len(block))


def verify(path: Path, size: int | None, sha256: str | None) -> None:
    """Raise :class:`InputError` if ``path`` does not have the expected size / SHA-256."""
    if size is not None and path.stat().st_size != size:
        raise InputError(f"{path}: size {path.stat().st_size} bytes, expected {size}")
    if sha256 is not None:
        got = sha256_file(path)
        if got != sha256.lower():
            raise InputError(f"{path}: SHA-256 {got}, expected {sha256.lower()}")


def download(url: str, dest: str | os.PathLike[str], sha256: str | None = CMU_SHA256,
             size: int | None = CMU_SIZE, progress: bool = True, timeout: float = 60.0,
             limit: int = DOWNLOAD_LIMIT) -> Path:
    """Download the http(s) ``url`` to ``dest`` via ``dest.part``, resuming, then verify and
    rename. At most ``limit`` bytes (``size`` when given) are accepted.

    A complete ``dest`` that verifies is reused. On any failure the ``.part`` file is deleted
    (so the next attempt starts afresh), except when the connection broke after some bytes
    arrived; nothing is left under ``dest`` and directories made for it are removed.
    """
    check_url(url)
    check_output(dest, create_dirs=True)
    dest = Path(dest)
    if dest.is_file():
        verify(dest, size, sha256)
        return dest
    part = _part(dest)
    if part.is_symlink():
        raise InputError(f"{part}: a symbolic link where the partial download goes; remove it")
    check_output(part, create_dirs=True)
    try:
        created = make_parents(dest.parent)
    except OSError as exc:
        raise InputError(f"{dest}: cannot write ({exc.strerror or exc})") from None
    try:
        if not (size is not None and part.is_file() and part.stat().st_size == size):
            _transfer(url, part, progress, timeout, limit if size is None else size)
        try:
            verify(part, size, sha256)
        except InputError as exc:
            raise InputError(f"download of {url} failed verification: {exc}") from None
        os.replace(part, dest)
    except _Broken as exc:
        raise InputError(str(exc)) from None
    except BaseException:
        part.unlink(missing_ok=True)
        remove_empty(created)
        raise
    return dest


def _part(dest: Path) -> Path:
    """``dest.part``, or ``.<hash of the name>.part`` when that name would be too long."""
    part = dest.with_name(dest.name + ".part")
    if len(os.fsencode(part.name)) <= _name_max(dest.parent):
        return part
    return dest.with_name(f".{hashlib.sha256(os.fsencode(dest.name)).hexdigest()[:16]}.part")


class _Broken(Exception):
    """The connection broke mid-transfer: the ``.part`` file is kept for resuming."""


def _transfer(url: str, part: Path, progress: bool, timeout: float, limit: int) -> None:
    """:func:`_fetch`; a network failure is :class:`_Broken` if ``part`` holds bytes."""
    try:
        _fetch(url, part, progress, timeout, limit)
    except (OSError, http.client.HTTPException) as exc:
        reason = " ".join(str(getattr(exc, "reason", exc)).split()) or type(exc).__name__
        if part.exists() and part.stat().st_size > 0:
            raise _Broken(f"download of {url} broke after {part.stat().st_size} bytes "
                          f"({reason}); run again to resume from {part}") from None
        raise InputError(f"cannot download {url} ({reason}); offline? {OFFLINE_HINT}"
                         ) from None


def resolve(source: str | os.PathLike[str], download_dir: str | os.PathLike[str],
            sha256: str | None = CMU_SHA256, size: int | None = CMU_SIZE,
            progress: bool = True) -> Path:
    """Local path of ``source``: URLs are downloaded into ``download_dir`` first."""
    if is_url(source):
        check_url(str(source))
        name = urllib.parse.urlsplit(str(source)).path.rstrip("/").rsplit("/", 1)[-1]
        name = name if name not in ("", ".", "..") else "enron.tar.gz"
        return download(str(source), Path(download_dir) / name, sha256, size, progress)
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory; {OFFLINE_HINT}")
    return path


def _split(relpath: str) -> tuple[str, str, str] | None:
    """``maildir/owner/folder/.../name`` -> (owner, folder, name); None outside a mailbox."""
    parts = [p for p in relpath.replace("\\", "/").split("/") if p not in ("", ".")]
    if parts and parts[0] == "maildir":
        parts = parts[1:]
    if len(parts) < 2:
        return None
    return parts[0], "/".join(parts[1:-1]), parts[-1]


def _iter_tar(path: Path) -> Iterator[RawMessage]:
    """Members of a tarball, streamed. ``tarfile`` takes the end of the data for the end of
    the archive, so a file cut at a member boundary would read as complete: the
    end-of-archive marker (a zero block after the last member) is required."""
    try:
        with tarfile.open(path, mode="r|*") as tar:
            for member in tar:
                where = _split(member.name) if member.isfile() else None
                if where is None:
                    continue
                if member.size > MESSAGE_LIMIT:
                    yield RawMessage(*where, None, f"file over {MESSAGE_LIMIT} bytes")
                    continue
                fh = tar.extractfile(member)
                yield RawMessage(*where, fh.read() if fh else b"")
            if tar.fileobj.tell() < tar.offset + tarfile.BLOCKSIZE:
                raise InputError(f"{path}: truncated tarball (no end-of-archive marker after "
                                 f"{tar.offset} bytes)")
    except (tarfile.TarError, EOFError, OSError, ValueError, zlib.error) as exc:
        if isinstance(exc, InputError):
            raise
        text = " ".join(str(exc).split())
        raise InputError(f"{path}: not a readable tarball ({type(exc).__name__}: {text})"
                         ) from None


def _read(path: str) -> bytes | None:
    """The bytes of a regular file of at most MESSAGE_LIMIT bytes, None if unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with open(fd, "rb") as fh:
            size = os.fstat(fd).st_size
            data = fh.read(size + 1) if size <= MESSAGE_LIMIT else None
    except OSError:
        return None
    return data if data is not None and len(data) <= MESSAGE_LIMIT else None


def _entries(directory: str) -> list[os.DirEntry] | None:
    """The entries of ``directory`` sorted by name, None if it cannot be listed."""
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return None


def _skip(entry: os.DirEntry) -> str:
    """Why an entry is not read: "" for a regular file or a directory."""
    try:
        if entry.is_symlink():
            return "symbolic link"
        if entry.is_dir(follow_symlinks=False):
            return ""
        if not entry.is_file(follow_symlinks=False):
            return "not a regular file"
        if entry.stat(follow_symlinks=False).st_size > MESSAGE_LIMIT:
            return f"file over {MESSAGE_LIMIT} bytes"
    except OSError:
        return "unreadable file"
    return ""


def _iter_dir(root: Path) -> Iterator[RawMessage]:
    """Files under ``root`` (or ``root/maildir``) in path order, walked with a stack (any
    depth) without following symbolic links."""
    if (root / "maildir").is_dir() and not (root / "maildir").is_symlink():
        root = root / "maildir"
    stack = [(str(root), "")]
    while stack:
        directory, rel = stack.pop()
        entries = _entries(directory)
        if entries is None:
            yield RawMessage(*(_split(f"{rel}/.") or (rel, "", "")), None,
                             "unreadable folder")
            continue
        below = []
        for entry in entries:
            relpath = f"{rel}/{entry.name}" if rel else entry.name
            where, why = _split(relpath), _skip(entry)
            if why == "" and entry.is_dir(follow_symlinks=False):
                below.append((entry.path, relpath))
            elif why:
                yield RawMessage(*(where or (relpath, "", "")), None, why)
            elif where is not None:
                yield RawMessage(*where, _read(entry.path))
        stack.extend(reversed(below))


def iter_raw(path: str | os.PathLike[str]) -> Iterator[RawMessage]:
    """Every file of the corpus at ``path`` (a tarball, ``maildir/`` or its parent), in order."""
    path = Path(path)
    if path.is_dir():
        return _iter_dir(path)
    if path.is_file():
        return _iter_tar(path)
    if path.exists():
        raise InputError(f"{path}: is {_kind(path.stat().st_mode)}, expected a tarball or a "
                         "maildir directory")
    raise InputError(f"{path}: no such file or directory; {OFFLINE_HINT}")
