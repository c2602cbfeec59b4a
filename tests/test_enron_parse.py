"""Parsing of crafted messages: recipients, encodings, broken headers, duplicates."""

import base64
import os
import quopri

import numpy as np
import pytest

from lppf.enron.docterm import authored_text, build_docterm, tokenize
from lppf.enron.network import build_network
from lppf.enron.parse import (
    MalformedMessage,
    normalize_address,
    parse_message,
    read_corpus,
)
from lppf.enron.source import RawMessage
from lppf.validation import InputError

HEAD = (
    "Message-ID: <{mid}.JavaMail.evans@thyme>\n"
    "Date: Mon, 14 May 2001 16:39:00 -0700 (PDT)\n"
    "From: {sender}\n"
    "To: {to}\n"
    "Subject: test\n"
    "{extra}"
    "Mime-Version: 1.0\n"
    "Content-Type: text/plain; charset={charset}\n"
    "Content-Transfer-Encoding: {cte}\n"
    "X-From: Someone\n"
    "X-Folder: \\x\\Sent\n"
)


def message(body: bytes = b"Hello there.\n", sender="phillip.allen@enron.com",
            to="tim.belden@enron.com", extra="", charset="us-ascii", cte="7bit",
            mid=1, eol="\n") -> bytes:
    head = HEAD.format(mid=mid, sender=sender, to=to, extra=extra, charset=charset, cte=cte)
    return (head + "\n").replace("\n", eol).encode() + body


def parse(data: bytes, folder="inbox", owner="allen-p"):
    return parse_message(RawMessage(owner, folder, "1.", data))


@pytest.mark.parametrize(("raw", "expected"), [
    ("Phillip.Allen@ENRON.com", "phillip.allen@enron.com"),
    ("<tim.belden@enron.com>", "tim.belden@enron.com"),
    ("mailto:tim.belden@enron.com", "tim.belden@enron.com"),
    ("'tim.belden'@enron.com", "tim.belden@enron.com"),
    ("'kuykendall@enron.com", "kuykendall@enron.com"),
    ("harder'.'laura@enron.com", "laura.harder@enron.com"),
    ("paul.y'barbo@enron.com", "paul.y'barbo@enron.com"),
    ("/o=enron/ou=na/cn=recipients/cn=notesaddr/cn=a4780", None),
    (".williams@enron.com", None),
    ("no-at-sign", None),
    ("a@b@enron.com", None),
    ("", None),
])
def test_normalize_address(raw, expected):
    assert normalize_address(raw) == expected


def test_recipients_union_once_each_without_sender():
    to = ('"Belden, Tim" <Tim.Belden@enron.com>, john.arnold@enron.com, \n\t'
          "phillip.allen@enron.com")
    extra = ("Cc: john.arnold@enron.com, mike.grigsby@enron.com\n"
             "Bcc: john.arnold@enron.com, mike.grigsby@enron.com\n")
    mail = parse(message(to=to, extra=extra))
    assert mail.sender == "phillip.allen@enron.com"
    assert mail.recipients == ("john.arnold@enron.com", "mike.grigsby@enron.com",
                               "tim.belden@enron.com")


def test_bcc_only_recipient_is_counted():
    mail = parse(message(extra="Bcc: secret.person@enron.com\n"))
    assert mail.recipients == ("secret.person@enron.com", "tim.belden@enron.com")


def test_quoted_printable_and_base64_bodies_decode_to_the_same_hash():
    text = "Caf\u00e9 prices = up; see the long line " + "x" * 90 + "\n"
    raw = text.encode("latin-1")
    plain = parse(message(raw, charset="iso-8859-1", cte="8bit"))
    qp = parse(message(quopri.encodestring(raw), charset="iso-8859-1", cte="quoted-printable",
                       mid=2))
    b64 = parse(message(base64.encodebytes(raw), charset="iso-8859-1", cte="base64", mid=3))
    assert plain.body == qp.body == b64.body == text
    assert plain.key() == qp.key() == b64.key()


def test_unknown_or_wrong_charset_falls_back():
    cp1252 = "don\u2019t \u20ac".encode("cp1252")
    assert parse(message(cp1252, charset="x-unknown")).body == "don\u2019t \u20ac"
    assert parse(message(cp1252, charset="utf-8")).body == "don\u2019t \u20ac"


def test_multipart_takes_text_plain_parts():
    body = (b"--XX\nContent-Type: text/plain; charset=utf-8\n\nplain words\n"
            b"--XX\nContent-Type: text/html\n\n<b>html</b>\n--XX--\n")
    data = message(body).replace(b"Content-Type: text/plain; charset=us-ascii",
                                 b'Content-Type: multipart/alternative; boundary="XX"')
    assert parse(data).body.strip() == "plain words"


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "empty file"),
    (message(sender="/o=enron/ou=na/cn=recipients/cn=pallen"), "no usable sender"),
    (message().replace(b"From: phillip.allen@enron.com\n", b""), "no usable sender"),
    (message().replace(b"Date: Mon, 14 May 2001 16:39:00 -0700 (PDT)", b"Date: soon"),
     "no parseable date"),
    (message().replace(b"Subject: test\n", b"Subject: test\n!\n"), "broken header block"),
])
def test_malformed_messages_are_rejected_with_a_reason(data, reason):
    with pytest.raises(MalformedMessage, match=reason):
        parse(data)


def write(root, relpath, data):
    path = root / "maildir" / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_duplicates_across_folders_and_mailboxes_and_line_endings(tmp_path):
    body = b"Numbers for tomorrow.\nSee you.\n"
    write(tmp_path, "allen-p/sent/1.", message(body, mid=1))
    write(tmp_path, "allen-p/_sent_mail/7.", message(body, mid=2, eol="\r\n"))
    write(tmp_path, "allen-p/all_documents/3.", message(body, mid=3))
    write(tmp_path, "belden-t/inbox/2.", message(body.replace(b"\n", b"\r\n"), mid=4,
                                                 to="'tim.belden'@enron.com"))
    write(tmp_path, "belden-t/inbox/3.", message(b"Another email.\n", mid=5))
    write(tmp_path, "belden-t/inbox/4.", b"garbage without headers")
    corpus = read_corpus(tmp_path)
    s = corpus.summary
    assert (s["files read"], s["skipped: excluded folder"], s["parsed"]) == (6, 1, 4)
    assert (s["duplicates removed"], s["unique emails"]) == (2, 2)
    assert s["skipped: broken header block"] == 1
    kept = {m.body.split()[0]: m for m in corpus.emails}
    assert kept["Numbers"].path == "allen-p/_sent_mail/7."  # sent copy, smallest path
    everything = read_corpus(tmp_path, exclude_folders=())
    assert everything.summary["duplicates removed"] == 3


def test_hostile_messages_and_file_names_are_counted_skips(tmp_path):
    write(tmp_path, "allen-p/sent/1.", message(b"Fine.\n", mid=1))
    non_ascii_from = message(b"Also fine.\n", mid=2).replace(
        b"From: phillip.allen@enron.com", b"From: \xe9t\xe9 <phillip.allen@enron.com>")
    write(tmp_path, "allen-p/sent/2.", non_ascii_from)
    (tmp_path / "maildir" / "allen-p" / "sent").joinpath(
        os.fsdecode(b"bad\xff")).write_bytes(message(b"Named badly.\n", mid=3))
    s = read_corpus(tmp_path).summary
    assert (s["files read"], s["parsed"], s["skipped: undecodable file name"]) == (3, 2, 1)
    assert parse(non_ascii_from).sender == "phillip.allen@enron.com"


def test_a_source_without_usable_email_is_an_error(tmp_path):
    with pytest.raises(InputError, match="no usable email"):
        read_corpus(tmp_path)
    write(tmp_path, "allen-p/inbox/1.", b"garbage without headers")
    with pytest.raises(InputError, match="no usable email"):
        read_corpus(tmp_path)


def test_network_counts_each_recipient_once_and_applies_thresholds():
    def mail(sender, to, mid):
        return parse(message(sender=sender, to=to, mid=mid, body=f"m{mid}\n".encode()))
    emails = [mail("a.a@x.com", "b.b@x.com, c.c@x.com, a.a@x.com", 1),
              mail("a.a@x.com", "b.b@x.com", 2),
              mail("b.b@x.com", "a.a@x.com", 3),
              mail("d.d@x.com", "a.a@x.com", 4)]
    Y, actors = build_network(emails, min_sent=1, min_total=2)
    assert list(actors["address"]) == ["a.a@x.com", "b.b@x.com"]  # c never sent, d total 1
    np.testing.assert_array_equal(Y, [[0, 2], [1, 0]])
    assert list(actors["sent"]) == [2, 1] and list(actors["received"]) == [2, 2]


def test_authored_text_strips_quotes_forwards_and_signatures():
    body = ("> quoted line\nMy own words here.\n\n"
            "-----Original Message-----\nFrom: someone\nTheir words.\n")
    assert tokenize(authored_text(body)) == ["words"]
    lotus = "Sure thing.\n\n\nBilly Lemmons@ENRON\n11/21/2000 09:13 PM\nTo: Mike\nold text\n"
    assert authored_text(lotus).split() == ["Sure", "thing."]
    fwd = ("Please read.\n---------------------- Forwarded by A B/HOU/ECT on 09/11/2000\n"
           "forwarded words\n")
    assert authored_text(fwd).strip() == "Please read."
    assert authored_text("Thanks.\n-- \nJohn Smith\nTrader\n").strip() == "Thanks."
    attribution = "Yes.\n\nJohn Smith wrote:\n> earlier\n"
    assert authored_text(attribution).strip() == "Yes."


def test_tokenize_lowercase_alphabetic_no_stopwords():
    assert tokenize("The GAS price, 2001: it's $5 x-ray") == ["gas", "price", "ray"]


def test_docterm_counts_and_no_empty_rows():
    def mail(mid, text):
        return parse(message(text.encode(), mid=mid), folder="sent")
    emails = [mail(1, "gas gas power trading desk"), mail(2, "power gas curve desk"),
              mail(3, "curve curve trading power"), mail(4, "lunch today"),
              mail(5, "zzz")]
    Y, vocab, docs, summary = build_docterm(emails, n_docs=10, n_words=10, min_tokens=2,
                                            max_df=0.5, min_df=2)
    assert len(docs) == Y.shape[0] == 3 and summary["dropped: empty after vocabulary"] == 1
    row = dict(zip(vocab, Y[list(docs["path"]).index("allen-p/sent/1.")], strict=True))
    # df over the 4 long documents: power 3 > 0.5 * 4; lunch, today 1 < min_df
    assert set(vocab) == {"gas", "curve", "trading", "desk"}
    assert row == {"gas": 2, "curve": 0, "trading": 1, "desk": 1}
