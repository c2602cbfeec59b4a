"""Sources: resumable verified downloads from a local HTTP server, tarball streaming."""

import hashlib
import http.server
import sys
import tarfile
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from lppf.cli import main
from lppf.enron.source import download, iter_raw, resolve

PAYLOAD = bytes(range(256)) * 4000  # ~1 MB


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD, honouring ``Range: bytes=N-``; records the ranges asked for."""

    ranges: ClassVar[list[str | None]] = []
    honour_range = True

    def do_GET(self):
        start = 0
        asked = self.headers.get("Range")
        type(self).ranges.append(asked)
        if asked and self.honour_range:
            start = int(asked.removeprefix("bytes=").rstrip("-"))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        else:
            self.send_response(200)
        body = PAYLOAD[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    """A client that stops reading on purpose (a size mismatch) is no error to report: the
    default report goes to stderr, where a test of the CLI's one-line errors reads."""

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def server():
    RangeHandler.ranges = []
    RangeHandler.honour_range = True
    httpd = Server(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/enron.tar.gz"
    httpd.shutdown()
    httpd.server_close()


SHA = hashlib.sha256(PAYLOAD).hexdigest()


def test_download_verifies_and_renames(server, tmp_path):
    dest = download(server, tmp_path / "c.tgz", sha256=SHA, size=len(PAYLOAD), progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert not (tmp_path / "c.tgz.part").exists()
    assert RangeHandler.ranges == [None]


def test_download_resumes_from_part_file(server, tmp_path):
    (tmp_path / "c.tgz.part").write_bytes(PAYLOAD[:300_000])
    dest = download(server, tmp_path / "c.tgz", sha256=SHA, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert RangeHandler.ranges == ["bytes=300000-"]


def test_download_restarts_when_server_ignores_range(server, tmp_path):
    RangeHandler.honour_range = False
    (tmp_path / "c.tgz.part").write_bytes(b"stale bytes")
    dest = download(server, tmp_path / "c.tgz", sha256=SHA, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert RangeHandler.ranges == ["bytes=11-"]


def test_hash_mismatch_leaves_no_file(server, tmp_path):
    with pytest.raises(ValueError, match="SHA-256"):
        download(server, tmp_path / "c.tgz", sha256="0" * 64, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_size_mismatch_via_cli_is_one_line_error(server, tmp_path, capsys):
    code = main(["enron", "download", server, str(tmp_path / "c.tgz"), "--size", "5",
                 "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("lppf: error:") and "expected 5" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_offline_error_names_the_alternatives(tmp_path):
    with pytest.raises(ValueError, match="synth-maildir"):
        download("http://127.0.0.1:9/enron.tar.gz", tmp_path / "c.tgz", progress=False,
                 timeout=5)
    with pytest.raises(ValueError, match="maildir"):
        resolve(tmp_path / "missing.tar.gz", tmp_path)


def test_resolve_downloads_http_and_refuses_other_schemes(server, tmp_path):
    got = resolve(server, tmp_path / "dl", sha256=SHA, size=len(PAYLOAD), progress=False)
    assert got == tmp_path / "dl" / "enron.tar.gz" and got.read_bytes() == PAYLOAD
    src = tmp_path / "src.bin"
    src.write_bytes(PAYLOAD)
    for url in (src.as_uri(), "ftp://127.0.0.1/x.tgz", "gopher://h/x"):
        with pytest.raises(ValueError, match="only http:// and https://"):
            resolve(url, tmp_path / "dl2", progress=False)
    assert not (tmp_path / "dl2").exists()


def test_tarball_stream_equals_directory(tmp_path):
    files = {"maildir/a-b/inbox/1.": b"one", "maildir/a-b/inbox/sub/2.": b"two",
             "maildir/c-d/sent/1.": b"three", "maildir/README": b"not a message"}
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    with tarfile.open(tmp_path / "m.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "maildir", arcname="maildir")
    from_dir = sorted(iter_raw(tmp_path), key=lambda m: m.path)
    from_tar = sorted(iter_raw(tmp_path / "m.tar.gz"), key=lambda m: m.path)
    assert from_dir == from_tar
    assert [(m.owner, m.folder, m.data) for m in from_dir] == [
        ("a-b", "inbox", b"one"), ("a-b", "inbox/sub", b"two"), ("c-d", "sent", b"three")]


def test_not_a_tarball_is_input_error(tmp_path):
    bad = Path(tmp_path / "bad.tar.gz")
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match="not a readable tarball"):
        list(iter_raw(bad))


def test_downloads_are_bounded_and_leave_nothing_on_failure(server, tmp_path):
    dest = tmp_path / "new" / "deeper" / "c.tgz"
    with pytest.raises(ValueError, match="1000 at most"):
        download(server, dest, progress=False, limit=1000)
    RangeHandler.honour_range = False
    with pytest.raises(ValueError, match="expected 10 at most"):
        download(server, dest, size=10, progress=False)
    with pytest.raises(ValueError, match="synth-maildir"):  # offline: no directory made
        download("http://127.0.0.1:9/x.tgz", dest, progress=False, timeout=5)
    assert list(tmp_path.iterdir()) == []


def test_a_download_onto_a_directory_or_special_file_is_refused(server, tmp_path):
    (tmp_path / "d.tgz").mkdir()
    with pytest.raises(ValueError, match="a directory"):
        download(server, tmp_path / "d.tgz", progress=False)
    code = main(["enron", "download", server, f"{tmp_path}/", "--quiet"])
    assert code == 2
    import os

    os.mkfifo(tmp_path / "f.tgz")
    with pytest.raises(ValueError, match="a FIFO"):
        download(server, tmp_path / "f.tgz", progress=False)
    (tmp_path / "x.tgz.part").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match=r"x\.tgz\.part"):  # never written through a link
        download(server, tmp_path / "x.tgz", progress=False)
    assert not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.tgz", "f.tgz", "x.tgz.part"]


def test_a_file_url_makes_no_copy(tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    code = main(["enron", "network", secret.as_uri(), str(tmp_path / "net.npz"), "--quiet"])
    assert code == 2 and "only http:// and https://" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.txt"]


def test_a_download_name_up_to_the_limit_is_written(server, tmp_path):
    dest = download(server, tmp_path / ("n" * 255), sha256=SHA, progress=False)
    assert [p.name for p in tmp_path.iterdir()] == [dest.name] and dest.stat().st_size
