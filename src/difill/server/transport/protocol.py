"""pygls' protocol, adjusted where difill needs other behaviour (see ``DifillProtocol``)."""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from difill.server.request_context import PINNED_DOCUMENTS, REQUEST_PARAMS

if TYPE_CHECKING:
    from difill.server.documents import Documents

log = logging.getLogger("difill.server")

_ANSWERED = object()  # a malformed message that was already answered (or its waiter told)


class ProtocolOwner(Protocol):
    """What ``DifillProtocol`` reads of the server that owns it; ``DifillServer`` is one.  Named
    here rather than imported: server.py imports this module, and the type would close a circle."""

    documents: Documents
    command_tasks: dict[Any, asyncio.Task]  # request id -> the task running the command
    experimental: dict[str, Any]  # capabilities.experimental, decided by the initialize handler

    def lost_sync(self, uris: list[str], why: str) -> None: ...


class DifillProtocol(LanguageServerProtocol):
    """pygls' protocol with these changes.

    * A request is read together with the documents as they are at that moment, so a
      ``didChange`` read right after it cannot shift its positions.
    * A request whose parameters do not parse is answered with InvalidParams (pygls would only
      log it, and the client would wait forever).
    * Documents live in ``difill.server.documents`` (correct UTF-8/16/32 columns, LSP line ends),
      so pygls' own copy of each document is not kept.
    * ``$/cancelRequest`` also cancels a running command (pygls runs commands under another id).
    * An answer from the client that cannot be read (``workspace/applyEdit`` answered with null)
      fails the request that waits for it at once; pygls dropped it and the request waited on.
    * Malformed JSON-RPC is answered as JSON-RPC says (InvalidRequest, MethodNotFound, and
      ParseError from the server), and a notification's future is not kept forever.
    * The lifecycle is the specification's: before ``initialize`` a request is answered
      ServerNotInitialized (-32002) and a notification dropped; a second ``initialize`` is an
      InvalidRequest (pygls would load the model again); after ``shutdown`` every request is an
      InvalidRequest and only ``exit`` is heard. ``shutdown`` cancels what runs without tripping
      over futures that leave the table as they are cancelled (pygls answered -32603 then).
    """

    _server: ProtocolOwner  # pygls types it LanguageServer; these are the parts read here
    _initialize_seen = False

    def _lifecycle_error(self, method_name: str) -> JsonRpcException | None:
        if method_name == types.INITIALIZE:
            if self._initialize_seen:
                return JsonRpcInvalidRequest("initialize was already received")
            self._initialize_seen = True
            return None
        if not self._initialize_seen:
            return JsonRpcServerNotInitialized("the server is not initialized: send initialize first")
        if self._shutdown:
            return JsonRpcInvalidRequest("the server is shutting down: only exit is accepted")
        return None

    def _handle_notification(self, method_name: str, params: Any):
        if method_name != types.EXIT and (not self._initialize_seen or self._shutdown):
            log.info("%s notification dropped: %s", method_name,
                     "not initialized yet" if not self._initialize_seen else "shutting down")  # fmt: skip
            return None
        return super()._handle_notification(method_name, params)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams):
        result = yield from super().lsp_initialize(params)
        # What LSP has no capability for (next edits, textDocument/copilotInlineEdit) is advertised
        # here, as the server's initialize handler decided (server.optional_handlers).
        result.capabilities.experimental = self._server.experimental or None
        return result

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args):
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id, future in list(self._request_futures.items()):  # a copy: cancelling pops entries
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def _handle_request(self, msg_id, method_name, params):
        if (error := self._lifecycle_error(method_name)) is not None:
            log.info("%s request refused: %s", method_name, error.message)
            self._send_error(msg_id, error)
            return None
        PINNED_DOCUMENTS.set(self._server.documents.snapshot())
        REQUEST_PARAMS.set(params)  # command handlers only get the arguments; some need the token
        return super()._handle_request(msg_id, method_name, params)

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        # pygls files the future of each handler it runs in _request_futures under its id, and only
        # answering a request takes it out again.  A notification handled by a generator (didOpen,
        # didChange, didClose) or a generator's next step runs under an id pygls makes up, which
        # nothing ever looks up or removes: every keystroke leaked a future, ~2.5 KB
        # (tests/reliability/test_soak.py).  Take those out once they are done.
        is_request = isinstance(callback, functools.partial) and callback.func == self._send_handler_result
        future = None if is_request else self._request_futures.get(msg_id)
        if future is not None:
            if future.done():
                self._request_futures.pop(msg_id, None)
            else:  # still running: keep the reference (a task nobody holds may be collected) until then
                future.add_done_callback(lambda _, msg_id=msg_id: self._request_futures.pop(msg_id, None))

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
            if isinstance(data, dict) and "id" in data and "method" not in data:
                # An answer to one of our requests that pygls cannot read (workspace/applyEdit
                # answered with null): pygls would drop it and leave the request waiting forever.
                future = self._request_futures.pop(data["id"], None)
                if future is not None and not future.done():
                    future.set_exception(JsonRpcException(message="the client's answer could not be read"))
                log.warning("an answer from the client could not be read (id %r)", data["id"])
                return _ANSWERED
            if isinstance(data, dict) and data.get("method") == types.TEXT_DOCUMENT_DID_CHANGE:
                # A change that cannot be read cannot be applied: the document's copy here is lost.
                why = "a change from the editor could not be read"
                self._server.lost_sync(self._server.documents.mark_unsynced(_changed_uri(data), why), why)
            if not (isinstance(data, dict) and "id" in data and "method" in data):
                raise
            method = data.get("method")
            log.warning("malformed %s request answered with an error", method)
            if not isinstance(method, str):
                error: JsonRpcException = JsonRpcInvalidRequest("the method must be a string")
            elif not self._has_handler(method):
                # pygls' message type for an unknown method requires "params", which JSON-RPC lets
                # a request leave out: without them it is still an unknown method, not bad params.
                error = JsonRpcMethodNotFound.of(method)
            else:
                error = JsonRpcInvalidParams(f"invalid parameters for {method}")
            self._send_error(_message_id(data), error)
            return _ANSWERED

    def _has_handler(self, method: str) -> bool:
        return method in self.fm.builtin_features or method in self.fm.features

    def handle_message(self, message):
        if message is _ANSWERED:
            return
        # JSON that is not a JSON-RPC 2.0 message (an array, a number, an object without
        # "jsonrpc": "2.0", a method that is not a string, an id that is neither a number nor a
        # string): JSON-RPC answers InvalidRequest.  pygls dropped some of these silently and
        # answered others with an InternalError and its own traceback.
        problem = _invalid_request(message)
        if problem is not None:
            log.warning("invalid JSON-RPC message answered with an error: %s", problem)
            self._send_error(_message_id(message), JsonRpcInvalidRequest(problem))
            return
        method = getattr(message, "method", None)
        if self._shutdown and method not in (None, types.EXIT) and getattr(message, "id", None) is not None:
            # pygls drops every message after shutdown, so such a request was never answered.
            self._send_error(
                message.id, JsonRpcInvalidRequest("the server is shutting down: only exit is accepted")
            )
            return
        return super().handle_message(message)

    def _send_error(self, msg_id: Any, error: JsonRpcException) -> None:
        if msg_id is None:
            self.send_error_without_id(error)
        else:
            self._send_response(msg_id, error=error.to_response_error())

    def send_error_without_id(self, error: JsonRpcException) -> None:
        """An error response with ``"id": null``, as JSON-RPC wants for a message whose id cannot be
        read (pygls' own message type leaves a null id out)."""
        self._send_data(
            {"jsonrpc": "2.0", "id": None, "error": {"code": error.code, "message": error.message}}
        )

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


def _invalid_request(message: Any) -> str | None:
    """Why ``message`` (as pygls parsed it) is not a JSON-RPC 2.0 message; None when it is one."""
    if isinstance(message, dict):  # pygls leaves an object without "jsonrpc" as it is
        return 'a JSON-RPC 2.0 message needs "jsonrpc": "2.0"'
    if not hasattr(message, "jsonrpc"):  # an array, a number, a string, null
        return f"a JSON-RPC message must be an object, got {type(message).__name__}"
    if message.jsonrpc != "2.0":
        return 'a JSON-RPC 2.0 message needs "jsonrpc": "2.0"'
    if hasattr(message, "method") and not isinstance(message.method, str):
        return "the method must be a string"
    if hasattr(message, "id") and not _valid_id(message.id):
        return "the id must be a number or a string"
    return None


def _changed_uri(data: dict) -> str | None:
    """The URI a malformed didChange names, or None (then it could be any open document)."""
    params = data.get("params")
    document = params.get("textDocument") if isinstance(params, dict) else None
    uri = document.get("uri") if isinstance(document, dict) else None
    return uri if isinstance(uri, str) else None


def _valid_id(msg_id: Any) -> bool:
    return msg_id is None or (isinstance(msg_id, int | str) and not isinstance(msg_id, bool))


def _message_id(message: Any) -> Any:
    """The message's id if it is a usable one, else None."""
    msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    return msg_id if _valid_id(msg_id) else None
