"""The project's specs live in the repository: nothing points outside it, and every reference to a
page under docs/ (a path, an anchor, a quoted section name) names something that exists.

Code comments and docstrings cite docs/karta-format.md, docs/karta-semantics.md and
docs/api-contract.md by section; a renamed heading must take its citations with it."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "site", ".pytest_cache", ".mypy_cache",
             ".ruff_cache", ".hypothesis", "build", "dist"}
# Spelled in two parts so that this file does not match itself.
OUTSIDE = [".." + "/shared", "shared" + "/reference"]

DOC_PATH = re.compile(r"(?<![\w/.-])docs/([\w./-]+?\.md)(#[\w-]+)?")
DOC_SECTION = re.compile(r"(?<![\w/.-])docs/([\w./-]+?\.md),? \"([^\"\\]+)\"")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def repo_text_files() -> list[tuple[Path, str]]:
    out = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if not path.is_file() or any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        try:
            out.append((rel, path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue  # binary files (screenshots, ...)
    return out


def heading_texts(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [" ".join(h.replace("`", "").split()) for h in HEADING.findall(text)]


def slug(heading: str) -> str:
    """Python-Markdown's toc slugify, the anchors mkdocs gives headings."""
    s = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    s = re.sub(r"[^\w\s-]", "", s).strip().lower()
    return re.sub(r"[-\s]+", "-", s)


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in heading_texts(page)}


def test_nothing_points_outside_the_repository():
    found = [f"{rel}:{n}: {line.strip()}" for rel, text in repo_text_files()
             for n, line in enumerate(text.splitlines(), 1) if any(o in line for o in OUTSIDE)]
    assert not found, "references to a folder that is not in the repository:\n" + "\n".join(found)


def test_every_docs_path_exists_with_its_anchor():
    problems = []
    for rel, text in repo_text_files():
        for m in DOC_PATH.finditer(text):
            page = DOCS / m.group(1)
            where = f"{rel}: docs/{m.group(1)}{m.group(2) or ''}"
            if not page.is_file():
                problems.append(f"{where}: no such page")
            elif m.group(2) and m.group(2)[1:] not in anchors(page):
                problems.append(f"{where}: no such heading")
    assert not problems, "\n".join(problems)


def test_every_quoted_section_is_a_heading_of_its_page():
    problems = []
    for rel, text in repo_text_files():
        for m in DOC_SECTION.finditer(text):
            page, section = DOCS / m.group(1), " ".join(m.group(2).split())
            if page.is_file() and section not in heading_texts(page):
                problems.append(f'{rel}: docs/{m.group(1)} "{section}": no such heading')
    assert not problems, "\n".join(problems)


def test_links_between_docs_pages_resolve():
    problems = []
    for page in sorted(DOCS.rglob("*.md")):
        for target in MD_LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            name, _, anchor = target.partition("#")
            dest = (page.parent / name).resolve() if name else page
            where = f"{page.relative_to(ROOT)}: ({target})"
            if DOCS.resolve() not in dest.parents:
                problems.append(f"{where}: points out of docs/ (use an https URL or a code span)")
            elif not dest.is_file():
                problems.append(f"{where}: no such page")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{where}: no such heading")
    assert not problems, "\n".join(problems)


def test_the_specs_are_in_the_repository():
    for name in ("karta-format.md", "karta-semantics.md", "api-contract.md"):
        assert heading_texts(DOCS / name), name
