"""The workspace index as a server feature: it hears the workspace's events and keeps the index
(index.py) fed, and gives the suggestion path ``retrieve``.

Folders come from ``initialize`` (``workspaceFolders``, else ``rootUri``, else ``rootPath``) and
``workspace/didChangeWorkspaceFolders``; files changed on disk from
``workspace/didChangeWatchedFiles``, registered dynamically when the client supports it; open
documents and edit locations from the document events.  Everything here runs on the event loop
and only hands work to the index's worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from difill.server.config import Settings
from difill.server.context import files
from difill.server.context.found import Retrieval
from difill.server.context.index import IndexLimits, WorkspaceIndex
from difill.server.context.policy import ContextPolicy
from difill.server.documents import Document, Documents
from difill.server.lifecycle import Feature

if TYPE_CHECKING:  # pygls' server type: server.py imports this module, so DifillServer would be a circle
    from pygls.lsp.server import LanguageServer

log = logging.getLogger("difill.server")

WATCHER_ID = "difill-workspace-index"
INDEX_FIELDS = (
    "workspace_index", "index_max_files", "index_max_bytes", "index_max_file_bytes", "context_exclude",
    "project_python",
)  # fmt: skip


def limits_of(settings: Settings) -> IndexLimits:
    return IndexLimits(settings.index_max_files, settings.index_max_bytes, settings.index_max_file_bytes)


def folder_path(uri: str) -> str | None:
    """The directory of a ``file:`` URI; None for any other scheme or a malformed URI."""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None
    try:
        return to_fs_path(uri)
    except Exception:  # a malformed URI from the client: no folder, not a crash
        return None


class ContextFeature(Feature):
    def __init__(
        self,
        documents: Documents,
        settings: Callable[[], Settings],
        model_busy: Callable[[], bool] | None = None,
    ) -> None:
        self.documents = documents
        self.settings = settings
        self.model_busy = model_busy  # the index's build waits while the model fills
        self.index: WorkspaceIndex | None = None
        self.folders: list[str] = []
        self.client_watches_dynamically = False
        self._server: LanguageServer | None = None
        self._policy = ContextPolicy(settings().context_exclude)  # see ``policy``
        self._git_ignored: dict[str, bool] = {}  # per open document: its path's rules, read once

    @property
    def policy(self) -> ContextPolicy:
        """What is never read (policy.py), for the settings as they are now: ``contextExclude``
        comes in ``initializationOptions`` as often as in a later change of settings (Neovim's
        ``init_options``), and a policy made once before ``initialize`` read neither."""
        exclude = self.settings().context_exclude
        if self._policy.exclude != exclude:
            self._policy = ContextPolicy(exclude)
        return self._policy

    # ---- server events ----

    def initialize(self, params: types.InitializeParams) -> None:
        """Take the workspace folders and what the client can do; nothing is read yet."""
        if params.workspace_folders:
            uris = [folder.uri for folder in params.workspace_folders]
        elif params.root_uri:
            uris = [params.root_uri]
        else:
            uris = []
        self.folders = [p for p in map(folder_path, uris) if p]
        if not self.folders and params.root_path:
            self.folders = [params.root_path]
        workspace = params.capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        self.client_watches_dynamically = bool(watched and watched.dynamic_registration)

    def start(self, server: LanguageServer) -> None:
        """After ``initialized``: start indexing (when enabled) and ask for file events."""
        self._server = server
        self._restart()
        if self.client_watches_dynamically:
            registration = types.Registration(
                id=WATCHER_ID,
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
                ),
            )
            try:
                server.client_register_capability(types.RegistrationParams(registrations=[registration]))
            except Exception as err:  # the client may refuse: the index then only misses disk changes
                log.info("no file watching: %s", type(err).__name__)

    def settings_changed(self, before: Settings, after: Settings) -> None:
        if any(getattr(before, name) != getattr(after, name) for name in INDEX_FIELDS):
            self._restart()

    def folders_changed(self, event: types.WorkspaceFoldersChangeEvent) -> None:
        for folder in event.removed:
            path = folder_path(folder.uri)
            if path in self.folders:
                self.folders.remove(path)
                if self.index is not None:
                    self.index.remove_folder(path)
        for folder in event.added:
            path = folder_path(folder.uri)
            if path and path not in self.folders:
                self.folders.append(path)
                if self.index is not None:
                    self.index.add_folder(path)

    def watched_files_changed(self, changes: list[types.FileEvent]) -> None:
        if self.index is None:
            return
        for change in changes:
            path = folder_path(change.uri)
            if path is None:
                continue
            if change.type == types.FileChangeType.Deleted:
                self.index.file_deleted(path)
            else:
                self.index.file_changed(path)

    def document_changed(self, uri: str) -> None:
        document = self.documents.get(uri)
        if document is None:
            self._git_ignored.pop(uri, None)
        if self.index is not None:
            self.index.set_open(
                uri,
                document.language_id if document else "",
                document.text if document else None,
                source=document is None or not self.git_ignored(uri),
            )

    def git_ignored(self, uri: str) -> bool:
        """Whether git ignores the open document ``uri`` in its workspace folder: like the files
        the index never reads, it is no source for another document and goes to no remote."""
        if uri not in self._git_ignored:
            path = folder_path(uri)
            folder = next((f for f in self.folders if path and files.inside(path, f)), None)
            self._git_ignored[uri] = bool(folder and path and files.git_ignored(folder, path))
        return self._git_ignored[uri]

    def text_changed(
        self, before: Document | None, after: Document, changes: list[types.TextDocumentContentChangeEvent]
    ) -> None:
        """The lines edited, most recent first: the index reads the code around them."""
        if self.index is None:
            return
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                self.index.note_edit(after.uri, change.range.start.line)

    def document_closed(self, uri: str) -> None:
        self._git_ignored.pop(uri, None)
        if self.index is not None:
            self.index.set_open(uri, "", None)

    def shutdown(self) -> None:
        if self.index is not None:
            self.index.stop()
            self.index = None

    # ---- for the suggestion path ----

    def excluded(self, uri: str) -> bool:
        """Whether the document ``uri`` (or its target, when it is a symlink) is on the secrets
        deny list or ``contextExclude``, or is git-ignored while a remote is set: difill suggests
        nothing there, so that its text never reaches a model (or a remote).  A git-ignored file
        still gets local suggestions."""
        path = folder_path(uri)
        if path is not None and files.denied(path, self.folders, self.policy):
            return True
        return bool(self.settings().remote) and self.git_ignored(uri)

    def generation(self, uri: str) -> int:
        """What answers for ``uri`` read besides it, as a number that changes with it (index.py)."""
        index = self.index
        return 0 if index is None else index.generation(uri)

    def retrieve(self, uri: str, text: str, offset: int, language_id: str) -> Retrieval | None:
        """Draft sources and snippets for a cursor (index.py's ``Retrieval``); None when the
        workspace index is off.  Cheap (a few ms): callable on the event loop."""
        index = self.index
        return None if index is None else index.retrieve(uri, text, offset, language_id)

    def _restart(self) -> None:
        if self.index is not None:
            self.index.stop()
            self.index = None
        settings = self.settings()
        if not settings.workspace_index or self._server is None:
            return
        progress = None
        if getattr(self._server, "client_has_progress", False):
            progress = LoopProgress(self._server, asyncio.get_running_loop())
        self.index = WorkspaceIndex(
            limits_of(settings), progress, self.model_busy, self.policy, settings.project_python
        )
        self.index.start()
        for uri, document in self.documents.snapshot().items():
            self.index.set_open(uri, document.language_id, document.text)
        for folder in self.folders:
            self.index.add_folder(folder)


class LoopProgress:
    """The index's progress (called on its worker thread) as ``$/progress`` sent from the event
    loop, in order: a report or end waits for the begin's token."""

    def __init__(self, server: LanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        from difill.server.transport.progress import ProgressReporter

        self.reporter = ProgressReporter(server, "difill-index")
        self.loop = loop
        self._previous: Any = None

    def _then(self, step: Callable[[], Any]) -> None:
        previous = self._previous

        async def run() -> None:
            if previous is not None:
                await asyncio.wrap_future(previous)
            result = step()
            if asyncio.iscoroutine(result):
                await result

        try:
            self._previous = asyncio.run_coroutine_threadsafe(run(), self.loop)
        except RuntimeError:  # the loop is closed: the server is going away
            pass

    def begin(self, title: str, message: str) -> None:
        self._then(lambda: self.reporter.begin(title, message))

    def report(self, message: str, percentage: int) -> None:
        self._then(lambda: self.reporter.report(message, percentage))

    def end(self, message: str) -> None:
        self._then(lambda: self.reporter.end(message))
