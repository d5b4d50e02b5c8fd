"""Next-edit suggestions (issue 35): after an edit, the same edit at the other places it applies.

``textDocument/copilotInlineEdit`` (the method Copilot's NES clients speak) answers
``{edits: [{text, range, textDocument: {uri, version}}]}``, the alternatives best first: the
places of the last edit's pattern (patterns.py) nearest the cursor, each one only where the
document parses no worse with it (tree-sitter, where there is a grammar).  An answer is computed
for the version the request names and no other: a request for an older version is refused with
ContentModified, one for a closed document answers no edits.

These are edit *drafts*, made without a model.  The diffusion canvas that re-denoises the region
around a fresh edit (the issue's "model edits") is not built yet; ``nextEdit`` is ``drafts`` or
``off``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcInvalidParams

from difill.server.config import Settings
from difill.server.documents import Document, Documents
from difill.server.features.edits.service import range_json
from difill.server.features.next_edit.history import EditHistory
from difill.server.features.next_edit.patterns import pattern_of, places
from difill.server.lifecycle import Feature
from difill.text.languages import language_of
from difill.text.syntax import syntax_errors

log = logging.getLogger("difill.server.next_edit")

MAX_EDITS_ANSWERED = 3  # alternatives in one answer (each is parsed once)
METHOD = "textDocument/copilotInlineEdit"
SHOWN = "textDocument/didShowInlineEdit"


class NextEditService(Feature):
    def __init__(
        self, documents: Documents, settings: Callable[[], Settings], encoding: Callable[[], str]
    ) -> None:
        self.documents = documents
        self.settings = settings
        self.encoding = encoding
        self.history = EditHistory()
        self.shown = 0  # didShowInlineEdit notifications heard

    # ---- events ----

    def text_changed(self, before: Document | None, after: Document | None) -> None:
        """After a didChange: the edit it makes (coalesced with the keystrokes before it)."""
        if before is not None and after is not None and after.uri == before.uri:
            self.history.changed(after.uri, before.text, after.text, after.version)

    def document_closed(self, uri: str) -> None:
        self.history.forget(uri)

    def shutdown(self) -> None:
        self.history = EditHistory()

    # ---- the request ----

    def answer(self, params: Any) -> dict[str, Any]:
        uri, version, position = _read_params(params)
        document = self.documents.get(uri)
        if document is None or self.settings().next_edit == "off":
            return {"edits": []}
        if version is not None and version != document.version:
            raise JsonRpcContentModified(
                f"the request is for version {version}, the document is at {document.version}"
            )
        offset = document.offset_at(position, self.encoding())
        if offset is None:
            raise JsonRpcInvalidParams("the position is outside the document")
        return {
            "edits": [
                self._edit_json(document, start, end, text)
                for start, end, text in self.edits(document, offset)
            ]
        }

    def edits(self, document: Document, offset: int) -> list[tuple[int, int, str]]:
        """(start, end, new text) of the next edits for ``document`` at ``offset``, best first."""
        last = self.history.last(document.uri)
        if last is None or last.after != document.text:
            return []  # no edit, or the document moved on in a way the history did not see
        pattern = pattern_of(last.before, last.after)
        if pattern is None:
            return []
        language = language_of(document.language_id, document.uri)
        errors_now = syntax_errors(document.text, language)
        out = []
        for place in places(pattern, document.text, offset):
            edited = document.text[: place.start] + place.text + document.text[place.end :]
            if errors_now is not None and (syntax_errors(edited, language) or 0) > errors_now:
                continue  # it would break the code
            out.append((place.start, place.end, place.text))
            if len(out) == MAX_EDITS_ANSWERED:
                break
        return out

    def did_show(self, params: Any) -> None:
        self.shown += 1
        log.debug("next edit shown (%d so far)", self.shown)

    def _edit_json(self, document: Document, start: int, end: int, text: str) -> dict[str, Any]:
        return {
            "text": text,
            "range": range_json(document.range_of(start, end, self.encoding())),
            "textDocument": {"uri": document.uri, "version": document.version},
        }


def _read_params(params: Any) -> tuple[str, int | None, Any]:
    """(uri, version, position) of a request; InvalidParams, naming the field, when malformed."""

    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    document = field(params, "textDocument")
    uri = field(document, "uri") if document is not None else None
    if not isinstance(uri, str):
        raise JsonRpcInvalidParams("textDocument.uri must be a string")
    version = field(document, "version")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise JsonRpcInvalidParams("textDocument.version must be an integer")
    position = field(params, "position")
    line, character = (
        (field(position, "line"), field(position, "character")) if position is not None else (None, None)
    )
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (line, character)):
        raise JsonRpcInvalidParams("position must be {line, character} with non-negative integers")
    return uri, version, types.Position(line=line, character=character)
