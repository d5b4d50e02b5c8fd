"""End to end: the real ``difill serve`` subprocess on the real-shape fixture (tests/real_shape.py:
DiffusionGemma-26B-A4B's structure with a 24-token sliding window, a Gemma-4-like tokenizer).

The model is random, so these tests check the protocol, not the text: answers without errors,
a second fill after a one-character edit of a prefix far longer than the sliding window (the
prefix cache's crop of the sliding layers used to raise there), edits pinned to the document's
version, and no special token of the tokenizer in anything shown to the user.
"""

from __future__ import annotations

import pytest
import pytest_asyncio
from lsp_helpers import changed_settings, inline_params, insert_change, open_document, running_server
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from real_shape import GEMMA_SPECIALS, GEMMA_UNUSED, REAL_SLIDING_WINDOW_FOR_TESTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

# ~300 tokens of the fixture's tokenizer before the cursor: over ten sliding windows.
HANDLERS = "".join(
    f"def handler_{i}(request, value={i}):\n    return request.get(value) + {i}\n" for i in range(8)
)
CURSOR_LINE = "    result = handler_3(request, val"
TEXT = HANDLERS + "\n\ndef main(request, value):\n" + CURSOR_LINE + "\n    return result\n"
LINE = TEXT.splitlines().index(CURSOR_LINE)
# Few tokens and steps: each fill's LM head spans the 262,144-row vocabulary on a shared CPU.
SETTINGS = {"maxTokens": 8, "steps": 4}
REQUEST_FAILED = -32803


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gemma_client(gemma_model_dir, tmp_path_factory):
    log_file = tmp_path_factory.mktemp("logs") / "gemma.log"
    async with running_server(
        gemma_model_dir, "visual_studio_code", SETTINGS, extra_args=("--log-file", str(log_file))
    ) as client:
        client.log_file = log_file
        yield client


def assert_no_special_tokens(texts: list[str]) -> None:
    for text in texts:
        for token in (*GEMMA_SPECIALS, *GEMMA_UNUSED):
            assert token not in text, f"{token!r} shown to the user in {text!r}"
        assert "<unused" not in text, text


def model_runs(client) -> int:
    return sum(s["state"] == "busy" for s in client.statuses)


async def test_the_document_is_far_longer_than_the_sliding_window(gemma_model_dir):
    from difill.engine.model import load_model

    tokenizer = load_model(gemma_model_dir, device="cpu").tokenizer
    prefix = TEXT[: TEXT.index(CURSOR_LINE) + len(CURSOR_LINE)]
    assert len(tokenizer(prefix)["input_ids"]) > 10 * REAL_SLIDING_WINDOW_FOR_TESTS


def backspace(uri: str, version: int, line: int, character: int) -> types.DidChangeTextDocumentParams:
    at = types.Range(
        start=types.Position(line=line, character=character - 1),
        end=types.Position(line=line, character=character),
    )
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangePartial(range=at, text="")],
    )


async def fill_at(client, uri: str, line: int, column: int) -> list[str]:
    """An invoked inline completion that must reach the model and answer a list, no error."""
    runs = model_runs(client)
    answer = await client.text_document_inline_completion_async(inline_params(uri, line, column))
    assert isinstance(answer, types.InlineCompletionList) and isinstance(answer.items, list | tuple)
    assert model_runs(client) > runs, "the request did not reach the model"
    cursor = types.Position(line=line, character=column)
    assert all(item.range == types.Range(start=cursor, end=cursor) for item in answer.items)
    texts = [item.insert_text for item in answer.items]
    assert_no_special_tokens(texts)
    return texts


async def test_fills_after_one_character_edits_of_a_long_prefix_answer(gemma_client):
    """Fill, change one character, fill again: each later fill cuts the prefix cache back past
    tokens of a prefix over ten windows long, which raised in the sliding layers before the fix.

    The cursor follows a space, so the edits change prefix tokens (a partial word at the cursor
    is healed in the canvas, and typing into it would not touch the prefix cache).  First in
    this module: the first fill starts from an empty prefix cache.
    """
    client = gemma_client
    uri = "file:///tmp/real_shape/second_fill.py"
    text = TEXT.replace(CURSOR_LINE, CURSOR_LINE[: -len("val")])
    column = len(CURSOR_LINE) - len("val")  # after "request, "
    open_document(client, uri, text, version=1)
    await fill_at(client, uri, LINE, column)
    # Backspace the space before the cursor: the prefix's last token changes.
    client.text_document_did_change(backspace(uri, 2, LINE, column))
    await fill_at(client, uri, LINE, column - 1)
    # Type one character in the line above ("def main_("): a cut a few tokens deep.
    above = text.splitlines()[LINE - 1]
    client.text_document_did_change(insert_change(uri, 3, LINE - 1, above.index("("), "_"))
    await fill_at(client, uri, LINE, column - 1)


async def test_rewrite_selection_applies_at_the_documents_version(gemma_client):
    """difill.editSelection on two lines of the long document: its applyEdit is pinned to the
    document's version.  A random model may write nothing usable (a rewrite that starts with half
    a UTF-8 sequence is cut to nothing): the server then answers RequestFailed, never an edit."""
    client = gemma_client
    uri = "file:///tmp/real_shape/edit.py"
    open_document(client, uri, TEXT, version=9)
    start = TEXT.splitlines().index("def handler_6(request, value=6):")
    rng = types.Range(
        start=types.Position(line=start, character=0), end=types.Position(line=start + 2, character=0)
    )
    argument = {
        "uri": uri,
        "range": client.protocol._converter.unstructure(rng),
        "version": 9,
        "strength": 0.3,
    }
    before = len(client.applied_edits)
    try:
        # The edit gate is off: a random model's edit is noise it holds back (test_lsp_edit_gate.py).
        async with changed_settings(client, {"editGate": False}):
            answer = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="difill.editSelection", arguments=[argument])
            )
    except JsonRpcException as refused:
        assert refused.code == REQUEST_FAILED and "empty rewrite" in refused.message, refused
        assert len(client.applied_edits) == before
    else:
        assert answer["applied"] and answer["edits"] >= 1  # the fixture's seed writes text here
        (params,) = client.applied_edits[before:]
        (change,) = params.edit.document_changes  # the VS Code profile takes documentChanges
        assert change.text_document.uri == uri and change.text_document.version == 9
        assert_no_special_tokens([edit.new_text for edit in change.edits])
        for edit in change.edits:
            assert start <= edit.range.start.line and edit.range.end.line <= start + 2
    after = await client.text_document_inline_completion_async(inline_params(uri, LINE, len(CURSOR_LINE)))
    assert isinstance(after.items, list | tuple)
