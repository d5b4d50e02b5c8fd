"""End to end: code actions on a selection, codeAction/resolve, the difill.* commands with
workspace/applyEdit, version checks, and live drafts (issue 5).  Shares the servers of
tests/server/conftest.py."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from lsp_helpers import changed_settings, open_document, send_raw_request, wait_for
from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcException, JsonRpcRequestCancelled

from difill.server.features.edits.diff import Replacement, apply_replacements
from difill.text.syntax import syntax_errors

pytestmark = pytest.mark.asyncio(loop_scope="session")

MARKER = "<|hole|>"
FUNCTION = "def total(prices, tax):\n    subtotal = sum(prices)\n    return subtotal * (1 + tax)\n"
# The tiny random model writes noise, which the edit gate holds back (test_lsp_edit_gate.py): the
# tests of how an edit travels (resolve, versions, previews) turn the gate off to get one.
NO_GATE = {"editGate": False}


def selection(line0: int, char0: int, line1: int, char1: int) -> types.Range:
    return types.Range(
        start=types.Position(line=line0, character=char0), end=types.Position(line=line1, character=char1)
    )


def uri_for(client, name: str) -> str:
    return f"file:///tmp/{client.profile}/edits/{name}.py"


async def actions_for(
    client, uri: str, rng: types.Range, only: list[str] | None = None, trigger: int | None = None
) -> list[dict]:
    """The code actions as JSON: lsprotocol would read an action that carries a command as a bare
    Command (any object with a "command" key), losing its kind."""
    context = types.CodeActionContext(diagnostics=[], only=only, trigger_kind=trigger)
    params = client.protocol._converter.unstructure(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=rng, context=context
        )
    )
    return (
        await send_raw_request(client, types.TEXT_DOCUMENT_CODE_ACTION, params, f"actions-{uuid.uuid4().hex}")
        or []
    )


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP edits (ASCII test documents: columns are characters) to ``text``."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(p: types.Position) -> int:
        return starts[p.line] + p.character

    return apply_replacements(
        text, [Replacement(offset(e.range.start), offset(e.range.end), e.new_text) for e in edits]
    )


def edits_of(client, edit: types.WorkspaceEdit, uri: str, version: int) -> list[types.TextEdit]:
    """The edits for ``uri``; with documentChanges (VS Code) they must carry ``version``."""
    if client.profile == "visual_studio_code":
        (change,) = edit.document_changes
        assert change.text_document.uri == uri and change.text_document.version == version
        return list(change.edits)
    assert edit.document_changes is None  # this Neovim profile declares no documentChanges
    return list(edit.changes[uri])


def command(name: str, uri: str, rng: types.Range, version: int, token: str | None = None, **extra):
    argument = {"uri": uri, "range": {"start": {"line": rng.start.line, "character": rng.start.character},
                                      "end": {"line": rng.end.line, "character": rng.end.character}},
                "version": version, **extra}  # fmt: skip
    return types.ExecuteCommandParams(command=name, arguments=[argument], work_done_token=token)


async def test_actions_are_offered_for_selections_and_not_for_empty_ranges(client):
    uri = uri_for(client, "offer")
    open_document(client, uri, FUNCTION + "\ndef later():\n    pass\n\nx = [<|hole|>, 2]\n")
    busy_before = sum(s["state"] == "busy" for s in client.statuses)

    assert not await actions_for(client, uri, selection(3, 0, 3, 0))  # a cursor outside every function
    titles = [a["title"] for a in await actions_for(client, uri, selection(1, 4, 2, 10))]
    assert titles == ["Rewrite selection", "Edit selection with instruction..."]
    assert not await actions_for(client, uri, selection(1, 4, 2, 10), only=["quickfix"])
    assert await actions_for(client, uri, selection(1, 4, 2, 10), only=["refactor"])
    stub = [a["title"] for a in await actions_for(client, uri, selection(5, 4, 5, 8))]
    assert "Complete block" in stub
    holes = await actions_for(client, uri, selection(7, 0, 7, 17))
    assert "Fill holes in selection" in [a["title"] for a in holes]

    *lazy, instruct = holes
    for action in lazy:  # no edit yet: resolved (or run as a command) when picked
        assert action["kind"] == "refactor.rewrite" and "edit" not in action
        assert action.get("data", {}).get("difill") or action["command"]["command"].startswith("difill.")
    assert (
        instruct["title"] == "Edit selection with instruction..." and instruct["kind"] == "refactor.rewrite"
    )
    assert instruct["command"]["command"] == "difill.editSelection"
    assert "instruction" not in instruct["command"]["arguments"][0]
    assert sum(s["state"] == "busy" for s in client.statuses) == busy_before  # no model work yet


async def test_actions_at_the_cursor_with_no_selection(client):
    # Issue 66: `gra` in normal mode on a `pass` body said "No code actions available".
    uri = uri_for(client, "cursor")
    text = (
        FUNCTION
        + "\ndef later():\n    pass\n\nx = [<|hole|>, 2]\n\ndef todo(a):\n    raise NotImplementedError\n"
    )
    open_document(client, uri, text, version=3)

    async def at(line: int, character: int) -> dict[str, dict]:
        actions = await actions_for(client, uri, selection(line, character, line, character))
        return {a["title"]: a for a in actions}

    function = ["Rewrite this function", "Edit this function with instruction..."]
    assert list(await at(5, 6)) == ["Complete block", *function]  # on `pass`
    assert list(await at(4, 2)) == ["Complete block", *function]  # on the header of a stub function
    assert list(await at(10, 30)) == ["Complete block", *function]  # `raise NotImplementedError`, at its end
    assert list(await at(1, 4)) == function  # inside a function with a body
    assert list(await at(7, 6)) == ["Fill holes"]  # on a line with a hole marker
    assert list(await at(3, 0)) == []  # a blank line outside every function

    def target(action: dict) -> dict:
        return action.get("data") or action["command"]["arguments"][0]

    inside = await at(1, 4)
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 31}}
    assert target(inside["Rewrite this function"])["range"] == whole
    instruct = inside["Edit this function with instruction..."]["command"]
    assert instruct["command"] == "difill.editSelection" and "instruction" not in instruct["arguments"][0]
    assert instruct["arguments"][0]["range"] == whole and instruct["arguments"][0]["version"] == 3
    holes = target((await at(7, 6))["Fill holes"])
    assert holes["range"] == {"start": {"line": 7, "character": 0}, "end": {"line": 7, "character": 17}}

    # VS Code's light bulb asks at every cursor move (Automatic): the stub and the holes light it,
    # not every line of every function.
    automatic = types.CodeActionTriggerKind.Automatic
    bulb = [a["title"] for a in await actions_for(client, uri, selection(5, 6, 5, 6), trigger=automatic)]
    assert bulb == ["Complete block"]
    assert not await actions_for(client, uri, selection(1, 4, 1, 4), trigger=automatic)

    complete = (await at(5, 6))["Complete block"]
    assert target(complete)["range"] == {
        "start": {"line": 5, "character": 4},
        "end": {"line": 5, "character": 8},
    }
    async with changed_settings(client, NO_GATE):
        resolved = await client.code_action_resolve_async(
            client.protocol._converter.structure(complete, types.CodeAction)
        )
    for edit in edits_of(client, resolved.edit, uri, 3):  # the stub body is what is written
        assert (edit.range.start.line, edit.range.end.line) == (5, 5), edit


async def test_resolve_returns_an_edit_inside_the_selection(client):
    uri = uri_for(client, "resolve")
    open_document(client, uri, FUNCTION, version=7)
    rng = selection(1, 4, 2, 31)
    (rewrite, _) = await actions_for(client, uri, rng)
    async with changed_settings(client, NO_GATE):
        resolved = await client.code_action_resolve_async(
            client.protocol._converter.structure(rewrite, types.CodeAction)
        )
    edits = edits_of(client, resolved.edit, uri, 7)
    assert edits, "the rewrite changed nothing"
    for edit in edits:
        assert (rng.start.line, rng.start.character) <= (edit.range.start.line, edit.range.start.character)
        assert (edit.range.end.line, edit.range.end.character) <= (rng.end.line, rng.end.character)


async def test_fill_holes_leaves_no_marker_and_the_file_parses(client):
    uri = uri_for(client, "holes")
    text = 'def greet(name):\n    message = "Hello, <|hole|>"\n    # say <|hole|> to the user\n    return message\n'
    open_document(client, uri, text, version=3)
    before = len(client.applied_edits)
    answer = await client.workspace_execute_command_async(
        command("difill.fillHoles", uri, selection(1, 0, 2, 30), 3)
    )
    assert answer["applied"]
    (applied,) = client.applied_edits[before:]
    filled = apply_text_edits(text, edits_of(client, applied.edit, uri, 3))
    assert MARKER not in filled
    assert syntax_errors(filled, "python") == 0, filled


async def test_stale_version_is_refused_and_nothing_is_applied(client):
    uri = uri_for(client, "stale")
    open_document(client, uri, FUNCTION, version=4)
    before = len(client.applied_edits)
    with pytest.raises(JsonRpcException) as refused:  # pygls has no class for this code on the client side
        await client.workspace_execute_command_async(
            command("difill.editSelection", uri, selection(1, 4, 1, 26), 3)
        )
    assert refused.value.code == JsonRpcContentModified.CODE
    await asyncio.sleep(0.2)
    assert len(client.applied_edits) == before


async def test_fresh_version_is_applied_with_that_version(client):
    uri = uri_for(client, "fresh")
    open_document(client, uri, FUNCTION, version=5)
    before = len(client.applied_edits)
    rng = selection(1, 4, 2, 31)
    async with changed_settings(client, NO_GATE):
        answer = await client.workspace_execute_command_async(
            command("difill.editSelection", uri, rng, 5, instruction="use a generator", strength=0.8)
        )
    assert answer["applied"] and answer["edits"] >= 1
    (applied,) = client.applied_edits[before:]
    edited = apply_text_edits(FUNCTION, edits_of(client, applied.edit, uri, 5))
    assert edited != FUNCTION
    assert edited.startswith(FUNCTION.splitlines(keepends=True)[0])  # outside the selection: untouched


async def test_drafts_arrive_in_order_and_stop_on_cancel(client):
    uri = uri_for(client, "drafts")
    body = "".join(f"    value_{i} = compute(value_{i - 1}, {i}) + offset\n" for i in range(1, 40))
    text = "def chain(value_0, offset):\n" + body + "    return value_39\n"
    open_document(client, uri, text, version=1)
    rng = selection(1, 0, 40, 0)
    async with changed_settings(client, {"previews": True, "steps": 1024, **NO_GATE}):
        # A complete edit: drafts in step order, then done.
        short = selection(1, 4, 1, 40)
        await client.workspace_execute_command_async(
            command("difill.editSelection", uri, short, 1, token="whole")
        )
        drafts = [d for d in client.previews if d["token"] == "whole"]
        steps = [d["step"] for d in drafts if not d.get("done")]
        assert steps and steps == sorted(set(steps))
        assert drafts[-1].get("done") and not drafts[-1]["cancelled"]

        # A cancelled edit: drafts stop, and the last one says so.
        applied = len(client.applied_edits)
        pending = asyncio.ensure_future(
            client.protocol.send_request_async(
                types.WORKSPACE_EXECUTE_COMMAND,
                command("difill.editSelection", uri, rng, 1, token="cut", strength=1.0),
                msg_id=f"drafts-{client.profile}",
            )
        )
        await wait_for(lambda: any(d["token"] == "cut" for d in client.previews), 30, "a first draft")
        client.cancel_request(types.CancelParams(id=f"drafts-{client.profile}"))
        with pytest.raises(JsonRpcRequestCancelled):
            await asyncio.wait_for(pending, 10)
        await wait_for(
            lambda: any(d["token"] == "cut" and d.get("done") for d in client.previews), 5, "the last draft"
        )
        seen = len(client.previews)
        await asyncio.sleep(0.5)
    cut = [d for d in client.previews if d["token"] == "cut"]
    assert len(client.previews) == seen, "drafts kept coming after the cancel"
    assert cut[-1]["done"] and cut[-1]["cancelled"]
    steps = [d["step"] for d in cut[:-1]]
    assert steps == sorted(set(steps))
    assert len(client.applied_edits) == applied  # a cancelled edit sends nothing


async def test_a_function_selected_whole_with_a_stub_body_completes_its_body_only(client):
    # Issue 52: "Complete block" came only with the cursor on a `pass` line, not for a selected
    # function whose body is a stub.
    uri = uri_for(client, "whole")
    open_document(client, uri, "def later(a, b):\n    pass\n\nx = 1\n", version=4)
    actions = await actions_for(client, uri, selection(0, 0, 1, 8))
    (complete,) = [a for a in actions if a["title"] == "Complete block"]
    async with changed_settings(client, NO_GATE):
        resolved = await client.code_action_resolve_async(
            client.protocol._converter.structure(complete, types.CodeAction)
        )
    for edit in edits_of(client, resolved.edit, uri, 4):  # the header stays as it is
        assert (edit.range.start.line, edit.range.start.character) >= (1, 0), edit
        assert (edit.range.end.line, edit.range.end.character) <= (1, 8), edit
