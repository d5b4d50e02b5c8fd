"""End to end: the real ``difill serve`` subprocess with the tiny model, under pytest-lsp, once per
client profile (Neovim 0.11 negotiates UTF-8 positions, VS Code keeps UTF-16).

The tiny model writes random text, so these tests check behaviour (a suggestion arrives, ranges
and versions are right, stale results are dropped), not content.  One server per profile is
shared by the session (conftest.py); each test uses its own document.
"""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import (
    changed_settings,
    inline_params,
    insert_change,
    open_document,
    send_raw_request,
    wait_for,
    wait_for_status,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled

pytestmark = pytest.mark.asyncio(loop_scope="session")

SECRET = "sk_live_DO_NOT_LOG_4242"
# Slow enough to catch in flight: 256 one-token steps per fill with the tiny random model.
SLOW = {"maxTokens": 256, "steps": 256}


def units(text: str, client) -> int:
    """Length of ``text`` in the client's position encoding."""
    return len(text.encode("utf-8")) if client.profile == "neovim" else len(text.encode("utf-16-le")) // 2


async def busy_after(client, index: int) -> None:
    await wait_for_status(client, "busy", after=index, timeout=20)


async def test_inline_completion_suggests_text_at_the_cursor(client):
    uri = f"file:///tmp/{client.profile}/inline.py"
    open_document(client, uri, "def add(a, b):\n    return a + \n\nprint(add(1, 2))\n")
    result = await client.text_document_inline_completion_async(inline_params(uri, 1, 15, invoked=True))
    assert 1 <= len(result.items) <= 3
    texts = [item.insert_text for item in result.items]
    assert len(set(texts)) == len(texts) and all(t.strip() for t in texts)
    assert all("\n" not in t for t in texts)  # mid-line: the rest of the line only
    cursor = types.Position(line=1, character=15)
    assert all(item.range == types.Range(start=cursor, end=cursor) for item in result.items)


async def test_automatic_trigger_returns_one_suggestion(client):
    uri = f"file:///tmp/{client.profile}/automatic.py"
    open_document(client, uri, "def scale(values, k):\n    return [v * \n")
    result = await client.text_document_inline_completion_async(inline_params(uri, 1, 16, invoked=False))
    assert len(result.items) == 1


async def test_min_token_prob_cuts_ghost_text_but_not_an_invoked_completion(client):
    uri = f"file:///tmp/{client.profile}/cut.py"
    open_document(client, uri, "def scale(values, k):\n    return [v * \n")
    async with changed_settings(client, {"minTokenProb": 1.0}):  # no token is ever that sure
        typing = await client.text_document_inline_completion_async(inline_params(uri, 1, 16, invoked=False))
        asked = await client.text_document_inline_completion_async(inline_params(uri, 1, 16, invoked=True))
    assert len(typing.items) == 0
    assert asked.items  # an explicit request shows whole middles
    # The tiny model's config names no cut: back on the default, typing gets its suggestion.
    again = await client.text_document_inline_completion_async(inline_params(uri, 1, 16, invoked=False))
    assert len(again.items) == 1


async def test_completion_fallback_item_replaces_the_typed_word(client):
    uri = f"file:///tmp/{client.profile}/fallback.py"
    open_document(client, uri, "import os\n\npath = os.path.jo\n")
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=2, character=17),
            context=types.CompletionContext(trigger_kind=types.CompletionTriggerKind.Invoked),
        )
    )
    assert result.is_incomplete and result.items
    for item in result.items:
        edit = item.text_edit
        assert edit.range == types.Range(
            start=types.Position(line=2, character=15), end=types.Position(line=2, character=17)
        )
        assert edit.new_text.startswith("jo") and len(edit.new_text) > 2
        assert item.filter_text == edit.new_text


async def test_positions_use_the_negotiated_encoding_for_non_ascii_text(client):
    uri = f"file:///tmp/{client.profile}/unicode.py"
    line = 's = "한국어 😀 " + na'
    open_document(client, uri, f"{line}\nprint(s)\n")
    # An incremental change addressed in the client's units, just after the emoji and the quote.
    client.text_document_did_change(insert_change(uri, 2, 0, units(line, client), "me"))
    # Completion at the end of the line: the word "name" starts after "+ ", counted in client units.
    end = units(line + "me", client)
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=0, character=end),
        )
    )
    assert result.items, "no completion"
    start = units(line[:-2], client)
    for item in result.items:
        assert item.text_edit.range.start == types.Position(line=0, character=start)
        assert item.text_edit.new_text.startswith("name")
    # A position past the end of the line means its end, reported back in client units.
    inline = await client.text_document_inline_completion_async(inline_params(uri, 0, 999))
    assert all(i.range.start == types.Position(line=0, character=end) for i in inline.items)


async def test_typed_ahead_characters_reuse_the_suggestion_without_the_model(client):
    uri = f"file:///tmp/{client.profile}/typed.py"
    open_document(client, uri, "def mean(xs):\n    total = sum(\n")
    first = await client.text_document_inline_completion_async(inline_params(uri, 1, 16))
    suggestion = first.items[0].insert_text
    assert len(suggestion) >= 2
    runs_before = len([s for s in client.statuses if s["state"] == "busy"])
    typed = suggestion[0]
    client.text_document_did_change(insert_change(uri, 2, 1, 16, typed))
    again = await client.text_document_inline_completion_async(
        inline_params(uri, 1, 16 + units(typed, client))
    )
    assert again.items[0].insert_text == suggestion[1:]
    assert len([s for s in client.statuses if s["state"] == "busy"]) == runs_before  # no model run
    assert any("typed ahead 1 characters" in m.message for m in client.log_messages)


async def test_stale_result_is_never_returned(client):
    uri = f"file:///tmp/{client.profile}/stale.py"
    open_document(client, uri, "def f(x):\n    y = \n")
    async with changed_settings(client, SLOW):
        index = len(client.statuses)
        request = asyncio.ensure_future(
            client.text_document_inline_completion_async(inline_params(uri, 1, 8))
        )
        await busy_after(client, index)
        client.text_document_did_change(insert_change(uri, 2, 1, 8, "1"))  # the request's version is gone
        result = await asyncio.wait_for(request, 30)
    assert len(result.items) == 0


async def test_new_request_cancels_the_one_in_flight(client):
    uri = f"file:///tmp/{client.profile}/supersede.py"
    open_document(client, uri, "def g(items):\n    return len(\n")
    async with changed_settings(client, SLOW):
        index = len(client.statuses)
        slow = asyncio.ensure_future(client.text_document_inline_completion_async(inline_params(uri, 1, 15)))
        await busy_after(client, index)
    fast = await client.text_document_inline_completion_async(inline_params(uri, 1, 15))
    assert len((await asyncio.wait_for(slow, 5)).items) == 0
    assert fast.items
    assert any(m.message.startswith("fill cancelled after") for m in client.log_messages)


async def test_cancel_request_stops_denoising_within_one_step(client):
    uri = f"file:///tmp/{client.profile}/cancel.py"
    open_document(client, uri, "class Point:\n    def norm(self):\n        return (self.x ** 2 + \n")
    async with changed_settings(client, SLOW):
        index = len(client.statuses)
        msg_id = f"cancel-{client.profile}"
        pending = asyncio.ensure_future(
            client.protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION, inline_params(uri, 2, 33), msg_id=msg_id
            )
        )
        await busy_after(client, index)
        client.cancel_request(types.CancelParams(id=msg_id))
        with pytest.raises(JsonRpcRequestCancelled):
            await asyncio.wait_for(pending, 10)
        await wait_for_status(client, "ready", after=index, timeout=10)
    # The worker is free again at once: it stopped at the next step, not after 256.  Counted in
    # steps, not seconds: the tiny model's 256 steps take ~0.1 s, within any bound of wall time.
    steps = [m.message for m in client.log_messages if m.message.startswith("fill cancelled after")]
    assert steps and int(steps[-1].split()[3]) < 256


async def test_malformed_requests_get_an_answer(client):
    uri = f"file:///tmp/{client.profile}/malformed.py"
    open_document(client, uri, "x = 1\n")
    bad = {
        "textDocument": {"uri": uri},
        "position": {"line": "one", "character": 0},
        "context": {"triggerKind": 1},
    }
    with pytest.raises(JsonRpcInvalidParams):
        await send_raw_request(client, types.TEXT_DOCUMENT_INLINE_COMPLETION, bad, f"bad-{client.profile}")
    unknown = await client.text_document_inline_completion_async(inline_params("file:///tmp/nope.py", 0, 0))
    past_end = await client.text_document_inline_completion_async(inline_params(uri, 40, 0))
    assert len(unknown.items) == 0 and len(past_end.items) == 0
    completion = await client.text_document_completion_async(
        types.CompletionParams(text_document=types.TextDocumentIdentifier(uri="file:///tmp/nope.py"),
                               position=types.Position(line=0, character=0))
    )  # fmt: skip
    assert len(completion.items) == 0
    # A didChange that cannot be read may have changed any open document: they are out of sync
    # (tests/reliability/test_sync_divergence.py), the user is told once, and the server still answers.
    shown = len(client.messages)
    for _ in range(2):
        client.protocol._send_data(
            {"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": 5}}
        )
    still = await client.text_document_inline_completion_async(inline_params(uri, 0, 4))
    assert still is not None and len(still.items) == 0
    told = [m.message for m in client.messages[shown:] if "out of sync" in m.message]
    assert len(told) == 1, client.messages[shown:]  # one message for every document it concerns


async def test_invalid_settings_are_reported_and_the_server_keeps_working(client):
    uri = f"file:///tmp/{client.profile}/settings.py"
    open_document(client, uri, "def h(n):\n    return n * \n")
    shown = len(client.messages)
    async with changed_settings(client, {"steps": -3, "maxTokens": "many", "colour": "blue"}):
        await wait_for(lambda: len(client.messages) > shown, 10, "window/showMessage")
        message = client.messages[-1]
        assert message.type == types.MessageType.Warning
        assert "steps" in message.message and "maxTokens" in message.message and "colour" in message.message
        result = await client.text_document_inline_completion_async(inline_params(uri, 1, 15))
        assert result.items


async def test_document_contents_never_reach_the_logs(client):
    uri = f"file:///tmp/{client.profile}/secret.py"
    open_document(client, uri, f'API_KEY = "{SECRET}"\ndef call():\n    return \n')
    client.text_document_did_change(insert_change(uri, 2, 2, 11, f"{SECRET} + "))
    await client.text_document_inline_completion_async(inline_params(uri, 2, 11 + len(SECRET) + 3))
    bad = {"textDocument": {"uri": uri, "text": SECRET}, "position": {"line": SECRET, "character": 0}}
    with pytest.raises(JsonRpcInvalidParams):
        await send_raw_request(client, types.TEXT_DOCUMENT_INLINE_COMPLETION, bad, f"secret-{client.profile}")
    await asyncio.sleep(0.2)
    assert all(SECRET not in m.message for m in client.log_messages)
    assert SECRET not in client.log_file.read_text(encoding="utf-8")


async def test_selected_completion_info_is_extended_over_its_range(client):
    """Issue 46: VS Code's popup has ``path`` selected while ``os.pa`` is typed; each item starts
    with ``path`` and replaces the typed ``pa`` (the item's range), so it shows beside the popup.
    A range that does not hold the cursor is refused with InvalidParams."""
    uri = f"file:///tmp/{client.profile}/selected.py"
    open_document(client, uri, "import os\nroot = os.pa\n")
    word = types.Range(start=types.Position(line=1, character=10), end=types.Position(line=1, character=12))
    params = inline_params(uri, 1, 12, invoked=True)
    params.context.selected_completion_info = types.SelectedCompletionInfo(range=word, text="path")
    result = await client.text_document_inline_completion_async(params)
    assert result.items
    assert all(item.insert_text.startswith("path") for item in result.items)
    assert all(item.range == word for item in result.items)
    elsewhere = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=2))
    params.context.selected_completion_info = types.SelectedCompletionInfo(range=elsewhere, text="import")
    with pytest.raises(JsonRpcInvalidParams):
        await client.text_document_inline_completion_async(params)
