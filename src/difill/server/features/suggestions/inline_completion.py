"""``textDocument/inlineCompletion``: ghost text at the cursor.

``Invoked`` (the user asked) -> up to ``candidates`` distinct suggestions; ``Automatic`` (typing)
-> one.  Each item inserts its text at the cursor (an empty range there), except a block filled
before closers the editor auto-closed (``=> {█})``): that item replaces them, and its text ends
with them on a line of their own.  When a remote model server fails (503, a wrong key, a
malformed answer), the answer is empty: the status already says what the server said
(engine_host.py), and ghost text is never an error popup per keystroke.
"""

from __future__ import annotations

from lsprotocol import types

from difill.engine.api import BackendError
from difill.server.documents import Document
from difill.server.features.suggestions.service import Suggestions
from difill.server.request_context import RequestContext, document_for_request

EMPTY = types.InlineCompletionList(items=[])


async def inline_completion(
    server: RequestContext, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    document = document_for_request(server.documents, params.text_document.uri)
    if document is None:
        return EMPTY
    offset = document.offset_at(params.position, server.encoding)
    if offset is None:  # a line past the end of the document
        return EMPTY
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    suggestions = await suggestions_at(server, document, offset, invoked)
    cursor = document.position_at(offset, server.encoding)
    closers = suggestions.closers
    after_closers = document.position_at(offset + len(closers), server.encoding) if closers else cursor
    items = []
    for text in suggestions.texts:
        if closers and "\n" in text:
            # The text ends with a newline and the cursor line's indentation: the closers follow it.
            items.append(
                types.InlineCompletionItem(
                    insert_text=text + closers.strip(), range=types.Range(start=cursor, end=after_closers)
                )
            )
        else:
            items.append(
                types.InlineCompletionItem(insert_text=text, range=types.Range(start=cursor, end=cursor))
            )
    return types.InlineCompletionList(items=items)


async def suggestions_at(
    server: RequestContext, document: Document, offset: int, invoked: bool
) -> Suggestions:
    """The suggestions at ``offset``; none when the model server failed (the status says why)."""
    try:
        return await server.suggestions.suggest(document, offset, invoked)
    except BackendError:
        return Suggestions([], "the model server failed")
