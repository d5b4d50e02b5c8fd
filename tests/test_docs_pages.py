"""The user docs stay short and their links hold (issue 65 item 8).

* Every relative link in README.md, editors/README.md and docs/*.md names a file that exists, and
  an anchor (``page.md#heading``, ``#heading``) names a heading of that page, slugged as GitHub
  slugs it.
* docs/*.md totals at most ``DOCS_LINES`` lines: measurement history lives in lab/notes/, not
  in the pages a user reads (issue 65's target, 2,000).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "editors" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS_LINES = 2000
LINK = re.compile(r"\]\(([^)\s]+)\)")  # [text](target): inline links and images
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The page's heading anchors; a repeated heading gets -1, -2 as on GitHub."""
    names: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", page.read_text()), re.M):
        base = slug(heading)
        names.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return names


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(target)
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_slug_matches_github() -> None:
    assert slug("Measured: the 26B at its real size, on this 2-core CPU") == (
        "measured-the-26b-at-its-real-size-on-this-2-core-cpu"
    )
    assert slug("`mlx-vlm`'s server") == "mlx-vlms-server"


def test_user_docs_stay_short() -> None:
    lines = {page.name: len(page.read_text().splitlines()) for page in (ROOT / "docs").glob("*.md")}
    assert sum(lines.values()) <= DOCS_LINES, sorted(lines.items(), key=lambda item: -item[1])


def test_every_third_party_path_a_page_names_exists():
    """A command a user copies (``difill build-native --source third_party/llama.cpp/...tar.xz``)
    names the tarball this clone carries: a new llama.cpp version renames it in the docs too."""
    named = {
        (page.name, path)
        for page in PAGES
        for path in re.findall(r"third_party/[\w./-]*\w", page.read_text())
    }
    assert named, "no page names a third_party path: the test would check nothing"
    missing = sorted((page, path) for page, path in named if not (ROOT / path).exists())
    assert not missing, missing
