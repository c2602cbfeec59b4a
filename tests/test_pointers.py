"""Every pointer of the docs, the configs, the workflow and the code resolves.

A relative Markdown link names a file that exists (and a heading of it after ``#``); a path
such as ``docs/usage.md`` or ``config/enron.yaml`` names a file that exists; a cited section,
``docs/usage.md, "Output .npz"`` or ``the README, "Install"``, names a heading of that file.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted({*ROOT.glob("*.md"), *ROOT.glob("docs/*.md"), *ROOT.glob("config/*"),
                  *ROOT.glob(".test/config/*"), ROOT / "Snakefile", *ROOT.glob("workflow/**/*"),
                  *ROOT.glob("src/lppf/**/*.py"), *ROOT.glob("bench/*.py")})
SOURCES = [p for p in SOURCES if p.is_file() and p.suffix in ("", ".md", ".py", ".yaml", ".smk",
                                                              ".rst", ".txt")]
FENCE = re.compile(r"^```.*?^```$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(r"(?<![\w/.-])((?:docs|config|workflow|bench)/[\w./-]*\w\.(?:md|yaml|py|rst)"
                  r"|README\.md)")
CITED = re.compile(r"(?:((?:the )?README(?:\.md)?)|(docs/[\w-]+\.md)|\]\(([\w-]+\.md)\)),?\s+"
                   r'"([^"]+)"')


def headings(path):
    text = FENCE.sub("", path.read_text())
    return [re.sub(r"[`*]", "", line.lstrip("#").strip())
            for line in text.splitlines() if re.match(r"#{1,6} ", line)]


def slug(heading):
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def name(path):
    return str(path.relative_to(ROOT))


def test_sources_are_found():
    found = {name(p) for p in SOURCES}
    assert {"README.md", "docs/usage.md", "src/lppf/fitting.py", "Snakefile"} <= found


@pytest.mark.parametrize("source", [p for p in SOURCES if p.suffix == ".md"], ids=name)
def test_relative_links_resolve(source):
    for target in LINK.findall(FENCE.sub("", source.read_text())):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = (source.parent / file).resolve() if file else source
        assert path.exists(), f"{name(source)}: link to {target}: no such file"
        if anchor:
            assert anchor in {slug(h) for h in headings(path)}, \
                f"{name(source)}: link to {target}: no such heading"


@pytest.mark.parametrize("source", SOURCES, ids=name)
def test_cited_files_and_sections_exist(source):
    text = source.read_text()
    for path in PATH.findall(text):
        if "{" not in path and "*" not in path:
            assert (ROOT / path).exists(), f"{name(source)}: cites {path}: no such file"
    for readme, doc, linked, section in CITED.findall(text):
        cited = (ROOT / "README.md" if readme else ROOT / doc if doc
                 else source.parent / linked)
        section = section.replace("`", "")
        assert section in headings(cited), \
            f"{name(source)}: cites {name(cited)}, \"{section}\": no such section"
