"""A small synthetic maildir in the layout and header style of the CMU Enron release.

Fake people (``first.last@enron.com``), some of them mailbox owners, exchange emails whose
authored text comes from a small topic model (each email a Dirichlet(0.2) mixture of topics of
pseudo-words, plus stopwords). Like the real corpus it has copies of one email across
folders and mailboxes (with different Message-IDs, line endings, transfer encodings and
address spellings), ``Bcc`` repeating ``Cc``, quoted replies, forwards and signatures, X.500
recipients, and a few malformed files. Every file carries ``X-Synthetic: yes``; the
directory gets a README. :func:`write_synthetic_maildir` returns the ground truth.
"""

from __future__ import annotations

import base64
import os
import quopri
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import numpy as np
from gensim.parsing.preprocessing import STOPWORDS

from lppf.enron.parse import EXCLUDED_FOLDERS
from lppf.io import (
    InputError,
    _cleanup_on_termination,
    check_output,
    make_parents,
    remove_empty,
    write_text,
)

_CONS, _VOWELS = "bdfgklmnprstvz", "aeiou"
_FILLER = ("the", "and", "we", "to", "of", "is", "it", "for", "this", "that")
_SENT_STYLES = (("sent",), ("_sent_mail",), ("sent_items",), ("_sent_mail", "sent"))
_PST = timezone(timedelta(hours=-8))
README = """SYNTHETIC DATA - NOT THE ENRON CORPUS

Written by `lppf enron synth-maildir` (seed {seed}) in the layout of the CMU release
(maildir/<owner>/<folder>/<N>.). People, addresses and texts are invented; every message
has the header `X-Synthetic: yes`. Bodies come from a topic model with {topics} topics over
pseudo-words. It is the offline stand-in for the real corpus in tests and in the default
pipeline.
"""


@dataclass
class SynthTruth:
    """What the generator wrote, in the normalized form the parser should recover."""

    n_emails: int = 0                     # unique emails
    n_files: int = 0                      # message files written (all folders)
    n_excluded: int = 0                   # files in EXCLUDED_FOLDERS
    malformed: Counter[str] = field(default_factory=Counter)  # skip reason -> files
    edges: Counter[tuple[str, str]] = field(default_factory=Counter)
    sent: Counter[str] = field(default_factory=Counter)
    received: Counter[str] = field(default_factory=Counter)
    owners: dict[str, str] = field(default_factory=dict)      # mailbox -> address
    # path of the first sent-folder copy of each owner-written email -> its authored tokens
    documents: dict[str, Counter[str]] = field(default_factory=dict)
    topics: list[list[str]] = field(default_factory=list)


def _words(rng: np.random.Generator, n: int, syllables: tuple[int, int], taken: set[str]):
    out: list[str] = []
    while len(out) < n:
        k = int(rng.integers(*syllables))
        w = "".join(rng.choice(list(_CONS)) + rng.choice(list(_VOWELS)) for _ in range(k))
        if w not in taken and w not in STOPWORDS:
            taken.add(w)
            out.append(w)
    return out


def _fold(addrs: list[str]) -> str:
    """Comma list folded like the corpus (``, \\n\\t`` every three addresses)."""
    return ", \n\t".join(", ".join(addrs[i:i + 3]) for i in range(0, len(addrs), 3))


def _spell(addr: str, rng: np.random.Generator) -> str:
    """One of the spellings of ``addr`` seen in the corpus (all normalize back to it)."""
    u = rng.random()
    if u < 0.7 or "@" not in addr:
        return addr
    if u < 0.8:
        first, last = addr.split("@")[0].split(".")
        return f'"{last.title()}, {first.title()}" <{addr}>'
    if u < 0.9:
        return addr.upper()
    first, last = addr.split("@")[0].split(".")
    return f"{last}'.'{first}@enron.com"


@dataclass
class _Mail:
    sender: str
    to: list[str]
    cc: list[str]
    bcc: list[str]
    date: datetime
    subject: str
    text: str           # full body, as the sender wrote it
    tokens: Counter[str]  # authored topic words


def _body(rng, topics, n_tokens, quote_words, signature):
    """Authored text of ``n_tokens`` topic words (+ stopwords), then quoted material."""
    theta = rng.dirichlet(np.full(len(topics), 0.2))
    z = rng.choice(len(topics), size=n_tokens, p=theta)
    words = [topics[k][int(rng.zipf(1.6)) % len(topics[k])] for k in z]
    tokens = Counter(words)
    out = []
    for w in words:
        out.append(w)
        if rng.random() < 0.3:
            out.append(str(rng.choice(_FILLER)))
    lines = [" ".join(out[i:i + 11]) for i in range(0, len(out), 11)]
    if rng.random() < 0.15:
        lines = ["> " + " ".join(quote_words[:6]), ">", *lines]
    tail = rng.random()
    if tail < 0.2:
        lines += ["", " -----Original Message-----", "From: \tSomeone, Else",
                  "Sent:\tMonday, May 14, 2001 9:00 AM", "To:\tSomebody", "",
                  " ".join(quote_words)]
    elif tail < 0.35:
        lines += ["", "---------------------- Forwarded by X Y/HOU/ECT on 05/14/2001 "
                  "09:00 AM ---------------------------", "", " ".join(quote_words)]
    elif tail < 0.45:
        lines += ["", "-- ", signature, "Phone 713-853-0000 " + " ".join(quote_words[:3])]
    return "\n".join(lines) + "\n", tokens


def _encode(text: str, rng: np.random.Generator) -> tuple[str, str, bytes]:
    """(charset, transfer encoding, payload bytes) in one of the corpus's styles."""
    u = rng.random()
    charset = "iso-8859-1" if not text.isascii() else (
        "us-ascii" if u < 0.5 else "ANSI_X3.4-1968")
    raw = text.encode("latin-1")
    if u < 0.1:
        return charset, "quoted-printable", quopri.encodestring(raw)
    if u < 0.14:
        return charset, "base64", base64.encodebytes(raw)
    if charset == "iso-8859-1":
        return charset, "8bit", raw
    return charset, "7bit", raw


def _render(mail: _Mail, copy_id: int, owner: str, folder: str, crlf: bool,
            rng: np.random.Generator) -> bytes:
    charset, cte, payload = _encode(mail.text, rng)
    spell = [_spell(a, rng) for a in mail.to]
    headers = [f"Message-ID: <{copy_id}.1075855{copy_id:06d}.JavaMail.evans@thyme>",
               f"Date: {format_datetime(mail.date)} (PST)", f"From: {mail.sender}"]
    if spell:
        headers.append(f"To: {_fold(spell)}")
    headers.append(f"Subject: {mail.subject}")
    if mail.cc:
        headers.append(f"Cc: {_fold([_spell(a, rng) for a in mail.cc])}")
    headers += ["Mime-Version: 1.0", f"Content-Type: text/plain; charset={charset}",
                f"Content-Transfer-Encoding: {cte}"]
    if mail.bcc:
        headers.append(f"Bcc: {_fold(mail.bcc)}")
    headers += [f"X-From: {mail.sender}", f"X-To: {', '.join(mail.to)}",
                f"X-cc: {', '.join(mail.cc)}", "X-bcc: ",
                f"X-Folder: \\{owner}\\{folder}", f"X-Origin: {owner.upper()}",
                f"X-FileName: {owner}.pst", "X-Synthetic: yes"]
    eol = "\r\n" if crlf else "\n"
    return (eol.join(headers) + eol + eol).encode("ascii") + payload


def _malformed(owner: str, k: int) -> dict[str, bytes]:
    """Files the parser must skip, by the reason it should give."""
    base = (f"Message-ID: <bad{k}.JavaMail.evans@thyme>\nDate: Mon, 14 May 2001 09:00:00 "
            f"-0700 (PDT)\n")
    return {
        "no usable sender": (base + "To: someone@enron.com\nSubject: no sender\n"
                             "X-Synthetic: yes\n\nbody\n").encode(),
        "broken header block": (base + f"From: a.b@enron.com\nTo: {owner}@enron.com\n"
                                "Subject: broken\nsubject line\nX-Synthetic: yes\n\nbody\n"
                                ).encode(),
        "empty file": b"\n",
        "no parseable date": (b"Date: someday\nFrom: a.b@enron.com\nTo: c.d@enron.com\n"
                              b"X-Synthetic: yes\n\nbody\n"),
    }


def _people(rng, n_people, taken):
    firsts = _words(rng, n_people, (2, 3), taken)
    lasts = _words(rng, n_people, (2, 4), taken)
    return [f"{f}.{ln}@enron.com" for f, ln in zip(firsts, lasts, strict=True)]


def _mailbox(addr: str) -> str:
    first, last = addr.split("@")[0].split(".")
    return f"{last}-{first[0]}"


def _emails(rng, people, owners, topics, n_emails, start):
    """Unique emails: senders and recipients by activity weights, owners more active."""
    weight = rng.gamma(2.0, 1.0, len(people))
    weight[: len(owners)] *= 2
    p = weight / weight.sum()
    quote_words = [w for t in topics for w in t[-3:]]
    mails = []
    for n in range(n_emails):
        sender = int(rng.choice(len(people), p=p))
        q = p.copy()
        q[sender] = 0
        k = min(1 + int(rng.poisson(1.5)), len(people) - 1)
        rec = [int(r) for r in rng.choice(len(people), size=k, replace=False, p=q / q.sum())]
        if sender >= len(owners) and min(rec) >= len(owners):
            rec[0] = int(rng.integers(len(owners)))  # someone must keep a copy
            rec = list(dict.fromkeys(rec))
        n_cc = int(rng.integers(len(rec))) if rng.random() < 0.4 else 0
        to = [people[r] for r in rec[: len(rec) - n_cc]]
        cc = [people[r] for r in rec[len(rec) - n_cc:]]
        bcc = list(cc) if cc else ([people[rec[0]]] if rng.random() < 0.05 else [])
        if bcc and not cc:
            to = to[1:] or to  # a genuine Bcc-only recipient (unless it is the only one)
        if rng.random() < 0.05:
            cc.append("/o=enron/ou=na/cn=recipients/cn=notesaddr/cn=a4780")
        n_tokens = int(rng.integers(5, 45)) if rng.random() < 0.4 else int(rng.integers(50, 160))
        signature = "Jos\u00e9" if rng.random() < 0.2 else "Regards"
        text, tokens = _body(rng, topics, n_tokens, rng.permutation(quote_words)[:12].tolist(),
                             signature)
        date = start + timedelta(minutes=37 * n + int(rng.integers(30)))
        mails.append(_Mail(people[sender], to, cc, bcc, date, f"topic note {n}", text, tokens))
    return mails


def _locations(mail, owner_of, sent_style, rng):
    """(mailbox, folder) of each copy of ``mail``."""
    locs = []
    if mail.sender in owner_of:
        box = owner_of[mail.sender]
        locs += [(box, f) for f in sent_style[box]]
        if rng.random() < 0.5:
            locs.append((box, "all_documents"))
        if rng.random() < 0.2:
            locs.append((box, "discussion_threads"))
    for r in dict.fromkeys(mail.to + mail.cc + mail.bcc):
        if r in owner_of and r != mail.sender:
            box = owner_of[r]
            locs.append((box, "inbox"))
            if rng.random() < 0.5:
                locs.append((box, "all_documents"))
            if rng.random() < 0.3:
                locs.append((box, "deleted_items"))
            if rng.random() < 0.2:
                locs.append((box, "notes_inbox"))
    return locs


def write_synthetic_maildir(out_dir: str | os.PathLike[str], seed: int = 0, people: int = 40,
                            owners: int = 10, emails: int = 2000, topics: int = 6,
                            words_per_topic: int = 50) -> SynthTruth:
    """Write ``out_dir/maildir/<owner>/<folder>/<N>.`` and ``out_dir/README.md``."""
    if not 1 <= owners <= people or people < 3 or emails < 1 or topics < 1 or words_per_topic < 4:
        raise InputError(f"bad synthetic maildir size: people={people}, owners={owners}, "
                         f"emails={emails}, topics={topics}, words_per_topic={words_per_topic}")
    root = Path(out_dir) / "maildir"
    if root.is_symlink() or (root.exists() and not (root.is_dir() and not any(root.iterdir()))):
        raise InputError(f"{root}: already exists and is not an empty directory")
    rng = np.random.default_rng(seed)
    taken = set(_FILLER)
    addrs = _people(rng, people, taken)
    topic_words = [_words(rng, words_per_topic, (2, 4), taken) for _ in range(topics)]
    owner_of = {a: _mailbox(a) for a in addrs[:owners]}
    sent_style = {b: _SENT_STYLES[i % len(_SENT_STYLES)] for i, b in enumerate(owner_of.values())}
    crlf = {b: i % 2 == 1 for i, b in enumerate(owner_of.values())}
    truth = SynthTruth(owners={b: a for a, b in owner_of.items()}, topics=topic_words)
    start = datetime(2000, 6, 1, 8, 0, tzinfo=_PST)
    files: dict[tuple[str, str], list[bytes]] = {}
    for mail in _emails(rng, addrs, list(owner_of), topic_words, emails, start):
        rec = set(mail.to + mail.cc + mail.bcc) & set(addrs)
        truth.n_emails += 1
        truth.sent[mail.sender] += 1
        truth.received.update(rec)
        truth.edges.update((mail.sender, r) for r in rec)
        for box, folder in _locations(mail, owner_of, sent_style, rng):
            data = _render(mail, truth.n_files, box, folder, crlf[box], rng)
            files.setdefault((box, folder), []).append(data)
            truth.n_files += 1
            truth.n_excluded += folder in EXCLUDED_FOLDERS
            if mail.sender in owner_of and folder == sent_style[box][0]:
                path = f"{box}/{folder}/{len(files[box, folder])}."
                truth.documents[path] = mail.tokens
    for k, box in enumerate(list(owner_of.values())[:2]):
        for reason, data in _malformed(box, k).items():
            files.setdefault((box, "inbox"), []).append(data)
            truth.malformed[reason] += 1
            truth.n_files += 1
    _write_staged(Path(out_dir), files, README.format(seed=seed, topics=topics))
    return truth


def _write_staged(out_dir: Path, files: dict[tuple[str, str], list[bytes]],
                  readme: str) -> None:
    """Write the maildir into a hidden directory beside it, then rename it into place (all or
    nothing: on any error or termination signal the staged files and directories made are
    removed)."""
    check_output(out_dir / "README.md", create_dirs=True)
    try:
        created = make_parents(out_dir)
        stage = Path(tempfile.mkdtemp(prefix=".maildir.", dir=out_dir))
    except OSError as exc:
        raise InputError(f"{out_dir}: cannot write ({exc.strerror or exc})") from None
    done = moved = False
    with _cleanup_on_termination():
        try:
            for (box, folder), datas in files.items():
                (stage / box / folder).mkdir(parents=True, exist_ok=True)
                for n, data in enumerate(datas, start=1):
                    (stage / box / folder / f"{n}.").write_bytes(data)
            os.replace(stage, out_dir / "maildir")
            moved = True
            write_text(out_dir / "README.md", readme)
            done = True
        except OSError as exc:
            raise InputError(f"{out_dir}: cannot write ({exc.strerror or exc})") from None
        finally:
            if not done:
                shutil.rmtree(stage, ignore_errors=True)
                if moved:
                    shutil.rmtree(out_dir / "maildir", ignore_errors=True)
                remove_empty(created)
