"""End to end: edits a client reviews before they land (issue 24).  The client declares
``experimental.difill.editProposals``; each edit command answers a proposal and sends nothing
until difill.acceptEdit; difill.rejectEdit drops it or stops it while it denoises; unknown and
expired ids are InvalidParams; a moved document is refused."""

from __future__ import annotations

import asyncio

import pytest
import pytest_asyncio
from lsp_helpers import PROFILES, changed_settings, insert_change, open_document, running_server, wait_for
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcContentModified,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcRequestCancelled,
)
from pytest_lsp import client_capabilities
from test_lsp_edits import FUNCTION, actions_for, apply_text_edits, command, selection

from difill.server.features.edits.proposals import MAX_PENDING_PER_DOCUMENT

pytestmark = pytest.mark.asyncio(loop_scope="session")

REQUEST_FAILED = -32803


@pytest_asyncio.fixture(scope="module", loop_scope="session", params=["neovim", "visual_studio_code"])
async def reviewer(request, tiny_model_dir):
    """A client that reviews edits: the profile's capabilities plus editProposals.  The edit gate
    is off: the tiny random model writes noise, which the gate holds back, and these tests are
    about what happens to a proposal (the gate's own test is the last one here)."""
    capabilities = client_capabilities(PROFILES[request.param])
    capabilities.experimental = {"difill": {"editProposals": True}}
    options = {"editGate": False}
    async with running_server(
        tiny_model_dir, request.param, init_options=options, capabilities=capabilities
    ) as client:
        client.profile = request.param
        yield client


def uri_for(client, name: str) -> str:
    return f"file:///tmp/{client.profile}/proposals/{name}.py"


async def propose(client, uri: str, rng: types.Range, version: int, **extra) -> dict:
    answer = await client.workspace_execute_command_async(
        command(
            "difill.editSelection", uri, rng, version, instruction="use a generator", strength=0.8, **extra
        )
    )
    assert answer["proposal"] is not None, "the tiny model proposed no change"
    return answer["proposal"]


async def run(client, name: str, *arguments) -> dict:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )


def as_edits(client, proposal: dict) -> list[types.TextEdit]:
    return [client.protocol._converter.structure(e, types.TextEdit) for e in proposal["edits"]]


async def test_an_edit_is_a_proposal_with_previews_and_nothing_is_applied(reviewer):
    uri = uri_for(reviewer, "propose")
    open_document(reviewer, uri, FUNCTION, version=5)
    before, drafts_before = len(reviewer.applied_edits), len(reviewer.previews)
    rng = selection(1, 4, 2, 31)
    proposal = await propose(reviewer, uri, rng, 5)

    assert proposal["uri"] == uri and proposal["version"] == 5
    assert proposal["range"] == {"start": {"line": 1, "character": 4}, "end": {"line": 2, "character": 31}}
    # The edits are the smallest form of "the range becomes newText".
    lines = FUNCTION.splitlines(keepends=True)
    start = len(lines[0]) + 4
    end = len(lines[0]) + len(lines[1]) + 31
    expected = FUNCTION[:start] + proposal["newText"] + FUNCTION[end:]
    assert apply_text_edits(FUNCTION, as_edits(reviewer, proposal)) == expected != FUNCTION
    await asyncio.sleep(0.2)
    assert len(reviewer.applied_edits) == before  # only Accept changes the document

    drafts = [d for d in reviewer.previews[drafts_before:] if d.get("id") == proposal["id"]]
    assert drafts and drafts[-1]["done"] and not drafts[-1]["cancelled"]
    shown = [d for d in drafts if not d.get("done")]
    assert shown, "no draft before the proposal"
    for draft in shown:
        assert draft["uri"] == uri and draft["range"] == proposal["range"]
        assert isinstance(draft["text"], str) and isinstance(draft["step"], int)
    assert [d["step"] for d in shown] == sorted({d["step"] for d in shown})


async def test_accept_applies_exactly_the_proposal_once(reviewer):
    uri = uri_for(reviewer, "accept")
    open_document(reviewer, uri, FUNCTION, version=2)
    proposal = await propose(reviewer, uri, selection(1, 4, 2, 31), 2)
    before = len(reviewer.applied_edits)

    answer = await run(reviewer, "difill.acceptEdit", {"id": proposal["id"]})
    assert answer["applied"] and answer["edits"] == len(proposal["edits"])
    (applied,) = reviewer.applied_edits[before:]
    if reviewer.profile == "visual_studio_code":  # documentChanges: pinned to the version
        (change,) = applied.edit.document_changes
        assert change.text_document.version == 2
        sent = list(change.edits)
    else:
        sent = list(applied.edit.changes[uri])
    assert sent == as_edits(reviewer, proposal)

    with pytest.raises(JsonRpcException) as again:  # accepted: the id is gone
        await run(reviewer, "difill.acceptEdit", {"id": proposal["id"]})
    assert again.value.code == JsonRpcInvalidParams.CODE
    assert len(reviewer.applied_edits) == before + 1


async def test_accepting_a_proposal_expires_the_ones_it_overlaps(reviewer):
    """Issue 37, item 12: two overlapping proposals accepted back to back both went out pinned to
    the same version, and a client without documentChanges ended with a mix of the two."""
    uri = uri_for(reviewer, "overlap")
    open_document(reviewer, uri, FUNCTION, version=1)
    first = await propose(reviewer, uri, selection(1, 4, 2, 31), 1)
    second = await propose(reviewer, uri, selection(2, 0, 2, 31), 1)
    apart = await propose(reviewer, uri, selection(0, 0, 0, 20), 1)  # line 0 only: no overlap
    before = len(reviewer.applied_edits)
    assert (await run(reviewer, "difill.acceptEdit", {"id": first["id"]}))["applied"]
    with pytest.raises(JsonRpcException) as refused:  # before the applied edit's didChange arrives
        await run(reviewer, "difill.acceptEdit", {"id": second["id"]})
    assert refused.value.code == JsonRpcContentModified.CODE and "overlapping" in refused.value.message
    assert len(reviewer.applied_edits) == before + 1
    assert await run(reviewer, "difill.rejectEdit", {"id": apart["id"]}) == {
        "rejected": True
    }  # still pending


async def test_reject_drops_the_proposal_and_bad_ids_are_invalid_params(reviewer):
    uri = uri_for(reviewer, "reject")
    open_document(reviewer, uri, FUNCTION, version=1)
    proposal = await propose(reviewer, uri, selection(1, 4, 2, 31), 1)
    before = len(reviewer.applied_edits)
    assert await run(reviewer, "difill.rejectEdit", {"id": proposal["id"]}) == {"rejected": True}
    for name, arguments in [
        ("difill.acceptEdit", [{"id": proposal["id"]}]),  # rejected
        ("difill.rejectEdit", [{"id": proposal["id"]}]),
        ("difill.acceptEdit", [{"id": "difill-edit-unknown"}]),
        ("difill.acceptEdit", [{"id": 3}]),
        ("difill.rejectEdit", []),
        ("difill.acceptEdit", ["not an object"]),
    ]:
        with pytest.raises(JsonRpcException) as refused:
            await run(reviewer, name, *arguments)
        assert refused.value.code == JsonRpcInvalidParams.CODE, (name, arguments)
    await asyncio.sleep(0.2)
    assert len(reviewer.applied_edits) == before


async def test_a_moved_document_is_refused_and_nothing_is_sent(reviewer):
    uri = uri_for(reviewer, "moved")
    text = FUNCTION + "\n\nprint(total([1, 2], 0.2))\n"
    open_document(reviewer, uri, text, version=1)
    proposal = await propose(reviewer, uri, selection(1, 4, 2, 31), 1)
    before = len(reviewer.applied_edits)
    # A change outside the range: the proposal stays, but it was computed for version 1.
    reviewer.text_document_did_change(insert_change(uri, 2, 5, 0, "# a note\n"))
    with pytest.raises(JsonRpcException) as refused:
        await run(reviewer, "difill.acceptEdit", {"id": proposal["id"]})
    assert refused.value.code == JsonRpcContentModified.CODE
    with pytest.raises(JsonRpcException) as gone:  # refused proposals are dropped
        await run(reviewer, "difill.rejectEdit", {"id": proposal["id"]})
    assert gone.value.code == JsonRpcInvalidParams.CODE
    await asyncio.sleep(0.2)
    assert len(reviewer.applied_edits) == before


async def test_proposals_expire_on_a_change_in_their_range_and_on_close(reviewer):
    uri = uri_for(reviewer, "expire")
    open_document(reviewer, uri, FUNCTION, version=1)
    inside = await propose(reviewer, uri, selection(1, 4, 1, 26), 1)
    other = await propose(reviewer, uri, selection(2, 4, 2, 31), 1)  # two pending at once
    reviewer.text_document_did_change(insert_change(uri, 2, 1, 8, "_"))  # inside the first range only
    with pytest.raises(JsonRpcException) as expired:
        await run(reviewer, "difill.rejectEdit", {"id": inside["id"]})
    assert expired.value.code == JsonRpcInvalidParams.CODE
    # The other one is still pending (its text is untouched) until the document closes.
    reviewer.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    with pytest.raises(JsonRpcException) as closed:
        await run(reviewer, "difill.rejectEdit", {"id": other["id"]})
    assert closed.value.code == JsonRpcInvalidParams.CODE


async def test_at_most_eight_pending_per_document(reviewer):
    uri = uri_for(reviewer, "limit")
    open_document(reviewer, uri, FUNCTION, version=1)
    # Eight ranges: a proposal for the same range would replace the one there, not add to it.
    ids = [
        (await propose(reviewer, uri, selection(1, 4, 2, 31 - k), 1))["id"]
        for k in range(MAX_PENDING_PER_DOCUMENT)
    ]
    with pytest.raises(JsonRpcException) as full:
        await propose(reviewer, uri, selection(1, 4, 2, 20), 1)
    assert full.value.code == REQUEST_FAILED and "pending" in full.value.message
    await run(reviewer, "difill.rejectEdit", {"id": ids[0]})
    await propose(reviewer, uri, selection(1, 4, 2, 20), 1)  # room again


async def test_a_second_edit_of_the_same_range_replaces_the_first(reviewer):
    uri = uri_for(reviewer, "replace")
    open_document(reviewer, uri, FUNCTION, version=1)
    first = await propose(reviewer, uri, selection(1, 4, 2, 31), 1)
    second = await propose(reviewer, uri, selection(1, 4, 2, 31), 1)
    assert second["replaces"] == [first["id"]] and second["label"] == "difill: use a generator"
    with pytest.raises(JsonRpcException) as gone:
        await run(reviewer, "difill.acceptEdit", {"id": first["id"]})
    assert gone.value.code == -32602  # InvalidParams: no pending edit has this id
    await run(reviewer, "difill.rejectEdit", {"id": second["id"]})


async def test_reject_while_denoising_stops_it(reviewer):
    uri = uri_for(reviewer, "cancel")
    body = "".join(f"    value_{i} = compute(value_{i - 1}, {i}) + offset\n" for i in range(1, 40))
    text = "def chain(value_0, offset):\n" + body + "    return value_39\n"
    open_document(reviewer, uri, text, version=1)
    before = len(reviewer.previews)
    async with changed_settings(reviewer, {"steps": 1024}):
        pending = asyncio.ensure_future(
            reviewer.workspace_execute_command_async(
                command("difill.editSelection", uri, selection(1, 0, 40, 0), 1, strength=1.0)
            )
        )
        await wait_for(lambda: any("id" in d for d in reviewer.previews[before:]), 30, "a first draft")
        proposal_id = next(d["id"] for d in reviewer.previews[before:] if "id" in d)
        assert await run(reviewer, "difill.rejectEdit", {"id": proposal_id}) == {"rejected": True}
        with pytest.raises(JsonRpcRequestCancelled):
            await asyncio.wait_for(pending, 10)
        await wait_for(lambda: any(d.get("done") for d in reviewer.previews[before:]), 5, "the last draft")
        seen = len(reviewer.previews)
        await asyncio.sleep(0.5)
    assert len(reviewer.previews) == seen, "drafts kept coming after the reject"
    mine = [d for d in reviewer.previews[before:] if d.get("id") == proposal_id]
    assert mine[-1]["done"] and mine[-1]["cancelled"]


async def test_code_actions_are_commands_so_they_become_proposals(reviewer):
    uri = uri_for(reviewer, "actions")
    open_document(reviewer, uri, FUNCTION, version=1)
    actions = await actions_for(reviewer, uri, selection(1, 4, 2, 31))
    assert actions and all("data" not in a and a["command"]["command"].startswith("difill.") for a in actions)


async def test_with_the_gate_a_noisy_edit_is_no_proposal_and_the_drafts_end(reviewer):
    """Issue 60, item 2: the tiny model's noise is held back (text/edit_gate.py): the command says
    so in one line, nothing is pending to accept, and the drafts drawn while it ran end."""
    uri = uri_for(reviewer, "gated")
    open_document(reviewer, uri, FUNCTION, version=1)
    before, drafts_before = len(reviewer.applied_edits), len(reviewer.previews)
    async with changed_settings(reviewer, {"editGate": True}):
        with pytest.raises(JsonRpcException) as refused:
            await propose(reviewer, uri, selection(1, 4, 2, 31), 1)
    assert refused.value.code == REQUEST_FAILED and refused.value.message.startswith("held back the edit")
    drafts = reviewer.previews[drafts_before:]
    assert drafts and drafts[-1]["done"]  # the canvas drawn over the selection is taken down
    (proposal_id,) = {d["id"] for d in drafts}
    with pytest.raises(JsonRpcException) as unknown:  # it never became a proposal
        await run(reviewer, "difill.acceptEdit", {"id": proposal_id})
    assert unknown.value.code == JsonRpcInvalidParams.CODE
    assert len(reviewer.applied_edits) == before
