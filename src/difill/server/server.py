"""The difill language server: pygls 2 in front of the diffusion engine.

The handlers here are thin: they find the document, convert positions, and hand the work to
the features (``features/suggestions``, ``features/edits``); document and server events reach
every feature through ``lifecycle.py``.  The model loads in the background after
``initialized`` and runs on its own worker thread (``engine_host.py``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from typing import Any

from lsprotocol import types
from pygls.capabilities import ServerCapabilitiesBuilder
from pygls.exceptions import JsonRpcException, JsonRpcParseError
from pygls.io_ import run_async
from pygls.lsp.server import LanguageServer

from difill import __version__
from difill.engine import secrets
from difill.server import workspace_values
from difill.server.config import Settings, SettingsLayers, backend_spec, command_line_settings, needs_reload
from difill.server.context.feature import ContextFeature
from difill.server.documents import UTF16, Documents
from difill.server.engine_host import EngineHost, LoadProgress
from difill.server.feature_handle import FeatureHandle
from difill.server.features.edits.code_actions import COMMANDS, code_actions, resolve_code_action
from difill.server.features.edits.commands import (
    ACCEPT_EDIT,
    REJECT_EDIT,
    accept_edit,
    reject_edit,
    run_edit_command,
)
from difill.server.features.edits.service import EditService
from difill.server.features.next_edit.service import METHOD as NEXT_EDIT_METHOD
from difill.server.features.next_edit.service import SHOWN as NEXT_EDIT_SHOWN
from difill.server.features.next_edit.service import NextEditService
from difill.server.features.suggestions.completion import completion
from difill.server.features.suggestions.inline_completion import inline_completion
from difill.server.features.suggestions.service import SuggestionService
from difill.server.lifecycle import Lifecycle
from difill.server.transport.framing import ClientWriter, ResyncingReader
from difill.server.transport.log_messages import LogMessageHandler, configure_logging, use_log_file
from difill.server.transport.progress import ProgressReporter
from difill.server.transport.protocol import DifillProtocol
from difill.server.transport.tcp import check_host, serve_one_tcp_client
from difill.server.trees import SyntaxTrees

NAME = "difill"
STATUS = "difill/status"

log = logging.getLogger("difill.server")


class DifillServer(LanguageServer):
    def __init__(self, base: Settings | None = None) -> None:
        super().__init__(NAME, __version__, protocol_cls=DifillProtocol)
        self.layers = SettingsLayers(base or Settings())
        self._current_settings = self.layers.settings()
        self.documents = Documents()
        self.trees = SyntaxTrees()  # one parse per document version, for suggestions and edits alike
        self.host = EngineHost(self.send_status)
        self.context = ContextFeature(
            self.documents, self.settings, lambda: self.host.busy
        )  # workspace index
        # A program, model, log or server a workspace's settings file names is refused (issue 62).
        self.layers.screen = workspace_values.screen(lambda: self.context.folders)
        self.encoding: str = UTF16
        handle = FeatureHandle(
            self.documents, self.host, self.settings, self.trees, lambda: self.encoding, self.protocol.notify,
            self.excluded_document,
        )  # fmt: skip
        self.suggestions = SuggestionService(handle, workspace=self.context)
        self.edits = EditService(handle)
        self.next_edits = NextEditService(handle)
        # Every event goes to each of these, in this order: jobs stop before the model host.
        self.lifecycle = Lifecycle()
        for feature in (self.suggestions, self.edits, self.next_edits, self.trees, self.context, self.host):
            self.lifecycle.add(feature)
        self.client_has_progress = False
        self.client_resolves_code_action_edits = False
        self.client_has_document_changes = False
        self.client_reviews_edits = False  # edits become proposals (issue 24)
        self.log_handler: LogMessageHandler | None = None
        self.command_tasks: dict[Any, asyncio.Task] = {}  # request id -> the task running the command
        self.experimental: dict[str, Any] = {}  # capabilities.experimental (optional_handlers)
        self._pending_problems: list[str] = []
        self._shown_problems: list[str] = []  # the last settings problems shown (show_problems)
        self._shown_refused: list[str] = []  # the last workspace values refused (show_refused)
        self._told_restart = False  # nextEdit turned on after an initialize that had it off
        self._last_error_shown: str | None = None  # the last error popup, until the status is ready
        self._tasks: set[asyncio.Task] = set()

    def settings(self) -> Settings:
        return self._current_settings

    def report_server_error(self, error: Exception, source: Any) -> None:
        # A message that cannot be read at all (bad JSON, a notification with wrong types) is the
        # client's problem: log it rather than pop up an error in the editor for each one.
        if source is JsonRpcException:
            log.warning("unreadable message from the client ignored: %s", type(error).__name__)
            if isinstance(error, ValueError):  # JSONDecodeError, UnicodeDecodeError: not JSON at all
                # JSON-RPC 2.0: a message that does not parse is answered with ParseError and a
                # null id (its id cannot be known).  pygls only logged it.
                self.protocol.send_error_without_id(JsonRpcParseError("the message is not valid JSON"))
                # It may have been a didChange of any open document: none of them can be trusted.
                why = "a message from the editor could not be read"
                self.lost_sync(self.documents.mark_unsynced(None, why), why)
            return
        super().report_server_error(error, source)

    def _start_io_async(self, stdin=None, stdout=None) -> None:
        """pygls' stdio loop, reading through ``ResyncingReader``: one badly framed message must
        not make the server deaf to every later one (see transport/framing.py)."""
        self._stop_event = threading.Event()
        reader = ResyncingReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(ClientWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(
                run_async(
                    stop_event=self._stop_event,
                    reader=reader,
                    protocol=self.protocol,
                    logger=logging.getLogger("pygls.server"),
                    error_handler=self.report_server_error,
                )
            )
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def _refresh_settings(self) -> None:
        self._current_settings = self.layers.settings()

    def excluded_document(self, uri: str) -> bool:
        """The document is on the secrets deny list or in contextExclude: no suggestion, no edit."""
        return self.context.excluded(uri)

    def send_status(self, state: str, message: str | None = None, latency_ms: float | None = None) -> None:
        """``difill/status`` for status bars: loading | ready | busy | error; ``recentLatencyMs`` is
        the median request-to-answer time of the last suggestions the model answered."""
        params: dict[str, Any] = {"state": state}
        if latency_ms is not None:
            params["latencyMs"] = round(latency_ms, 1)
        if message is not None:
            params["message"] = message = secrets.scrub(message)
        recent = self.suggestions.recent_latency_ms()
        if recent is not None:  # for clients' adaptive debounce: what a suggestion costs lately
            params["recentLatencyMs"] = round(recent, 1)
        self.protocol.notify(STATUS, params)
        if state in ("ready", "loading"):  # a new event: its error is shown again
            self._last_error_shown = None
        elif state == "error" and message and message != self._last_error_shown:
            # One popup per event: the same failure again (every keystroke's ghost text against a
            # remote that answers 503) is in the status, not in another popup.
            self._last_error_shown = message
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"difill: {message}")
            )

    def lost_sync(self, uris: list[str], why: str) -> None:
        """Tell the user, once per event, which documents' copies here may differ from the editor's.

        Nothing is asked of the model for them (``Documents.get`` hides them) until each is
        reopened or a full-text change arrives: an edit computed on a different copy would corrupt
        the file.  One unreadable message with 40 documents open is one message, not 40 popups."""
        if not uris:
            return
        names = [uri.rsplit("/", 1)[-1] for uri in uris]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        log.warning("out of sync (%s): %s; no model work for them until reopened", why, ", ".join(names))
        subject = f"{shown} is" if len(names) == 1 else f"{len(names)} documents ({shown}) are"
        self.send_status("error", f"{subject} out of sync with the editor ({why}); "
                                  "close and reopen to get suggestions and edits again")  # fmt: skip

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        """Every popup passes ``secrets.scrub``: no key, URL password or query string is shown."""
        params.message = secrets.scrub(params.message)
        super().window_show_message(params)

    def show_problems(self, problems: list[str], what: str) -> None:
        """Warn about ``problems``, once: a client that sends the same settings as
        initializationOptions and again as didChangeConfiguration (Neovim's does) is told once."""
        if problems == self._shown_problems:
            return
        self._shown_problems = list(problems)
        if problems:
            text = f"difill: invalid {what}: " + "; ".join(problems)
            log.warning("%s", text)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))

    def show_refused(self) -> None:
        """Say which settings' values were refused as a workspace's (workspace_values.py), once:
        Neovim sends the same settings at initialize and again as a change."""
        refused = list(dict.fromkeys(self.layers.refused))
        if refused == self._shown_refused:
            return
        self._shown_refused = refused
        for sentence in refused:
            log.warning("%s", sentence)
        if refused:
            text = "difill: " + "; ".join(refused)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))

    async def run_command(self, coroutine) -> Any:
        """Run a command's work so that $/cancelRequest for its request can cancel it."""
        msg_id = self.protocol.msg_id
        task = asyncio.current_task()
        if msg_id is not None and task is not None:
            self.command_tasks[msg_id] = task
        try:
            return await coroutine
        finally:
            self.command_tasks.pop(msg_id, None)

    def spawn(self, coroutine) -> asyncio.Task:
        """A background task that is kept alive until it ends."""
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def load_model(self) -> asyncio.Task:
        settings = self.settings()
        progress = ProgressReporter(self) if self.client_has_progress else LoadProgress()
        self.suggestions.cache.clear()
        return self.spawn(self.host.load(backend_spec(settings), progress))


def create_server(base: Settings | None = None) -> DifillServer:
    server = DifillServer(base)
    for register in (start_handlers, workspace_handlers, document_handlers, request_handlers, stop_handlers):
        register(server)
    return server


def start_handlers(server: DifillServer) -> None:
    """initialize (what the client can do, the first settings) and initialized (the model loads)."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: DifillServer, params: types.InitializeParams) -> None:
        capabilities = params.capabilities
        ls.encoding = str(ServerCapabilitiesBuilder.choose_position_encoding(capabilities))
        text_document = capabilities.text_document
        ls.client_has_progress = bool(capabilities.window and capabilities.window.work_done_progress)
        code_action = text_document.code_action if text_document else None
        resolvable = (
            code_action.resolve_support.properties if code_action and code_action.resolve_support else []
        )
        ls.client_resolves_code_action_edits = "edit" in resolvable
        workspace_edit = capabilities.workspace.workspace_edit if capabilities.workspace else None
        ls.client_has_document_changes = bool(workspace_edit and workspace_edit.document_changes)
        ls.client_reviews_edits = reviews_edits(capabilities.experimental)
        ls.context.initialize(params)  # first: the settings' screen reads the folders' settings files
        ls._pending_problems = ls.layers.set_initialization(params.initialization_options)
        ls._refresh_settings()
        if (problem := use_log_file(ls.settings().log_file)) is not None:
            ls._pending_problems.append(problem)
        if ls.log_handler is not None:
            ls.log_handler.loop = asyncio.get_running_loop()
        optional_handlers(
            ls, client_has_inline_completion=bool(text_document and text_document.inline_completion)
        )

    @server.feature(types.INITIALIZED)
    def initialized(ls: DifillServer, params: types.InitializedParams) -> None:
        ls.show_problems(ls._pending_problems, "initializationOptions")
        ls.show_refused()
        log.info("difill %s: position encoding %s", __version__, ls.encoding)
        ls.load_model()
        ls.context.start(ls)


def workspace_handlers(server: DifillServer) -> None:
    """The workspace's folders, watched files and settings change."""

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(ls: DifillServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        ls.context.folders_changed(params.event)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: DifillServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.context.watched_files_changed(params.changes)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: DifillServer, params: types.DidChangeConfigurationParams) -> None:
        before = ls.settings()
        problems = ls.layers.set_workspace(params.settings)
        if problems is None:  # nothing for difill in this payload
            return
        ls.show_problems(problems, "settings")
        ls.show_refused()
        ls._refresh_settings()
        after = ls.settings()
        if before.log_file != after.log_file:
            ls.show_problems([p for p in [use_log_file(after.log_file)] if p], "settings")
        ls.suggestions.cache.clear()
        ls.context.settings_changed(before, after)
        if after.next_edit != "off" and not ls.experimental and not ls._told_restart:
            ls._told_restart = True  # the capability was decided at initialize (optional_handlers)
            text = "difill: nextEdit was off when the server started: restart it for next edits"
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))
        if needs_reload(before, after):
            log.info("model settings changed: reloading")
            ls.load_model()


def document_handlers(server: DifillServer) -> None:
    """Document sync: each event reaches every feature through ``ls.lifecycle``."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DifillServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        ls.documents.open(doc.uri, doc.language_id, doc.version, doc.text)
        # A second didOpen of an open document (no didClose) replaces its text, maybe at the same
        # version: a change like any other (Feature.document_opened), so work for the old text stops.
        ls.lifecycle.document_opened(doc.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DifillServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        was_unsynced = ls.documents.unsynced_reason(uri) is not None
        before = ls.documents.get(uri)
        after = ls.documents.change(uri, params.text_document.version, params.content_changes, ls.encoding)
        if after is None:
            log.warning("didChange for a document that is not open; ignored")
            return
        why = ls.documents.unsynced_reason(uri)
        if why is not None and not was_unsynced:
            ls.lost_sync([uri], why)
        ls.lifecycle.text_changed(before, after, params.content_changes)
        ls.lifecycle.document_changed(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DifillServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.lifecycle.document_closed(uri)
        ls.documents.close(uri)


def request_handlers(server: DifillServer) -> None:
    """What the editor asks for: ghost text, next edits, completions, code actions and commands."""

    server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())(inline_completion)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.RefactorRewrite], resolve_provider=True
        ),
    )
    def on_code_action(ls: DifillServer, params: types.CodeActionParams):
        return code_actions(ls, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def on_resolve_code_action(ls: DifillServer, action: types.CodeAction):
        return await resolve_code_action(ls, action)

    for kind, command in COMMANDS.items():  # difill.editSelection, difill.fillHoles, difill.completeBlock
        server.command(command)(edit_command(kind))

    @server.command(ACCEPT_EDIT)
    async def on_accept_edit(ls: DifillServer, *arguments: Any):
        return await ls.run_command(accept_edit(ls, arguments))

    @server.command(REJECT_EDIT)
    def on_reject_edit(ls: DifillServer, *arguments: Any):
        return reject_edit(ls, arguments)


def optional_handlers(server: DifillServer, client_has_inline_completion: bool) -> None:
    """The features that are on, registered once at initialize (jedi-language-server's way): pygls
    builds the capabilities from what is registered when this handler returns, so a feature that is
    off is neither advertised nor answered, and no request asks again what the client can do.

    * Next edits (``textDocument/copilotInlineEdit``) unless the ``nextEdit`` setting is off.  Turned
      off later, the service answers none; turned on later, the editor was never told: restart.
    * ``textDocument/completion``, the fallback, for a client without inline completion only: one
      that has it shows ghost text, and a completion list would show each suggestion twice."""
    if server.settings().next_edit != "off":
        server.feature(NEXT_EDIT_METHOD)(on_inline_edit)
        server.feature(NEXT_EDIT_SHOWN)(on_inline_edit_shown)
        # No LSP capability yet: clients that speak the method look for these (transport/protocol.py).
        server.experimental = {"inlineEditProvider": True, "difill": {"nextEdit": True}}
    if not client_has_inline_completion:
        server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())(completion)


async def on_inline_edit(ls: DifillServer, params: Any):
    return await ls.next_edits.answer(params)


def on_inline_edit_shown(ls: DifillServer, params: Any) -> None:
    ls.next_edits.did_show(params)


def stop_handlers(server: DifillServer) -> None:
    """shutdown and exit."""

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DifillServer, params: None) -> None:
        ls.lifecycle.shutdown()

    @server.feature(types.EXIT)
    def exit_now(ls: DifillServer, params: None) -> None:
        # Interpreter teardown after torch takes seconds, and editors wait for the process on
        # quit: nothing is left to save, so flush the logs and leave at once (0 after shutdown).
        logging.shutdown()
        os._exit(0 if ls.protocol._shutdown else 1)


def edit_command(kind: str):
    """The handler of one edit's ``workspace/executeCommand``; $/cancelRequest cancels it."""

    async def run(ls: DifillServer, *arguments: Any):
        return await ls.run_command(run_edit_command(ls, kind, arguments))

    return run


def reviews_edits(experimental: Any) -> bool:
    """``capabilities.experimental = {"difill": {"editProposals": true}}``: the client shows each
    edit for review and accepts or rejects it (difill.acceptEdit / difill.rejectEdit)."""
    difill = experimental.get("difill") if isinstance(experimental, dict) else None
    return isinstance(difill, dict) and difill.get("editProposals") is True


def run_server(args: Any) -> int:
    """``difill serve``: stdio by default, ``--tcp`` on ``--host`` (127.0.0.1) and ``--port``."""
    server = create_server(command_line_settings(args))
    server.log_handler = configure_logging(
        server, getattr(args, "log_level", "INFO"), getattr(args, "log_file", None)
    )
    _install_uvloop()
    if getattr(args, "tcp", False):
        host, port = getattr(args, "host", None) or "127.0.0.1", getattr(args, "port", 2087)
        check_host(host, getattr(args, "allow_remote", False))
        log.warning("difill listening on %s:%s for one client", host, port)
        serve_one_tcp_client(server, host, port)
    else:
        server.start_io()
    return 0


def _install_uvloop() -> None:
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
