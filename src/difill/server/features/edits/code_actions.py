"""``textDocument/codeAction`` on a selection or at the cursor, and ``codeAction/resolve``.

Offering actions costs nothing: no model work happens until the user picks one.  Clients that
resolve code actions get each action with ``data`` and its edit computed in
``codeAction/resolve``; other clients get the same action as a ``difill.*`` command, which
computes the edit and sends ``workspace/applyEdit``.  A client that reviews edits gets commands
too: the command answers a proposal, where a resolved edit would be applied at once.  "Edit selection with instruction..." is
always a command without an instruction: the client asks the user for one.  With no selection
(an empty range: ``gra`` in normal mode, VS Code's lightbulb) the actions name what is under the
cursor: the stub body, the line's holes, the function (issue 66).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from difill.server.documents import Document
from difill.server.features.edits.diff import workspace_edit
from difill.server.features.edits.selection import (
    COMPLETE_BLOCK,
    FILL_HOLES,
    MAX_SELECTION_CHARS,
    REWRITE,
    TITLES,
    EditRequest,
    available_edits,
    stub_body,
)
from difill.server.request_context import RequestContext, document_for_request
from difill.server.trees import SyntaxTrees
from difill.text.characters import line_start, without_lone_surrogates
from difill.text.syntax import enclosing_function

EDIT_SELECTION, FILL_HOLES_COMMAND, COMPLETE_BLOCK_COMMAND = (
    "difill.editSelection",
    "difill.fillHoles",
    "difill.completeBlock",
)
COMMANDS = {REWRITE: EDIT_SELECTION, FILL_HOLES: FILL_HOLES_COMMAND, COMPLETE_BLOCK: COMPLETE_BLOCK_COMMAND}
WITH_INSTRUCTION = "Edit selection with instruction..."
REWRITE_FUNCTION, EDIT_FUNCTION = "Rewrite this function", "Edit this function with instruction..."
KIND = types.CodeActionKind.RefactorRewrite


class Target(NamedTuple):
    """One action offered: an edit of [start, end); ``kind`` None asks the user for an instruction."""

    kind: str | None
    title: str
    start: int
    end: int


def code_actions(server: RequestContext, params: types.CodeActionParams) -> list[types.CodeAction]:
    only = params.context.only
    if only and not any(KIND.value.startswith(getattr(k, "value", k)) for k in only):
        return []
    document = document_for_request(server.documents, params.text_document.uri)
    if document is None:
        return []
    start = document.offset_at(params.range.start, server.encoding)
    end = document.offset_at(params.range.end, server.encoding)
    if start is None or end is None or start > end:
        return []
    marker = server.settings().hole_marker
    if start == end:  # no selection: what applies where the cursor is (issue 66)
        # VS Code asks at every cursor move for its light bulb (Automatic): the function's actions
        # would light it on every line of every function, so they come when asked (Ctrl+., gra).
        asked = params.context.trigger_kind != types.CodeActionTriggerKind.Automatic
        targets = cursor_targets(document, start, marker, server.trees, with_function=asked)
    else:
        targets = [Target(kind, TITLES[kind], start, end) for kind in available_edits(document, start, end, marker, server.trees)]  # fmt: skip
        targets += [Target(None, WITH_INSTRUCTION, start, end)] if targets else []
    return [_action(server, document, target) for target in targets]


def cursor_targets(
    document: Document, at: int, marker: str, trees: SyntaxTrees, with_function: bool = True
) -> list[Target]:
    """The edits at a cursor with no selection: Complete block on a stub body (or anywhere in a
    function whose body is one), Fill holes on a line with a hole marker, and (``with_function``)
    Rewrite / Edit this function inside a named function (text/syntax.py) short enough to edit."""
    text = document.text
    start = line_start(text, at)
    end = text.find("\n", at)
    line = text[start : len(text) if end < 0 else end].rstrip("\r")
    content = line.strip()
    tree = trees.tree_for(document)
    function = enclosing_function(tree, text, at) if tree is not None else None
    targets = []
    stub_at = start + line.find(content) if content else at
    stub = stub_body(document, stub_at, stub_at + len(content), trees) if content else None
    if stub is None and function is not None:
        stub = stub_body(document, *function, trees)
    if stub is not None:
        targets.append(Target(COMPLETE_BLOCK, TITLES[COMPLETE_BLOCK], *stub))
    if marker in line:
        targets.append(Target(FILL_HOLES, "Fill holes", start, start + len(line)))
    if with_function and function is not None and function[1] - function[0] <= MAX_SELECTION_CHARS:
        targets.append(Target(REWRITE, REWRITE_FUNCTION, *function))
        targets.append(Target(None, EDIT_FUNCTION, *function))
    return targets


def _action(server: RequestContext, document: Document, target: Target) -> types.CodeAction:
    """The action for ``target``: resolvable (``data``) for a client that resolves edits and applies
    them, else a ``difill.*`` command; an instruction is always asked for by the client."""
    selection = {
        "uri": document.uri,
        "range": server.protocol._converter.unstructure(
            document.range_of(target.start, target.end, server.encoding)
        ),
        "version": document.version,
    }
    if (
        target.kind is not None
        and server.client_resolves_code_action_edits
        and not server.client_reviews_edits
    ):
        return types.CodeAction(title=target.title, kind=KIND, data={"difill": target.kind, **selection})
    name = COMMANDS[target.kind] if target.kind is not None else EDIT_SELECTION
    command = types.Command(title=target.title, command=name, arguments=[selection])
    return types.CodeAction(title=target.title, kind=KIND, command=command)


async def resolve_code_action(server: RequestContext, action: types.CodeAction) -> types.CodeAction:
    data = action.data
    if not isinstance(data, dict) or data.get("difill") not in COMMANDS:
        return action  # not one of ours, or already complete
    request, document = selection_request(server, data["difill"], data)
    computed = await server.edits.compute(request, document)
    action.edit = workspace_edit(
        computed.document, computed.edits, request.version, server.client_has_document_changes
    )
    return action


def selection_request(server: RequestContext, kind: str, arg: Any) -> tuple[EditRequest, Document]:
    """An EditRequest from ``{uri, range, version, instruction?, strength?}`` and the document at
    ``version`` (the one version check before the model runs); refuses bad input (InvalidParams)
    and a document that is no longer at ``version`` (ContentModified)."""
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
    return EditRequest(
        kind, uri, version, start, end, instruction=instruction, strength=float(strength)
    ), document


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
