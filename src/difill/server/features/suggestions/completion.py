"""``textDocument/completion``: the fallback for clients without inline completion.

Each suggestion becomes an item whose ``textEdit`` replaces the word typed before the cursor with
that word plus the suggestion, so the client's own filtering (by the typed word) keeps the item.
Clients that declared inline completion are not offered it (server.py ``optional_handlers``,
decided at initialize): they show suggestions as ghost text and would otherwise show them twice.  The list is incomplete: the client asks again as the user
types, because a suggestion belongs to one cursor position.
"""

from __future__ import annotations

import re

from lsprotocol import types

from difill.server.request_context import RequestContext, document_for_request

WORD_BEFORE = re.compile(r"(?<!\w)\w*+$")  # starts where the word does: linear on a long word
# The typed word is looked for in this many characters before the cursor: "\w*$" tries every
# start in its text, so over a whole 30 KB line (a hex literal) it took 7 s on the event loop.
WORD_CHARS = 200
LABEL_CHARS = 60
EMPTY = types.CompletionList(is_incomplete=False, items=[])


async def completion(ls: RequestContext, params: types.CompletionParams) -> types.CompletionList:
    """The handler itself (registered in server.py ``optional_handlers``): the server is ``ls``."""
    document = document_for_request(ls.documents, params.text_document.uri)
    if document is None:
        return EMPTY
    offset = document.offset_at(params.position, ls.encoding)
    if offset is None:
        return EMPTY
    context = params.context
    invoked = context is None or context.trigger_kind == types.CompletionTriggerKind.Invoked
    texts = (await ls.suggestions.suggest(document, offset, invoked)).texts

    line_start = document.line_starts[document.position_at(offset, ls.encoding).line]
    typed = typed_word(document.text[max(line_start, offset - WORD_CHARS) : offset])
    replace = document.range_of(offset - len(typed), offset, ls.encoding)
    items = [
        types.CompletionItem(
            label=label_for(typed + text),
            kind=types.CompletionItemKind.Text,
            detail="difill",
            documentation=types.MarkupContent(kind=types.MarkupKind.PlainText, value=typed + text),
            sort_text=f"{rank:02d}",
            filter_text=typed + text,
            insert_text_format=types.InsertTextFormat.PlainText,
            text_edit=types.TextEdit(range=replace, new_text=typed + text),
        )
        for rank, text in enumerate(texts)
    ]
    return types.CompletionList(is_incomplete=True, items=items)


def typed_word(before: str) -> str:
    """The word that ``before`` (at most ``WORD_CHARS`` of the line before the cursor) ends with."""
    word = WORD_BEFORE.search(before[-WORD_CHARS:])
    return word.group() if word else ""


def label_for(text: str) -> str:
    """The first non-blank line, shortened: what a completion menu has room for."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), text.strip())
    return line if len(line) <= LABEL_CHARS else line[: LABEL_CHARS - 1] + "…"
