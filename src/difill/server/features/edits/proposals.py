"""Edit proposals: an edit the editor shows for review before it touches the document (issue 24).

A client that sends ``capabilities.experimental.difill.editProposals = true`` at ``initialize``
gets each selection edit as a proposal instead of a ``workspace/applyEdit``.  The proposal is kept
here, under its id, until the user accepts it (``difill.acceptEdit``), rejects it
(``difill.rejectEdit``), or it expires:

* its document closes;
* its document changes inside (or at an edge of) the range it replaces: what the user reviewed is
  no longer what it would replace;
* a proposal overlapping it is accepted (accepting it then answers ContentModified);
* a newer proposal for the same range of the same document replaces it.

A change elsewhere does not expire it, but the proposal stays pinned to the version it was
computed for: accepting it then is refused with ContentModified, as an edit is never applied to a
document version it was not computed for.

An edit still denoising is "running" under its id (the drafts carry that id), so the client can
stop it with ``difill.rejectEdit`` before it is a proposal.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from lsprotocol import types

from difill.server.documents import Documents
from difill.server.lifecycle import Feature
from difill.text.spans import changed_span

MAX_PENDING_PER_DOCUMENT = 8
REMEMBERED_EXPIRIES = 64  # ids of proposals an accepted overlapping one expired, for the reason


@dataclass
class Proposal:
    id: str
    uri: str
    version: int  # the document version it was computed for; it is applied to no other
    start: int  # offsets of the replaced range in the document at ``version``
    end: int
    new_text: str  # the range's new text
    edits: list[types.TextEdit]  # the smallest edits that turn the range into ``new_text``
    label: str  # for workspace/applyEdit, e.g. "difill: add type hints"
    seen_text: str  # the document's text when last checked, to find where a change landed


def new_id() -> str:
    return f"difill-edit-{uuid.uuid4().hex[:12]}"


class Proposals(Feature):
    """Pending proposals, and the tasks of edits still running, by id."""

    def __init__(self, documents: Documents) -> None:
        self.documents = documents
        self.pending: dict[str, Proposal] = {}
        self.running: dict[str, tuple[str, asyncio.Task]] = {}  # id -> (uri, the command's task)
        self.stopped: set[str] = set()  # running edits the client rejected: their command says so
        # Proposals expired by accepting one they overlap: a later accept of one says why.
        self.superseded: OrderedDict[str, str] = OrderedDict()

    def count(self, uri: str) -> int:
        """Pending and running edits of ``uri``: what the per-document limit counts."""
        return sum(p.uri == uri for p in self.pending.values()) + sum(
            u == uri for u, _ in self.running.values()
        )

    def add(self, proposal: Proposal) -> list[str]:
        """Keep ``proposal``; a pending one for the same range of the same document is dropped (a
        second edit of a selection replaces the first instead of stacking).  Returns their ids."""
        replaced = [
            p.id
            for p in self.pending.values()
            if (p.uri, p.start, p.end) == (proposal.uri, proposal.start, proposal.end)
        ]
        for proposal_id in replaced:
            del self.pending[proposal_id]
        self.pending[proposal.id] = proposal
        return replaced

    def take(self, proposal_id: str) -> Proposal | None:
        """The pending proposal, removed (None if unknown or expired)."""
        return self.pending.pop(proposal_id, None)

    def expire_overlapping(self, accepted: Proposal) -> None:
        """Accepting ``accepted`` expires every other pending proposal whose range overlaps (or
        touches) it: both were computed on the same text, and applying the second after the first
        would mix them (a client without versioned edits applies both as they are)."""
        for other in [p for p in self.pending.values() if p.uri == accepted.uri]:
            if other.start <= accepted.end and accepted.start <= other.end:
                del self.pending[other.id]
                self.superseded[other.id] = "an overlapping edit was accepted before it; the proposal expired"
                while len(self.superseded) > REMEMBERED_EXPIRIES:
                    self.superseded.popitem(last=False)

    def cancel_running(self, proposal_id: str) -> bool:
        """Stop the edit still denoising under ``proposal_id``; False if there is none."""
        entry = self.running.pop(proposal_id, None)
        if entry is None:
            return False
        self.stopped.add(proposal_id)
        entry[1].cancel()  # the engine host stops the job at the next step
        return True

    # ------------------------------------------------------------------ lifecycle (Feature)

    def document_changed(self, uri: str) -> None:
        document = self.documents.get(uri)
        for proposal in [p for p in self.pending.values() if p.uri == uri]:
            if document is None:  # out of sync: nothing it was computed on can be trusted
                del self.pending[proposal.id]
                continue
            old, new = proposal.seen_text, document.text
            if old == new:  # a version bump with the same text
                continue
            # Where a change landed is ambiguous in repeated text (deleting one of three blank
            # lines): the proposal is kept when some placement of it misses the range.
            first, old_end, new_end = changed_span(old, new, leftmost=True)
            if old_end < proposal.start:  # before the range: the range moves with the text
                shift = new_end - old_end
                proposal.start, proposal.end = proposal.start + shift, proposal.end + shift
            elif changed_span(old, new)[0] <= proposal.end:  # overlaps or touches the range
                del self.pending[proposal.id]
                continue
            proposal.seen_text = new

    def document_closed(self, uri: str) -> None:
        for proposal_id in [i for i, p in self.pending.items() if p.uri == uri]:
            del self.pending[proposal_id]

    def shutdown(self) -> None:
        self.pending.clear()
