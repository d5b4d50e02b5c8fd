"""pygls' protocol, adjusted where difill needs other behaviour (see ``DifillProtocol``)."""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from difill.server.documents import Document

log = logging.getLogger("difill.server")

# The open documents as they were when the current request arrived (see DifillProtocol).
PINNED_DOCUMENTS: contextvars.ContextVar[dict[str, Document] | None] = contextvars.ContextVar(
    "difill_pinned_documents", default=None
)
REQUEST_PARAMS: contextvars.ContextVar[Any] = contextvars.ContextVar("difill_request_params", default=None)
_ANSWERED = object()  # a malformed request that was already answered with an error


class DifillProtocol(LanguageServerProtocol):
    """pygls' protocol with four changes.

    * A request is read together with the documents as they are at that moment, so a
      ``didChange`` read right after it cannot shift its positions.
    * A request whose parameters do not parse is answered with InvalidParams (pygls would only
      log it, and the client would wait forever).
    * Documents live in ``difill.server.documents`` (correct UTF-8/16/32 columns, LSP line ends),
      so pygls' own copy of each document is not kept.
    * ``$/cancelRequest`` also cancels a running command (pygls runs commands under another id).
    """

    _server: Any  # difill.server.server.DifillServer

    def _handle_request(self, msg_id, method_name, params):
        PINNED_DOCUMENTS.set(self._server.documents.snapshot())
        REQUEST_PARAMS.set(params)  # command handlers only get the arguments; some need the token
        return super()._handle_request(msg_id, method_name, params)

    def _handle_cancel_notification(self, msg_id):
        # pygls runs a command as a task of its own, not under the request's id, so cancelling the
        # request would leave the command running (and sending its edit): cancel that task too.
        task = self._server.command_tasks.pop(msg_id, None)
        if task is not None:
            task.cancel()
        return super()._handle_cancel_notification(msg_id)

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException:
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise
            log.warning("malformed %s request answered with an error", data.get("method"))
            message = f"invalid parameters for {data.get('method')}"
            self._send_response(data["id"], error=JsonRpcInvalidParams(message).to_response_error())
            return _ANSWERED

    def handle_message(self, message):
        if message is _ANSWERED:
            return
        return super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None
