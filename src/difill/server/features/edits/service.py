"""Computing a selection edit: version checks, the model run, previews, the smallest edits.

Shared by ``codeAction/resolve`` and the ``difill.*`` commands.  A request names the document
version its selection belongs to; if the document is at another version (before or after the
model run), or holds other text at the same version (a second ``didOpen``), the edit is refused
with ContentModified and nothing is sent.  An edit the edit gate holds back (text/edit_gate.py:
it parses worse, stutters, renames, moves the indentation, or changes nothing it was told to) is
refused with RequestFailed, its message saying what the model wrote and why, and ``data``
``{"heldBack": [reasons]}``: no applyEdit, no resolved edit, no proposal.  The service also keeps the edits a reviewing client has
not accepted or rejected yet (``proposals.py``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcException, JsonRpcInvalidParams

from difill.engine.api import BackendError, TooLarge
from difill.server.config import Settings
from difill.server.documents import Document, range_json
from difill.server.engine_host import Job, JobCancelled, Jobs, OneJobPerDocument
from difill.server.feature_handle import FeatureHandle
from difill.server.features.edits.diff import text_edits
from difill.server.features.edits.proposals import Proposals
from difill.server.features.edits.selection import (
    EditError,
    EditRequest,
    HeldBack,
    check_shown,
    check_size,
    engine_work,
    new_selection,
)

log = logging.getLogger("difill.server.edits")
REQUEST_FAILED = -32803  # LSP's RequestFailed: a valid request that could not be carried out
PREVIEW = "difill/preview"
PREVIEW_INTERVAL_S = 0.05  # at most one preview per 50 ms reaches the client: editors redraw each one

# (method, params) -> None; sends a notification (called on the event loop)
Notify = Callable[[str, Any], None]


class EditService(OneJobPerDocument):
    def __init__(self, handle: FeatureHandle) -> None:
        self.documents = handle.documents
        self.excluded = handle.excluded  # a document on the secrets deny list (server/context/policy.py)
        self.host = handle.host
        self.settings = handle.settings
        self.trees = handle.trees
        self.notify = handle.notify
        self.encoding = handle.encoding
        self.jobs = Jobs()
        self.proposals = Proposals(handle.documents)

    def document_changed(self, uri: str) -> None:
        super().document_changed(uri)
        self.proposals.document_changed(uri)

    def document_closed(self, uri: str) -> None:
        super().document_closed(uri)
        self.proposals.document_closed(uri)

    def shutdown(self) -> None:
        super().shutdown()
        self.proposals.shutdown()

    def current(self, uri: str, version: int) -> Document:
        """The open document if it is still at ``version``; otherwise the request is refused."""
        document = self.documents.get(uri)
        if document is None and (why := self.documents.unsynced_reason(uri)) is not None:
            raise JsonRpcException(
                message=f"{uri} is out of sync with the editor ({why}): close and reopen it",
                code=REQUEST_FAILED,
            )
        if document is None:
            raise JsonRpcInvalidParams(f"{uri} is not open")
        if document.version != version:
            raise JsonRpcContentModified(
                f"the document changed (the edit is for version {version}, it is now at {document.version})"
            )
        return document

    def unchanged(self, computed_on: Document) -> Document:
        """The open document if it still holds exactly the text an edit was computed on.

        The version alone is not enough: a client that sends ``didOpen`` again for an open
        document (no ``didClose``) may keep the version number and change the text."""
        document = self.current(computed_on.uri, computed_on.version)
        if document.text != computed_on.text:
            raise JsonRpcContentModified(
                f"the document was reopened with other text at version {document.version}; the edit is dropped"
            )
        return document

    async def compute(
        self, request: EditRequest, document: Document, preview_token: str | None = None,
        proposal_id: str | None = None,
    ) -> Computed:  # fmt: skip
        """The document (at ``request.version``) and the edits that make the selection new.

        ``document`` is what ``current`` gave the caller with nothing awaited since: the version is
        checked again only after the awaits here (``unchanged``), not before them.  With
        ``proposal_id`` (a reviewing client) previews are always sent, and carry that id, the
        document and the range they will replace."""
        settings = self.settings()
        await self._check_runnable(request, document, settings)
        where = None
        if proposal_id is not None:
            rng = document.range_of(request.start, request.end, self.encoding())
            where = {"id": proposal_id, "uri": request.uri, "range": range_json(rng)}
        wanted = settings.previews or proposal_id is not None
        sent: list[Previews] = []  # the partly denoised text sent while the job runs, when wanted

        def work(job: Job):
            previews = Previews(self.notify, job, preview_token or proposal_id, where) if wanted else None
            sent.extend([previews] if previews else [])
            on_preview = previews.from_worker if previews else None
            return engine_work(request, document, settings, self.trees, job.before_step, on_preview)

        cancelled = True
        try:
            result = await self.host.run_for(self.jobs, request.uri, work)
            cancelled = False
        except JobCancelled:
            raise JsonRpcContentModified("the edit was cancelled by a newer change to the document") from None
        except (TooLarge, BackendError) as err:  # refused by the engine, or by a remote one: say why
            raise JsonRpcException(message=str(err), code=REQUEST_FAILED) from None
        finally:
            for previews in sent:
                previews.close(cancelled)
        document = self.unchanged(document)
        try:
            new = new_selection(request, document, result, settings, self.trees)
            check_shown(request, document, new, settings, self.trees)
        except HeldBack as err:  # noise: nothing is sent, applied or proposed; the message says why
            log.info("%s held back: %s", request.kind, "; ".join(err.reasons))
            raise JsonRpcException(
                message=str(err), code=REQUEST_FAILED, data={"heldBack": err.reasons}
            ) from None
        except EditError as err:
            raise JsonRpcException(message=str(err), code=REQUEST_FAILED) from None
        old = document.text[request.start : request.end]
        edits = text_edits(document, request.start, old, new, self.encoding())
        log.info("%s: %d edit(s) in %d steps", request.kind, len(edits), result.stats.steps)
        return Computed(document, edits, new)

    async def _check_runnable(self, request: EditRequest, document: Document, settings: Settings) -> None:
        """Refuse ``request`` (an error the editor shows) unless the file is one difill reads, the
        selection is not too large, and the model is ready (waiting up to ``loadWaitMs`` for it)."""
        if self.excluded(request.uri):
            raise JsonRpcException(
                message="difill does not read this file: it is on the secrets deny list or in the "
                "contextExclude setting (README, Security notes)",
                code=REQUEST_FAILED,
            )
        try:
            check_size(request, document, settings.hole_marker)
        except EditError as err:
            raise JsonRpcException(message=str(err), code=REQUEST_FAILED) from None
        if await self.host.wait_ready(settings.load_wait_ms / 1000) is None:
            raise JsonRpcException(
                message=f"the model is not available ({self.host.state.value})", code=REQUEST_FAILED
            )


@dataclass(frozen=True)
class Computed:
    document: Document  # at the request's version
    edits: list[types.TextEdit]  # the smallest edits; none when the model changed nothing
    new_text: str  # the selection's new text


class Previews:
    """``difill/preview`` notifications for one edit: in step order, at most one per
    ``PREVIEW_INTERVAL_S`` (a newer preview replaces one still waiting), none once it is over, and a
    last one with ``done: true`` (and ``cancelled``) when it ends.  ``where`` (``{id, uri, range}``
    of a proposal) is added to each."""

    def __init__(
        self, notify: Notify, job: Job, token: str | None, where: dict[str, Any] | None = None
    ) -> None:
        self.notify = notify
        self.job = job
        self.token = token or f"difill-edit-{uuid.uuid4().hex[:8]}"
        self.where = where or {}
        self.loop = asyncio.get_running_loop()
        self.last_step = -1
        self.last_sent = -PREVIEW_INTERVAL_S  # loop time of the last preview sent
        self.waiting: tuple[str, int] | None = None  # (text, step) held back by the interval
        self.timer: asyncio.TimerHandle | None = None
        self.closed = False

    def from_worker(self, text: str, step: int) -> bool:
        """The engine's on_preview, its one call per step on the model thread: hand the preview
        to the event loop, then the job's step (``Job.before_step``: whether to stop)."""
        if not self.job.cancelled:
            self.loop.call_soon_threadsafe(self._offer, text, step)
        return self.job.before_step()

    def _offer(self, text: str, step: int) -> None:
        if self.closed or self.job.cancelled or step <= self.last_step:
            return
        self.last_step = step
        wait = self.last_sent + PREVIEW_INTERVAL_S - self.loop.time()
        if wait <= 0 and self.timer is None:
            self._send(text, step)
            return
        self.waiting = (text, step)  # replaces an older one: the timer sends the newest
        if self.timer is None:
            self.timer = self.loop.call_later(wait, self._send_waiting)

    def _send_waiting(self) -> None:
        self.timer = None
        if self.waiting is not None and not self.closed and not self.job.cancelled:
            self._send(*self.waiting)
        self.waiting = None

    def _send(self, text: str, step: int) -> None:
        self.last_sent = self.loop.time()
        self.notify(PREVIEW, {"token": self.token, **self.where, "text": text, "step": step})

    def close(self, cancelled: bool) -> None:
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
        last = {"text": "", "step": self.last_step, "done": True, "cancelled": cancelled}
        self.notify(PREVIEW, {"token": self.token, **self.where, **last})
