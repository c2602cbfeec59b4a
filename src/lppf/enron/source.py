"""Where the Enron corpus comes from: the CMU URL, a local tarball, or an extracted ``maildir/``.

Downloads resume from a ``.part`` file with an HTTP Range request and are checked against the
expected size and SHA-256 before the file gets its final name. Tarballs are streamed member
by member (``tarfile`` mode ``r|*``); nothing is extracted to disk.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from lppf.io import InputError

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


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One file of the corpus: ``maildir/<owner>/<folder>/<name>`` and its bytes."""

    owner: str
    folder: str
    name: str
    data: bytes | None

    @property
    def path(self) -> str:
        return "/".join(p for p in (self.owner, self.folder, self.name) if p)


def is_url(source: str | os.PathLike[str]) -> bool:
    return str(source).split("://", 1)[0] in ("http", "https", "file", "ftp")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def _open(url: str, offset: int, timeout: float):
    request = urllib.request.Request(url, headers={"Range": f"bytes={offset}-"} if offset else {})
    try:
        return urllib.request.urlopen(request, timeout=timeout)
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InputError(f"cannot download {url} ({reason}); offline? {OFFLINE_HINT}") from None


def _fetch(url: str, part: Path, progress: bool, timeout: float) -> None:
    """Append the missing bytes of ``url`` to ``part`` (restart if the server ignores Range)."""
    offset = part.stat().st_size if part.exists() else 0
    with _open(url, offset, timeout) as response:
        resumed = offset > 0 and getattr(response, "status", None) == 206
        if not resumed:
            offset = 0
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length else None
        with open(part, "ab" if resumed else "wb") as fh, tqdm(
            total=total, initial=offset, unit="B", unit_scale=True, disable=not progress,
            desc=part.name.removesuffix(".part"),
        ) as bar:
            for block in iter(lambda: response.read(_BLOCK), b""):
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
             size: int | None = CMU_SIZE, progress: bool = True, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` via ``dest.part``, resuming, then verify and rename.

    A complete ``dest`` that verifies is reused. On a size or hash mismatch the ``.part`` file
    is deleted (so the next attempt starts afresh) and nothing is left under ``dest``.
    """
    dest = Path(dest)
    if dest.is_file():
        verify(dest, size, sha256)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if not (size is not None and part.is_file() and part.stat().st_size == size):
        _fetch(url, part, progress, timeout)
    try:
        verify(part, size, sha256)
    except InputError as exc:
        part.unlink(missing_ok=True)
        raise InputError(f"download of {url} failed verification: {exc}") from None
    os.replace(part, dest)
    return dest


def resolve(source: str | os.PathLike[str], download_dir: str | os.PathLike[str],
            sha256: str | None = CMU_SHA256, size: int | None = CMU_SIZE,
            progress: bool = True) -> Path:
    """Local path of ``source``: URLs are downloaded into ``download_dir`` first."""
    if is_url(source):
        name = str(source).rstrip("/").rsplit("/", 1)[-1] or "enron.tar.gz"
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


def _iter_dir(root: Path) -> Iterator[RawMessage]:
    if (root / "maildir").is_dir():
        root = root / "maildir"
    for owner in sorted(p for p in root.iterdir() if p.is_dir()):
        for file in sorted(p for p in owner.rglob("*") if p.is_file()):
            where = _split(file.relative_to(root).as_posix())
            if where is not None:
                try:
                    data = file.read_bytes()
                except OSError:
                    data = None  # counted as "skipped: unreadable file"
                yield RawMessage(*where, data)


def iter_raw(path: str | os.PathLike[str]) -> Iterator[RawMessage]:
    """Every file of the corpus at ``path`` (a tarball, ``maildir/`` or its parent), in order."""
    path = Path(path)
    if path.is_dir():
        return _iter_dir(path)
    if path.is_file():
        return _iter_tar(path)
    raise InputError(f"{path}: no such file or directory; {OFFLINE_HINT}")
