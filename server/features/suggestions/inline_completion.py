"""``textDocument/inlineCompletion``: ghost text at the cursor.

``Invoked`` (the user asked) -> up to ``candidates`` distinct suggestions; ``Automatic`` (typing)
-> one.  Each item inserts its text at the cursor (an empty range there).  When a remote model
server fails (503, a wrong key, a malformed answer), the answer is empty: the status already says
what the server said (engine_host.py), and ghost text is never an error popup per keystroke.
"""

from __future__ import annotations

from lsprotocol import types

from difill.engine.api import BackendError
from difill.server.documents import Document
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
    texts = await suggestion_texts(server, document, offset, invoked)
    cursor = document.position_at(offset, server.encoding)
    return types.InlineCompletionList(
        items=[
            types.InlineCompletionItem(insert_text=text, range=types.Range(start=cursor, end=cursor))
            for text in texts
        ]
    )


async def suggestion_texts(
    server: RequestContext, document: Document, offset: int, invoked: bool
) -> list[str]:
    """The suggestions at ``offset``; none when the model server failed (the status says why)."""
    try:
        return (await server.suggestions.suggest(document, offset, invoked)).texts
    except BackendError:
        return []
