"""From "the selection's new text" to the smallest LSP edits, so cursors and undo behave.

A line diff (difflib) finds the changed blocks; each block is then shrunk to the characters that
really differ (common head and tail removed).  Unchanged lines keep their identity in the editor:
its cursors, marks and folds stay where they were.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from lsprotocol import types

from difill.server.documents import Document
from difill.text.characters import common_prefix


@dataclass(frozen=True)
class Replacement:
    start: int  # offsets into the old text
    end: int
    text: str


def minimal_replacements(old: str, new: str) -> list[Replacement]:
    """Non-overlapping replacements, in order, that turn ``old`` into ``new``."""
    if old == new:
        return []
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    old_starts = _starts(old_lines)
    out: list[Replacement] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        before = "".join(old_lines[i1:i2])
        after = "".join(new_lines[j1:j2])
        head = common_prefix(before, after)
        tail = common_prefix(before[head:][::-1], after[head:][::-1])
        start = old_starts[i1] + head
        out.append(Replacement(start, old_starts[i1] + len(before) - tail, after[head : len(after) - tail]))
    return out


def apply_replacements(text: str, replacements: list[Replacement]) -> str:
    for r in sorted(replacements, key=lambda r: r.start, reverse=True):
        text = text[: r.start] + r.text + text[r.end :]
    return text


def text_edits(document: Document, base: int, old: str, new: str, encoding: str) -> list[types.TextEdit]:
    """Edits on ``document`` that turn ``old`` (found at offset ``base``) into ``new``."""
    return [
        types.TextEdit(range=document.range_of(base + r.start, base + r.end, encoding), new_text=r.text)
        for r in minimal_replacements(old, new)
    ]


def workspace_edit(
    document: Document, edits: list[types.TextEdit], version: int, document_changes: bool
) -> types.WorkspaceEdit:
    """A ``TextDocumentEdit`` pinned to ``version`` when the client takes ``documentChanges``;
    otherwise plain ``changes`` (the client then cannot check the version itself)."""
    if document_changes:
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=version)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)]
        )
    return types.WorkspaceEdit(changes={document.uri: edits})


def _starts(lines: list[str]) -> list[int]:
    starts, total = [], 0
    for line in lines:
        starts.append(total)
        total += len(line)
    starts.append(total)
    return starts

