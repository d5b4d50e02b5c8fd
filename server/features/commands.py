"""``workspace/executeCommand``: ``difill.editSelection``, ``difill.fillHoles`` and
``difill.completeBlock``, each with one argument ``{uri, range, version, instruction?, strength?}``.

The command computes the new text, then sends ``workspace/applyEdit`` with a ``TextDocumentEdit``
pinned to ``version`` and the smallest edits.  A document no longer at ``version`` is refused with
ContentModified, and nothing is sent.  The answer is ``{applied, edits}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from difill.server.features.code_actions import selection_request
from difill.server.features.edit_plans import TITLES
from difill.server.features.edits import workspace_edit

if TYPE_CHECKING:
    from difill.server.server import DifillServer


async def run_edit_command(server: DifillServer, kind: str, arguments: tuple[Any, ...]) -> dict[str, Any]:
    request = selection_request(server, kind, arguments[0] if len(arguments) == 1 else None)
    params = server.request_params()
    token = getattr(params, "work_done_token", None)
    document, edits = await server.edits.compute(
        request, draft_token=str(token) if token is not None else None
    )
    if not edits:
        return {"applied": False, "edits": 0}
    server.edits.current(request.uri, request.version)  # still that version, right before sending
    edit = workspace_edit(document, edits, request.version, server.client_has_document_changes)
    answer = await server.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=f"difill: {TITLES[kind].lower()}")
    )
    return {"applied": bool(answer.applied), "edits": len(edits), "failureReason": answer.failure_reason}
