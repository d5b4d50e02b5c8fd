"""``workspace/executeCommand``: ``difill.editSelection``, ``difill.fillHoles`` and
``difill.completeBlock``, each with one argument ``{uri, range, version, instruction?, strength?}``.

The command computes the new text, then sends ``workspace/applyEdit`` with a ``TextDocumentEdit``
pinned to ``version`` and the smallest edits.  A document no longer at ``version`` is refused with
ContentModified, and nothing is sent.  The answer is ``{applied, edits}``.  A client that never
answers the applyEdit, or answers it with something that is not an ApplyWorkspaceEditResult,
does not leave the command hanging: after ``APPLY_EDIT_TIMEOUT_S`` or on a bad answer the command
is answered RequestFailed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from difill.server.features.edits.code_actions import selection_request
from difill.server.features.edits.diff import workspace_edit
from difill.server.features.edits.plans import TITLES
from difill.server.features.edits.service import REQUEST_FAILED
from difill.server.request_context import RequestContext, request_params

APPLY_EDIT_TIMEOUT_S = 30.0


async def run_edit_command(server: RequestContext, kind: str, arguments: tuple[Any, ...]) -> dict[str, Any]:
    request = selection_request(server, kind, arguments[0] if len(arguments) == 1 else None)
    params = request_params()
    token = getattr(params, "work_done_token", None)
    document, edits = await server.edits.compute(
        request, draft_token=str(token) if token is not None else None
    )
    if not edits:
        return {"applied": False, "edits": 0}
    server.edits.unchanged(document)  # still that version and that text, right before sending
    edit = workspace_edit(document, edits, request.version, server.client_has_document_changes)
    sent = server.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=f"difill: {TITLES[kind].lower()}")
    )
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
