"""``workspace/executeCommand``: ``difill.editSelection``, ``difill.fillHoles`` and
``difill.completeBlock``, each with one argument ``{uri, range, version, instruction?, strength?}``.

The command computes the new text, then sends ``workspace/applyEdit`` with a ``TextDocumentEdit``
pinned to ``version`` and the smallest edits.  A document no longer at ``version`` is refused with
ContentModified, and nothing is sent.  The answer is ``{applied, edits}``.  A client that never
answers the applyEdit, or answers it with something that is not an ApplyWorkspaceEditResult,
does not leave the command hanging: after ``APPLY_EDIT_TIMEOUT_S`` or on a bad answer the command
is answered RequestFailed.

A client that reviews edits (``experimental.difill.editProposals``) gets
``{"proposal": {id, uri, version, range, newText, edits}}`` instead, and nothing is sent until
``difill.acceptEdit [{id}]``; ``difill.rejectEdit [{id}]`` drops it, or stops it while it still
denoises (see proposals.py and editors/README.md).
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcContentModified,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcRequestCancelled,
)

from difill.server.documents import Document, range_json
from difill.server.features.edits.code_actions import selection_request
from difill.server.features.edits.diff import workspace_edit
from difill.server.features.edits.proposals import MAX_PENDING_PER_DOCUMENT, Proposal, new_id
from difill.server.features.edits.selection import TITLES, EditRequest
from difill.server.features.edits.service import REQUEST_FAILED
from difill.server.request_context import RequestContext, request_params

APPLY_EDIT_TIMEOUT_S = 30.0
ACCEPT_EDIT, REJECT_EDIT = "difill.acceptEdit", "difill.rejectEdit"


async def run_edit_command(server: RequestContext, kind: str, arguments: tuple[Any, ...]) -> dict[str, Any]:
    request, document = selection_request(server, kind, arguments[0] if len(arguments) == 1 else None)
    params = request_params()
    token = getattr(params, "work_done_token", None)
    token = str(token) if token is not None else None
    if server.client_reviews_edits:
        return await propose(server, request, document, token)
    computed = await server.edits.compute(request, document, preview_token=token)
    if not computed.edits:
        return {"applied": False, "edits": 0}
    label = _label(kind, request.instruction)
    return await apply(server, computed.document, computed.edits, request.version, label)


async def propose(
    server: RequestContext, request: EditRequest, document: Document, token: str | None
) -> dict[str, Any]:
    """Compute the edit and keep it as a proposal: nothing reaches the document yet."""
    proposals = server.edits.proposals
    if proposals.count(request.uri) >= MAX_PENDING_PER_DOCUMENT:
        raise JsonRpcException(message=f"{MAX_PENDING_PER_DOCUMENT} edits are already pending for this "
                                       "document: accept or reject one first", code=REQUEST_FAILED)  # fmt: skip
    proposal_id = new_id()
    task = asyncio.current_task()
    assert task is not None  # commands run as tasks
    proposals.running[proposal_id] = (request.uri, task)
    try:
        computed = await server.edits.compute(request, document, preview_token=token, proposal_id=proposal_id)
    except asyncio.CancelledError:
        if proposal_id not in proposals.stopped:
            raise  # $/cancelRequest: pygls answers RequestCancelled
        # Rejected while it denoised: the command must still be answered (pygls would not).
        raise JsonRpcRequestCancelled("the edit was rejected while it denoised") from None
    finally:
        proposals.running.pop(proposal_id, None)
        proposals.stopped.discard(proposal_id)
    if not computed.edits:
        return {"proposal": None}  # the model proposed the selection as it is
    document = computed.document
    label = _label(request.kind, request.instruction)
    replaced = proposals.add(
        Proposal(
            id=proposal_id,
            uri=request.uri,
            version=request.version,
            start=request.start,
            end=request.end,
            new_text=computed.new_text,
            edits=computed.edits,
            label=label,
            seen_text=document.text,
        )  # fmt: skip
    )
    converter = server.protocol._converter
    return {
        "proposal": {
            "id": proposal_id,
            "uri": request.uri,
            "version": request.version,
            "range": range_json(document.range_of(request.start, request.end, server.encoding)),
            "newText": computed.new_text,
            "edits": [converter.unstructure(edit) for edit in computed.edits],
            "label": label,  # what the edit is, for the client to show
            "replaces": replaced,  # ids of proposals for the same range, now dropped
        }
    }


async def accept_edit(server: RequestContext, arguments: tuple[Any, ...]) -> dict[str, Any]:
    """``difill.acceptEdit [{id}]``: the proposal's versioned ``workspace/applyEdit``."""
    proposals = server.edits.proposals
    proposal_id = _proposal_id(arguments)
    proposal = proposals.take(proposal_id)
    if proposal is None:
        why = proposals.superseded.pop(proposal_id, None)
        if why is not None:
            raise JsonRpcContentModified(why)
        raise JsonRpcInvalidParams("no pending edit has this id (accepted, rejected or expired)")
    try:
        document = server.edits.current(proposal.uri, proposal.version)
        if document.text != proposal.seen_text:  # reopened with other text at the same version
            raise JsonRpcContentModified(
                f"the document was reopened with other text at version {document.version}"
            )
    except JsonRpcContentModified as err:
        raise JsonRpcContentModified(f"{err.message}; the proposal is dropped") from None
    proposals.expire_overlapping(proposal)
    return await apply(server, document, proposal.edits, proposal.version, proposal.label)


def reject_edit(server: RequestContext, arguments: tuple[Any, ...]) -> dict[str, Any]:
    """``difill.rejectEdit [{id}]``: drop a proposal, or stop an edit still denoising."""
    proposal_id = _proposal_id(arguments)
    proposals = server.edits.proposals
    if proposals.take(proposal_id) is None and not proposals.cancel_running(proposal_id):
        raise JsonRpcInvalidParams("no pending edit has this id (accepted, rejected or expired)")
    return {"rejected": True}


def _proposal_id(arguments: tuple[Any, ...]) -> str:
    arg = arguments[0] if len(arguments) == 1 else None
    if not isinstance(arg, dict) or not isinstance(arg.get("id"), str):
        raise JsonRpcInvalidParams("expected one argument {id} (a string)")
    return arg["id"]


LABEL_CHARS = 60  # an instruction is a label on one line: a long one is cut


def _label(kind: str, instruction: str | None = None) -> str:
    """What the edit is, for the editor's undo history and the proposal's heading: the instruction
    when there is one ("difill: add type hints"), else the kind ("difill: rewrite selection")."""
    what = " ".join(instruction.split()) if instruction else ""
    if len(what) > LABEL_CHARS:
        what = what[: LABEL_CHARS - 1] + "…"
    return f"difill: {what or TITLES[kind].lower()}"


async def apply(
    server: RequestContext, document: Document, edits: list[types.TextEdit], version: int, label: str
) -> dict[str, Any]:
    """Send ``workspace/applyEdit`` pinned to ``version``, answered RequestFailed if the editor does
    not answer usefully.  ``document`` is still at that version with that text: the caller checked
    it (``EditService.unchanged``, the proposal's check) with nothing awaited since."""
    edit = workspace_edit(document, edits, version, server.client_has_document_changes)
    sent = server.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
    try:
        answer = await asyncio.wait_for(sent, APPLY_EDIT_TIMEOUT_S)
    except TimeoutError:
        raise JsonRpcException(message=f"the editor did not answer the edit within {APPLY_EDIT_TIMEOUT_S:.0f} s",
                               code=REQUEST_FAILED) from None  # fmt: skip
    except Exception as err:  # an answer pygls cannot read as ApplyWorkspaceEditResult
        raise JsonRpcException(message=f"the editor's answer to the edit could not be read ({type(err).__name__})",
                               code=REQUEST_FAILED) from None  # fmt: skip
    if not isinstance(answer, types.ApplyWorkspaceEditResult):  # e.g. null
        raise JsonRpcException(message="the editor answered the edit with no result", code=REQUEST_FAILED)
    return {"applied": bool(answer.applied), "edits": len(edits), "failureReason": answer.failure_reason}
