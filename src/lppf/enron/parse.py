"""Parse raw Enron messages, normalize addresses, and remove duplicate copies of one email.

Rules (see docs/enron.md, "Parsing rules"):

* Addresses: lower case; display names, ``<...>``, ``mailto:`` and surrounding quotes
  stripped; the quoting artifact ``last'.'first@dom`` becomes ``first.last@dom``; X.500
  forms (``/o=enron/ou=.../cn=...``) and anything without a single ``@``, with an empty or
  dot-bounded local part or a dotless domain are dropped (cannot be mapped to a person).
* Recipients: the set To | Cc | Bcc minus the sender; each counted once per email, so a Bcc
  that repeats Cc (an artifact of the release) adds nothing.
* Duplicates: two files are one email if they agree on sender, sorted recipients, date (UTC
  seconds) and the SHA-1 of the body with all whitespace runs collapsed (so LF/CRLF and
  re-wrapping do not matter). The copy kept is one in a sent folder if any, else the one
  with the smallest path.
* Malformed files (broken header block, no usable sender, no parseable date, undecodable,
  unparseable) and files whose names are not valid UTF-8 are counted by reason and skipped;
  a source without a single usable email is an error.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from email import policy
from email.errors import MissingHeaderBodySeparatorDefect
from email.header import decode_header, make_header
from email.message import Message
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime

from tqdm import tqdm

from lppf.enron.source import RawMessage, iter_raw
from lppf.validation import InputError

EXCLUDED_FOLDERS = frozenset({"all_documents", "discussion_threads"})
SENT_FOLDERS = frozenset({"sent", "sent_items", "_sent_mail", "_sent", "sent_mail"})
FALLBACK_CHARSETS = ("utf-8", "cp1252", "latin-1")

_PARSER = BytesParser(policy=policy.compat32)
_X500 = re.compile(r"^/?o=|/ou=|/cn=")
_QUOTED_LAST_FIRST = re.compile(r"^'?([^'.@]+)'\.'([^'.@]+)'?$")
_SIMPLE = r"[^\s\"<>(),;:@\\]+@[^\s\"<>(),;:@\\]+"
_SIMPLE_LIST = re.compile(rf"\s*{_SIMPLE}(\s*,\s*{_SIMPLE})*\s*,?\s*")


class MalformedMessage(ValueError):
    """A file that is not a usable email; ``str(exc)`` is the reason counted in summaries."""


@dataclass(frozen=True, slots=True)
class Email:
    """One parsed email. ``date`` is UTC seconds since the epoch; ``body`` may be dropped."""

    owner: str
    folder: str
    path: str
    message_id: str
    date: float
    sender: str
    recipients: tuple[str, ...]
    subject: str
    body_sha1: str
    body: str = ""

    @property
    def in_sent_folder(self) -> bool:
        return self.folder.split("/", 1)[0] in SENT_FOLDERS

    def key(self) -> tuple[str, tuple[str, ...], float, str]:
        """Duplicate key: sender, sorted recipients, date, hash of the normalized body."""
        return self.sender, self.recipients, self.date, self.body_sha1


def normalize_address(addr: str) -> str | None:
    """Canonical form of one address, or None if it cannot be mapped to a mailbox."""
    a = addr.strip().strip("<>").strip().lower()
    a = a.removeprefix("mailto:").strip("\"' \t")
    if not a or _X500.search(a) or a.count("@") != 1:
        return None
    local, domain = a.split("@")
    swapped = _QUOTED_LAST_FIRST.match(local)
    if swapped:
        local = f"{swapped.group(2)}.{swapped.group(1)}"
    local = local.strip("'\"")
    if (not local or local[0] == "." or local[-1] == "." or " " in local
            or "." not in domain or domain[0] == "." or " " in domain):
        return None
    return f"{local}@{domain}"


def _split_addresses(value: str) -> list[str]:
    """Address specs of one header value; bare comma lists (most of the corpus) are split
    directly, anything else goes through :func:`email.utils.getaddresses`."""
    if _SIMPLE_LIST.fullmatch(value):
        return value.split(",")
    return [addr for _, addr in getaddresses([" ".join(value.split())])]


def parse_addresses(values: Iterable[str]) -> list[str]:
    """Normalized addresses of header values (comma lists, display names allowed)."""
    out = []
    for value in values:
        for addr in _split_addresses(value):
            norm = normalize_address(addr)
            if norm is not None:
                out.append(norm)
    return out


def _decode(payload: bytes, charset: str | None) -> str:
    for cs in (charset, *FALLBACK_CHARSETS):
        if cs is None:
            continue
        try:
            return payload.decode(cs)
        except (LookupError, UnicodeDecodeError):
            continue
    return payload.decode("latin-1")  # unreachable: latin-1 decodes any bytes


def decode_body(msg: Message) -> str:
    """Text of all ``text/plain`` parts (or the single non-multipart payload), decoded."""
    parts = [p for p in msg.walk() if not p.is_multipart()]
    texts = [p for p in parts if p.get_content_type() == "text/plain"] or parts[:1]
    return "\n".join(_decode(p.get_payload(decode=True) or b"", p.get_content_charset())
                     for p in texts)


def _header(msg: Message, name: str) -> str:
    value = msg.get(name)
    if value is None:
        return ""
    try:
        return str(make_header(decode_header(str(value))))
    except (UnicodeError, LookupError, ValueError):
        return str(value)


def body_hash(body: str) -> str:
    return hashlib.sha1(" ".join(body.split()).encode("utf-8", "surrogatepass")).hexdigest()


# What the standard library raises on hostile input it was not written for; one such message
# is a counted skip ("skipped: unparseable (TypeError)"), never the end of a parse.
_PARSE_ERRORS = (TypeError, ValueError, LookupError, AttributeError, AssertionError,
                 UnicodeError, OverflowError, RecursionError)


def parse_message(raw: RawMessage, keep_body: bool = True) -> Email:
    """Parse one file; raise :class:`MalformedMessage` naming why it is unusable."""
    try:
        return _parse(raw, keep_body)
    except MalformedMessage:
        raise
    except _PARSE_ERRORS as exc:
        raise MalformedMessage(f"unparseable ({type(exc).__name__})") from None


def _parse(raw: RawMessage, keep_body: bool) -> Email:
    if raw.data is None:
        raise MalformedMessage("unreadable file")
    if not raw.data.strip():
        raise MalformedMessage("empty file")
    msg = _PARSER.parsebytes(raw.data)
    if any(isinstance(d, MissingHeaderBodySeparatorDefect) for d in msg.defects):
        raise MalformedMessage("broken header block")
    senders = parse_addresses(str(v) for v in msg.get_all("From", []))
    if not senders:
        raise MalformedMessage("no usable sender")
    try:
        date = parsedate_to_datetime(str(msg.get("Date", ""))).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        raise MalformedMessage("no parseable date") from None
    try:
        body = decode_body(msg)
    except (LookupError, ValueError, AssertionError):
        raise MalformedMessage("undecodable body") from None
    fields = [str(v) for h in ("To", "Cc", "Bcc") for v in msg.get_all(h, [])]
    recipients = tuple(sorted(set(parse_addresses(fields)) - {senders[0]}))
    return Email(raw.owner, raw.folder, raw.path, _header(msg, "Message-ID").strip(), date,
                 senders[0], recipients, _header(msg, "Subject"), body_hash(body),
                 body if keep_body else "")


@dataclass
class Corpus:
    """Unique emails of a source and a summary of what was read, skipped and removed."""

    emails: list[Email]
    summary: Counter[str] = field(default_factory=Counter)


def _encodable(path: str) -> bool:
    """False for a file name whose bytes were not valid UTF-8 (kept as surrogate escapes)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _preferred(new: Email, old: Email) -> bool:
    return (not new.in_sent_folder, new.path) < (not old.in_sent_folder, old.path)


def read_corpus(source: str | os.PathLike[str],
                exclude_folders: Iterable[str] = EXCLUDED_FOLDERS,
                keep_body: Callable[[RawMessage], bool] | None = None,
                progress: bool = False) -> Corpus:
    """Parse every file of ``source`` (tarball or maildir) into unique emails.

    Files whose top-level folder is in ``exclude_folders`` are not parsed. ``keep_body``
    decides per file whether the decoded body is kept in memory (default: always).
    """
    excluded = frozenset(exclude_folders)
    summary: Counter[str] = Counter()
    unique: dict[tuple, Email] = {}
    for raw in tqdm(iter_raw(source), unit=" files", disable=not progress):
        if raw.skipped:  # links, special files, unreadable folders, huge files
            summary[f"skipped: {raw.skipped}"] += 1
            continue
        summary["files read"] += 1
        if not _encodable(raw.path):
            summary["skipped: undecodable file name"] += 1
            continue
        if raw.folder.split("/", 1)[0] in excluded:
            summary["skipped: excluded folder"] += 1
            continue
        try:
            mail = parse_message(raw, keep_body is None or keep_body(raw))
        except MalformedMessage as exc:
            summary[f"skipped: {exc}"] += 1
            continue
        summary["parsed"] += 1
        key = mail.key()
        old = unique.get(key)
        if old is None:
            unique[key] = mail
            continue
        summary["duplicates removed"] += 1
        if _preferred(mail, old):
            unique[key] = mail
    emails = sorted(unique.values(), key=lambda e: e.path)
    summary["unique emails"] = len(emails)
    if not emails:
        found = ", ".join(f"{k}: {v}" for k, v in sorted(summary.items()))
        raise InputError(f"{source}: no usable email ({found or 'no files'})")
    return Corpus(emails, summary)
