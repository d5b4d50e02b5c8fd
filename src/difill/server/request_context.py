"""What a feature's request handler gets of the server, and the state of the request it handles.

Features take a ``RequestContext``, not the server class, as esbonio's features do: they name only
what they use, and no feature imports ``server.py``, which imports every feature to register its
handlers.  ``DifillServer`` is one ``RequestContext``; a test may pass any object with these parts.

The request's own state lives in context variables that ``DifillProtocol`` sets as each request
arrives: the open documents as they were at that moment (so a ``didChange`` read right after the
request cannot shift its positions) and the request's raw parameters (command handlers only get
the arguments; some need the progress token).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

from difill.server.documents import Document, Documents

if TYPE_CHECKING:
    from pygls.protocol import LanguageServerProtocol

    from difill.server.config import Settings
    from difill.server.features.edits.service import EditService
    from difill.server.features.suggestions.service import SuggestionService
    from difill.server.trees import SyntaxTrees

# The open documents as they were when the current request arrived (None outside requests).
PINNED_DOCUMENTS: contextvars.ContextVar[dict[str, Document] | None] = contextvars.ContextVar(
    "difill_pinned_documents", default=None
)
REQUEST_PARAMS: contextvars.ContextVar[Any] = contextvars.ContextVar("difill_request_params", default=None)


def document_for_request(documents: Documents, uri: str) -> Document | None:
    """The document as it was when the current request arrived (or now, outside requests)."""
    pinned = PINNED_DOCUMENTS.get()
    return pinned.get(uri) if pinned is not None else documents.get(uri)


def request_params() -> Any:
    """The parameters of the request being handled (None outside requests)."""
    return REQUEST_PARAMS.get()


class RequestContext(Protocol):
    """The parts of the server a feature handler uses."""

    encoding: str  # the negotiated position encoding
    documents: Documents
    trees: SyntaxTrees  # the documents' syntax trees, for suggestions and edits
    suggestions: SuggestionService
    edits: EditService
    client_resolves_code_action_edits: bool
    client_has_document_changes: bool
    client_reviews_edits: bool

    @property
    def protocol(self) -> LanguageServerProtocol: ...

    def settings(self) -> Settings: ...

    def workspace_apply_edit_async(
        self, params: types.ApplyWorkspaceEditParams
    ) -> Awaitable[types.ApplyWorkspaceEditResult]: ...
