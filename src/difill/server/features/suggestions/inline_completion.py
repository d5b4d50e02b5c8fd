"""``textDocument/inlineCompletion``: ghost text at the cursor.

``Invoked`` (the user asked) -> up to ``candidates`` distinct suggestions; ``Automatic`` (typing)
-> one.  Each item inserts its text at the cursor (an empty range there), except a block filled
before closers the editor auto-closed (``=> {█})``): that item replaces them, and its text ends
with them on a line of their own.  When a remote model server fails (503, a wrong key, a
malformed answer), the answer is empty: the status already says what the server said
(engine_host.py), and ghost text is never an error popup per keystroke.

An automatic request where the cursor only moved to (no change there), with code after it on the
line (not closers only), is answered empty (``only_moved_to``): a suggestion there would push
that code right.

``selectedCompletionInfo`` (LSP 3.18; VS Code sends it while its completion popup has an item
selected): the suggestions are asked for the document as it would be with that item accepted,
and each item extends it: its text starts with the item's text and it replaces the item's range,
as VS Code requires for ghost text to show beside the popup.
"""

from __future__ import annotations

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from difill.server.documents import UTF32, Document
from difill.server.request_context import RequestContext, document_for_request
from difill.text.shape import only_closers

EMPTY = types.InlineCompletionList(items=[])


async def inline_completion(ls: RequestContext, params: types.InlineCompletionParams) -> types.InlineCompletionList:
    """The handler itself (registered in server.py): pygls hands it the server as ``ls``."""
    document = document_for_request(ls.documents, params.text_document.uri)
    if document is None:
        return EMPTY
    offset = document.offset_at(params.position, ls.encoding)
    if offset is None:  # a line past the end of the document
        return EMPTY
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    info = params.context.selected_completion_info
    if not invoked and info is None and only_moved_to(document, offset):
        return EMPTY
    # The items replace [start, end) of the document as the editor has it, and start with
    # ``selected``: the cursor and nothing, or the popup item's range and its text.
    start, end, selected = offset, offset, ""
    asked, at = document, offset
    if info is not None:
        start, end = _selected_range(document, offset, info.range, ls.encoding)
        selected = info.text
        text = document.text[:start] + selected + document.text[end:]
        # The document as it would be with the item accepted: asked, never stored.
        asked = Document(document.uri, document.language_id, document.version, text)
        at = start + len(selected)
    suggestions = await ls.suggestions.suggest(asked, at, invoked)
    closers = suggestions.closers
    low = document.position_at(start, ls.encoding)
    high = document.position_at(end, ls.encoding)
    after_closers = document.position_at(end + len(closers), ls.encoding) if closers else high
    items = []
    for text in suggestions.texts:
        if closers and "\n" in text:
            # The text ends with a newline and the cursor line's indentation: the closers follow it.
            items.append(
                types.InlineCompletionItem(
                    insert_text=selected + text + closers.strip(), range=types.Range(start=low, end=after_closers)
                )
            )
        else:
            items.append(
                types.InlineCompletionItem(insert_text=selected + text, range=types.Range(start=low, end=high))
            )
    return types.InlineCompletionList(items=items)


def only_moved_to(document: Document, offset: int) -> bool:
    """Whether the cursor at ``offset`` came there without typing (an arrow key, a click) and has
    code after it on its line: an automatic suggestion there would be inserted in front of that
    code, as a whole line copied from elsewhere once was (issue 66), so it gets none.  Typed means
    inside (or at either end of) the latest change, so text the editor auto-closed after the cursor
    (``(`` typed, ``)`` added) still counts as typed; at a line's end, or before blanks only, a
    cursor that only moved is asked for as before, and so is one before closers only (``foo(█)``:
    text/shape.py counts that as a line's end, and what is filled there pushes no code)."""
    changed = document.changed
    if changed is not None and changed[0] <= offset <= changed[1]:
        return False
    rest = document.text[offset : document.line_end(document.position_at(offset, UTF32).line)]
    return rest.strip() != "" and not only_closers(rest)


def _selected_range(document: Document, cursor: int, rng: types.Range, encoding: str) -> tuple[int, int]:
    """``selectedCompletionInfo.range`` as offsets: on the cursor's line, around the cursor (the
    word the popup completes); InvalidParams otherwise."""
    start, end = document.offset_at(rng.start, encoding), document.offset_at(rng.end, encoding)
    line = document.position_at(cursor, encoding).line
    if start is None or end is None or not (start <= cursor <= end) or rng.start.line != line or rng.end.line != line:
        raise JsonRpcInvalidParams(
            "context.selectedCompletionInfo.range must be on the cursor's line and hold the cursor"
        )
    return start, end
