"""``textDocument/inlineCompletion``: ghost text at the cursor.

``Invoked`` (the user asked) -> up to ``candidates`` distinct suggestions; ``Automatic`` (typing)
-> one.  Each item inserts its text at the cursor (an empty range there), except a block filled
before closers the editor auto-closed (``=> {█})``): that item replaces them, and its text ends
with them on a line of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from difill.server.server import DifillServer

EMPTY = types.InlineCompletionList(items=[])


async def inline_completion(
    server: DifillServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    document = server.document_for_request(params.text_document.uri)
    if document is None:
        return EMPTY
    offset = document.offset_at(params.position, server.encoding)
    if offset is None:  # a line past the end of the document
        return EMPTY
    invoked = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    suggestions = await server.suggestions.suggest(document, offset, invoked)
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
