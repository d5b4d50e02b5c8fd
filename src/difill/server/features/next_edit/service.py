"""Next-edit suggestions (issue 35): after an edit, the same edit at the other places it applies.

``textDocument/copilotInlineEdit`` (the method Copilot's NES clients speak) answers
``{edits: [{text, range, textDocument: {uri, version}}]}``, the alternatives best first.  An
answer is computed for the version the request names and no other: a request for an older
version is refused with ContentModified, one for a closed document answers no edits.

``nextEdit`` says what is answered:

* ``drafts``: edit *drafts*, no model: the places of the last edit's pattern (patterns.py)
  nearest the cursor, each one only where the document parses no worse with it (tree-sitter,
  where there is a grammar);
* ``on``: the drafts first (they are shown as they stand, as the shipped model's context drafts
  are), then the model's edits of the region around the cursor (model.py), the drafts inside it
  seeded as canvas rows; a model edit passes the gate and the parse check or is not shown;
* ``model``: the model's edits alone, no draft seeded or shown (a measurement: `difill eval
  --next-edit`'s "model alone" row);
* ``off``: nothing.

The model runs on the engine host's worker (never on the event loop), only after an edit the
history saw, only once the model is loaded (while it loads, the drafts are answered alone).  A
change to the document cancels the run (``OneJobPerDocument``), and its answer is checked
against the document's version and text before it is used: a run for another version answers
ContentModified.  ``model_counts`` tracks how often the model changed something and how often
the gate kept it off screen (the noise rate, docs/next_edit.md).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcInvalidParams

from difill.engine.api import BackendError, TooLarge
from difill.server.documents import Document, range_json
from difill.server.engine_host import JobCancelled, Jobs, OneJobPerDocument
from difill.server.feature_handle import FeatureHandle
from difill.server.features.next_edit import model
from difill.server.features.next_edit.history import EditHistory
from difill.server.features.next_edit.patterns import (
    MAX_RENAME_MATCHES,
    RENAME_MS,
    Pattern,
    pattern_of,
    places,
)
from difill.server.features.next_edit.scope import rename_scope
from difill.server.features.next_edit.tree_places import tree_after, tree_places
from difill.server.features.next_edit.typing import INVOKED, Applied, half_typed
from difill.server.trees import MAX_TREE_BYTES
from difill.text.budget import Budget
from difill.text.pipeline import errors_unless_clean

log = logging.getLogger("difill.server.next_edit")

MAX_EDITS_ANSWERED = 3  # alternatives in one answer (each is parsed once)
METHOD = "textDocument/copilotInlineEdit"
SHOWN = "textDocument/didShowInlineEdit"


Span = tuple[int, int, str]  # (start, end, new text) in the document


class NextEditService(OneJobPerDocument):
    def __init__(self, handle: FeatureHandle) -> None:
        self.documents = handle.documents
        self.excluded = handle.excluded  # a document on the secrets deny list (server/context/policy.py)
        self.settings = handle.settings
        self.encoding = handle.encoding
        self.host = handle.host
        self.jobs = Jobs()
        self.history = EditHistory()
        self.applied = Applied()  # next edits answered, so applying one is no keystroke (typing.py)
        self.shown = 0  # didShowInlineEdit notifications heard
        # Model runs, runs whose rows changed the region, rows kept off screen by the gate, and
        # model edits answered (after the parse check): the noise the gate stops is gated/changed.
        self.model_counts = {"runs": 0, "changed": 0, "gated": 0, "answered": 0}

    # ---- events ----

    def text_changed(self, before: Document | None, after: Document, changes: list[Any]) -> None:
        """After a didChange: the edit it makes (coalesced with the keystrokes before it)."""
        if before is not None and after.uri == before.uri:
            self.history.changed(after.uri, before.text, after.text, after.version)
            self.applied.changed(after.uri, (before.version, before.text), (after.version, after.text))

    def document_closed(self, uri: str) -> None:
        super().document_closed(uri)
        self.history.forget(uri)
        self.applied.forget(uri)

    def shutdown(self) -> None:
        super().shutdown()
        self.history = EditHistory()
        self.applied = Applied()

    # ---- the request ----

    async def answer(self, params: Any) -> dict[str, Any]:
        uri, version, position = _read_params(params)
        document = self.documents.get(uri)
        mode = self.settings().next_edit
        if document is None or mode == "off" or self.excluded(uri):
            return {"edits": []}  # a denied document's text reaches no model and no remote
        if version is not None and version != document.version:
            raise JsonRpcContentModified(
                f"the request is for version {version}, the document is at {document.version}"
            )
        offset = document.offset_at(position, self.encoding())
        if offset is None:
            raise JsonRpcInvalidParams("the position is outside the document")
        if len(document.text) > MAX_TREE_BYTES:  # no edit is offered that could not be parse-checked
            return {"edits": []}
        if self._half_typed(document, offset, params):
            return {"edits": []}  # a word still being typed: its half is offered nowhere (typing.py)
        drafts = await self._drafts(document, offset) if mode in ("on", "drafts") else []
        found = list(drafts)
        if mode in ("on", "model"):
            found += await self.model_edits(document, offset, drafts)
        answered = _distinct(document.text, found)[:MAX_EDITS_ANSWERED]
        self.applied.answered(uri, document.version, answered)
        return {"edits": [self._edit_json(document, start, end, text) for start, end, text in answered]}

    def _half_typed(self, document: Document, offset: int, params: Any) -> bool:
        """An automatic ask while the document's last edit is a word still being typed at the
        cursor (issue 63); an edit the client applied from an answer is finished."""
        last = self.history.last(document.uri)
        if last is None or last.after != document.text or _trigger_kind(params) == INVOKED:
            return False
        if self.applied.applied(document.uri, document.version):
            return False
        return half_typed(last, offset, self.history.clock())

    async def _drafts(self, document: Document, offset: int) -> list[Span]:
        """``edits`` off the event loop (the patterns scan and each place's parse check read the
        document), stopped when the request is: ``$/cancelRequest`` cancels this task, and the
        thread, which no cancel can stop, sees the flag and returns (issue 62 row 7: a cancelled
        scan kept a core busy, and each edit added a thread)."""
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(self.edits, document, offset, cancel)
        finally:
            cancel.set()  # cancelled, or answered: either way the work is over

    async def model_edits(self, document: Document, offset: int, drafts: list[Span]) -> list[Span]:
        """The model's edits of the region around ``offset`` (model.py), gated and parse-checked;
        none before the model is loaded or without an edit the history saw."""
        last = self.history.last(document.uri)
        if last is None or last.after != document.text:
            return []
        engine = await self.host.wait_ready(0)  # while it loads, the drafts answer alone
        if engine is None:
            return []
        rewrite = model.region_rewrite(
            document.text, offset, last, drafts, self.settings(), document.language, document.language_id
        )
        if rewrite is None:
            return []
        try:
            result = await self.host.run_for(
                self.jobs, document.uri, lambda job: rewrite.work(job.before_step)
            )
        except JobCancelled:
            if self._moved_on(document):
                raise JsonRpcContentModified("the document changed while the model ran") from None
            return []  # a newer request for the same document took the model
        except (TooLarge, BackendError) as err:
            log.info("next edit: no model edit (%s)", err)
            return []
        if self._moved_on(document):  # never an answer computed for another version
            raise JsonRpcContentModified("the document changed while the model ran")
        if result is None:
            return []
        self.model_counts["runs"] += 1
        spans, gated = rewrite.edits(result)
        self.model_counts["gated"] += gated
        self.model_counts["changed"] += 1 if spans or gated else 0
        checked = await asyncio.to_thread(self._parse_checked, document, spans)
        self.model_counts["answered"] += len(checked)
        log.debug("next edit: model %s", self.model_counts)
        return checked

    def _moved_on(self, document: Document) -> bool:
        now = self.documents.get(document.uri)
        return now is None or now.version != document.version or now.text != document.text

    def _parse_checked(
        self, document: Document, spans: list[Span], cancel: threading.Event | None = None
    ) -> list[Span]:
        """The edits after which the code around them parses no worse (tree-sitter, where it has a
        grammar; pipeline.errors_with_replacement: a window around each place, not the document)."""
        language = document.language
        out = []
        for start, end, text in spans:
            if cancel is not None and cancel.is_set():
                break
            if _worse(document.text, start, end, text, language):
                continue  # it would break the code
            out.append((start, end, text))
            if len(out) == MAX_EDITS_ANSWERED:
                break
        return out

    def edits(
        self, document: Document, offset: int, cancel: threading.Event | None = None
    ) -> list[tuple[int, int, str]]:
        """(start, end, new text) of the next edits for ``document`` at ``offset``, best first;
        what was found so far once ``cancel`` is set."""
        last = self.history.last(document.uri)
        if last is None or last.after != document.text:
            return []  # no edit, or the document moved on in a way the history did not see
        if last.undoes:
            return []
        pattern = pattern_of(last.before, last.after)
        language = document.language
        found = []
        if pattern is not None:  # the token substitutions: the simplest case, first
            if self._breaks_code(document, pattern):
                return []
            scope = None
            if pattern.rename:
                tree = tree_after(last.before, last.after, language)
                scope = rename_scope(document.text, pattern.at, pattern.old, pattern.attribute, language, tree)
            found = places(pattern, document.text, offset, scope, Budget(RENAME_MS, MAX_RENAME_MATCHES, cancel))
        # The edit generalised on the syntax tree, through its gate (issue 63); never after a
        # rename, whose scope has the last word: a walk that renamed every use in its function
        # stops there, though the next function reads the same line.
        if not found and not (pattern is not None and pattern.rename):
            found = tree_places(last.before, last.after, offset, language, cancel)
        return self._parse_checked(document, [(p.start, p.end, p.text) for p in found], cancel)

    def _breaks_code(self, document: Document, pattern: Pattern) -> bool:
        """The user's own edit parses worse than the code did before it: a half-made edit
        (``x ** `` while ``(a - 1)`` is retyped), not one to repeat."""
        language = document.language
        at = pattern.at
        return _worse(document.text, at, at + len(pattern.new), pattern.old, language, swap=True)

    def did_show(self, params: Any) -> None:
        self.shown += 1
        log.debug("next edit shown (%d so far)", self.shown)

    def _edit_json(self, document: Document, start: int, end: int, text: str) -> dict[str, Any]:
        return {
            "text": text,
            "range": range_json(document.range_of(start, end, self.encoding())),
            "textDocument": {"uri": document.uri, "version": document.version},
        }


def _worse(text: str, start: int, end: int, new: str, language: str | None, swap: bool = False) -> bool:
    """Whether the code around ``text[start:end]`` parses with more errors with ``new`` there than
    as it stands (``swap``: as it stands than with ``new``; pipeline.errors_with_replacement).  The
    side that may be worse is parsed first: most code parses clean, and then nothing can be worse
    than it, so the other side's parse is saved (a next edit's answer is mostly these parses)."""
    stands, other = [text[start:end], new][:: -1 if swap else 1]
    worse, than = errors_unless_clean(text, start, end, other, stands, language)
    return bool(worse) and worse > (than or 0)


def _distinct(text: str, spans: list[Span]) -> list[Span]:
    """The edits in order, each one that makes the same document as an earlier one left out (a
    model row that kept a draft is that draft)."""
    seen: set[str] = set()
    out = []
    for start, end, new in spans:
        result = text[:start] + new + text[end:]
        if result not in seen:
            seen.add(result)
            out.append((start, end, new))
    return out


def _trigger_kind(params: Any) -> Any:
    """``context.triggerKind`` of a request (a dict, or pygls's namedtuple of a custom method's
    params); None when absent."""

    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    context = field(params, "context")
    return field(context, "triggerKind") if context is not None else None


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
