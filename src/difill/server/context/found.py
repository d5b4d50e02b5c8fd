"""What the workspace context finds for a cursor: draft sources, index drafts, prompt snippets.

Its own module, free of the index and of any LSP library, so that the suggestion path
(server/suggestion_path.py) and a remote ``difill fill`` can name it without importing pygls.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from difill.server.context.drafts import Draft


@dataclass(frozen=True)
class Snippet:
    path: str  # as the prompt names it: relative to its workspace folder
    start_line: int  # 0-based, in that file
    text: str  # LF text
    kind: str  # "definition" | "similar"
    score: float  # definitions 1.0, windows their Jaccard similarity


@dataclass(frozen=True)
class Retrieval:
    # (uri or path, LF text) for the draft finder, searched after the current document in this
    # order: the open documents (most recently edited first), then the most similar workspace files.
    sources: list[tuple[str, str]]
    snippets: list[Snippet]  # by priority (definitions, then similarity); prompt.py orders them
    # Drafts only the index can make, before the finder's (draft_policy.drafts_at): an import line
    # completed with the document's free names (imports.py).
    drafts: list[Draft] = field(default_factory=list)
    # On a Python import line, the names that may stand at the word being typed (modules of the
    # workspace and the environment after ``from``/``import``, a module's names after ``from m
    # import``), as jedi lists them; None elsewhere, and empty when jedi gave none in time.  The
    # model's text is shown there only when it writes one of them (suggestion_path.listed_names).
    import_names: frozenset[str] | None = None
    # jedi had not answered in time for ``import_names`` or for the names after ``x.``: an answer
    # made without its list is shown (or not) but never cached, so the next keystroke asks again.
    waiting: bool = False
