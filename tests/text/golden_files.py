"""Golden files for the suggestion filters: a document with a cursor, a raw suggestion, and the
expected output of one filter (the folder's name) or of the whole pipeline (``pipeline/``).

Format: optional ``#`` comment lines, then sections that start with a line ``=== NAME``::

    === document
    def f(x):
        return █
    === suggestion
    x + 1)
    === expected
    x + 1

A section's text runs to the line before the next header (a section that must end with a newline
has an empty last line).  ``=== NAME (escaped)`` decodes Python escapes (``\\t``, ``\\x00``, a
trailing space as ``\\x20``); ``=== document (crlf)`` turns the document's newlines into CRLF.
``█`` marks the cursor.  Set DIFILL_UPDATE_GOLDEN=1 to rewrite the expected sections.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"
CURSOR = "█"
HEADER = re.compile(r"^=== (\w+)(?: \(([\w, ]+)\))?$", re.M)


@dataclass
class GoldenCase:
    path: Path
    sections: dict[str, str]
    flags: dict[str, set[str]]

    @property
    def document(self) -> str:
        return self.sections["document"]

    @property
    def cursor(self) -> int:
        return self.document.index(CURSOR)

    @property
    def text(self) -> str:
        return self.document.replace(CURSOR, "")


def _decode(raw: str, flags: set[str]) -> str:
    if "escaped" in flags:
        raw = raw.encode("utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
    if "crlf" in flags:
        raw = raw.replace("\n", "\r\n")
    return raw


def read_case(path: Path) -> GoldenCase:
    content = path.read_text(encoding="utf-8")
    headers = list(HEADER.finditer(content))
    sections: dict[str, str] = {}
    flags: dict[str, set[str]] = {}
    for i, header in enumerate(headers):
        start = header.end() + 1
        if i + 1 < len(headers):
            end = headers[i + 1].start() - 1
        else:
            end = len(content) - 1 if content.endswith("\n") else len(content)
        name = header.group(1)
        flags[name] = {f.strip() for f in (header.group(2) or "").split(",") if f.strip()}
        sections[name] = _decode(content[start : max(start, end)], flags[name])
    return GoldenCase(path, sections, flags)


def write_expected(case: GoldenCase, actual: str) -> None:
    """Rewrite the case's expected section (escaped when it holds what an editor would eat)."""
    content = case.path.read_text(encoding="utf-8")
    header = next(h for h in HEADER.finditer(content) if h.group(1) == "expected")
    needs_escape = bool(re.search(r"[\x00-\x08\x0b-\x1f\x7f\r\t\\]| \n| $", actual))
    body = _escape(actual) if needs_escape else actual
    title = "=== expected (escaped)" if needs_escape else "=== expected"
    case.path.write_text(content[: header.start()] + title + "\n" + body + "\n", encoding="utf-8")


def _escape(text: str) -> str:
    out = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\r", "\\r")
    out = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", out)
    return re.sub(r" (?=\n|$)", r"\\x20", out)


def cases(folder: str) -> list[Path]:
    return sorted((GOLDEN_DIR / folder).glob("*.txt"))
