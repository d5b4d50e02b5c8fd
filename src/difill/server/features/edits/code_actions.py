"""``textDocument/codeAction`` on a selection, and ``codeAction/resolve``.

Offering actions costs nothing: no model work happens until the user picks one.  Clients that
resolve code actions get each action with ``data`` and its edit computed in
``codeAction/resolve``; other clients get the same action as a ``difill.*`` command, which
computes the edit and sends ``workspace/applyEdit``.  A client that reviews edits gets commands
too: the command answers a proposal, where a resolved edit would be applied at once.  "Edit selection with instruction..." is
always a command without an instruction: the client asks the user for one.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from difill.server.features.edits.diff import workspace_edit
from difill.server.features.edits.plans import (
    COMPLETE_BLOCK,
    FILL_HOLES,
    REWRITE,
    TITLES,
    EditRequest,
    available_edits,
    stub_body,
)
from difill.server.request_context import RequestContext, document_for_request
from difill.text.characters import without_lone_surrogates

EDIT_SELECTION, FILL_HOLES_COMMAND, COMPLETE_BLOCK_COMMAND = (
    "difill.editSelection",
    "difill.fillHoles",
    "difill.completeBlock",
)
COMMANDS = {REWRITE: EDIT_SELECTION, FILL_HOLES: FILL_HOLES_COMMAND, COMPLETE_BLOCK: COMPLETE_BLOCK_COMMAND}
WITH_INSTRUCTION = "Edit selection with instruction..."
KIND = types.CodeActionKind.RefactorRewrite


def code_actions(server: RequestContext, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    if only and not any(KIND.value.startswith(getattr(k, "value", k)) for k in only):
        return []
    document = document_for_request(server.documents, params.text_document.uri)
    if document is None:
        return []
    start = document.offset_at(params.range.start, server.encoding)
    end = document.offset_at(params.range.end, server.encoding)
    if start is None or end is None or start >= end:
        return []
    kinds = available_edits(document, start, end, server.settings().hole_marker, server.trees)
    if not kinds:
        return []
    selection = {
        "uri": document.uri,
        "range": server.protocol._converter.unstructure(document.range_of(start, end, server.encoding)),
        "version": document.version,
    }
    actions = []
    for kind in kinds:
        if server.client_resolves_code_action_edits and not server.client_reviews_edits:
            actions.append(
                types.CodeAction(title=TITLES[kind], kind=KIND, data={"difill": kind, **selection})
            )
        else:
            command = types.Command(title=TITLES[kind], command=COMMANDS[kind], arguments=[selection])
            actions.append(types.CodeAction(title=TITLES[kind], kind=KIND, command=command))
    instruct = types.Command(title=WITH_INSTRUCTION, command=EDIT_SELECTION, arguments=[selection])
    actions.append(types.CodeAction(title=WITH_INSTRUCTION, kind=KIND, command=instruct))
    return actions


async def resolve_code_action(server: RequestContext, action: types.CodeAction) -> types.CodeAction:
    data = action.data
    if not isinstance(data, dict) or data.get("difill") not in COMMANDS:
        return action  # not one of ours, or already complete
    request = selection_request(server, data["difill"], data)
    computed = await server.edits.compute(request)
    action.edit = workspace_edit(
        computed.document, computed.edits, request.version, server.client_has_document_changes
    )
    return action


def selection_request(server: RequestContext, kind: str, arg: Any) -> EditRequest:
    """An EditRequest from ``{uri, range, version, instruction?, strength?}``; refuses bad input
    (InvalidParams) and a document that is no longer at ``version`` (ContentModified)."""
    if not isinstance(arg, dict):
        raise JsonRpcInvalidParams("expected one argument {uri, range, version, instruction?, strength?}")
    uri, version, rng = arg.get("uri"), arg.get("version"), arg.get("range")
    if not isinstance(uri, str) or not _is_int(version) or not isinstance(rng, dict):
        raise JsonRpcInvalidParams("uri (string), range and version (integer) are required")
    instruction, strength = arg.get("instruction"), arg.get("strength", 0.5)
    if instruction is not None and not isinstance(instruction, str):
        raise JsonRpcInvalidParams("instruction must be a string")
    if isinstance(strength, bool) or not isinstance(strength, int | float) or not 0 <= strength <= 1:
        raise JsonRpcInvalidParams("strength must be a number between 0 and 1")
    document = server.edits.current(uri, version)
    start, end = _offset(document, rng.get("start"), server), _offset(document, rng.get("end"), server)
    if start is None or end is None or start >= end:
        raise JsonRpcInvalidParams("the range must be a non-empty selection inside the document")
    if kind == FILL_HOLES and server.settings().hole_marker not in document.text[start:end]:
        raise JsonRpcInvalidParams(f"the selection has no hole marker {server.settings().hole_marker!r}")
    if kind == COMPLETE_BLOCK:  # a whole function selected: its stub body is what gets written
        body = stub_body(document, start, end, server.trees)
        if body is None:
            raise JsonRpcInvalidParams("the selection holds no stub body to complete (pass, ..., todo!())")
        start, end = body
    # A lone surrogate ("\ud800" in the JSON) is not text: the tokenizer and UTF-8 refuse it.
    instruction = without_lone_surrogates(instruction) if instruction else None
    return EditRequest(kind, uri, version, start, end, instruction=instruction, strength=float(strength))


def _offset(document, position: Any, server: RequestContext) -> int | None:
    if (
        not isinstance(position, dict)
        or not _is_int(position.get("line"))
        or not _is_int(position.get("character"))
    ):
        return None
    return document.offset_at(
        types.Position(line=position["line"], character=position["character"]), server.encoding
    )


UINTEGER_MAX = 2**31 - 1  # LSP's uinteger: lines, characters and versions are never larger


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= UINTEGER_MAX
