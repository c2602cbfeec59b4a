"""The Enron email corpus: download, parsing, sender-recipient and document-term matrices.

Rules and numbers: docs/enron.md, "Parsing rules". The command line front end is
``lppf enron``. Names are imported on first use, so that the CLI does not load gensim
unless it needs it.
"""

from importlib import import_module

_WHERE = {
    "CMU_SHA256": "source", "CMU_SIZE": "source", "CMU_URL": "source", "RawMessage": "source",
    "download": "source", "iter_raw": "source",
    "EXCLUDED_FOLDERS": "parse", "SENT_FOLDERS": "parse", "Corpus": "parse", "Email": "parse",
    "normalize_address": "parse", "parse_message": "parse", "read_corpus": "parse",
    "build_network": "network",
    "authored_text": "docterm", "build_docterm": "docterm", "tokenize": "docterm",
    "SynthTruth": "synth", "write_synthetic_maildir": "synth",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'lppf.enron' has no attribute {name!r}")
    return getattr(import_module(f"lppf.enron.{_WHERE[name]}"), name)
