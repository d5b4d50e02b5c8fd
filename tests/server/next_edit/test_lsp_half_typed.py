"""Issue 63, items 4 and 5, through the real server: a half-typed rename is never offered, the
finished edit is (a pause, the word left, an explicit ask), a walk of applied next edits goes on
at once and stops at its function's end."""

from __future__ import annotations

import asyncio

from lsp_helpers import _plain, change_text, open_document, running_server, send_raw_request

from difill.server.features.next_edit.typing import PAUSE_S

METHOD = "textDocument/copilotInlineEdit"
AUTOMATIC, INVOKED = 2, 1
# The file: a line that assigns `requirement`, and its uses below.
SOURCE = (
    "def check(dep_chain):\n"
    "    requirement = parse(dep_chain[-1])\n"
    "    name = requirement.name\n"
    "    return distribution(requirement.name)\n"
)


async def ask(client, uri: str, version: int, at: tuple[int, int], trigger: int, msg_id: str) -> list[dict]:
    params = {
        "textDocument": {"uri": uri, "version": version},
        "position": {"line": at[0], "character": at[1]},
        "context": {"triggerKind": trigger},
    }
    return _plain(await send_raw_request(client, METHOD, params, msg_id))["edits"]


async def type_req(client, uri: str) -> None:
    """Double-click `requirement` on line 1 and type `req`, a keystroke a didChange, asking after
    each as a client that does not wait would: the half-typed name is offered nowhere."""
    change_text(client, uri, 2, 1, 4, 15, "r")  # the selection typed over
    assert await ask(client, uri, 2, (1, 5), AUTOMATIC, f"{uri}-r") == []
    change_text(client, uri, 3, 1, 5, 5, "e")
    assert await ask(client, uri, 3, (1, 6), AUTOMATIC, f"{uri}-re") == []
    change_text(client, uri, 4, 1, 6, 6, "q")
    assert await ask(client, uri, 4, (1, 7), AUTOMATIC, f"{uri}-req") == []


def places(edits: list[dict]) -> list[tuple[int, int, str]]:
    return [(e["range"]["start"]["line"], e["range"]["start"]["character"], e["text"]) for e in edits]


async def test_a_half_typed_rename_is_offered_nowhere_and_the_finished_one_is(tiny_model_dir):
    async with running_server(tiny_model_dir) as client:
        paused = "file:///tmp/next_edit/half_typed_paused.py"
        open_document(client, paused, SOURCE)
        await type_req(client, paused)
        await asyncio.sleep(PAUSE_S + 0.2)  # a pause: `req` is the name now
        assert places(await ask(client, paused, 4, (1, 7), AUTOMATIC, "paused")) == [(2, 11, "req"), (3, 24, "req")]

        left = "file:///tmp/next_edit/half_typed_left.py"
        open_document(client, left, SOURCE)
        await type_req(client, left)
        # The word left: the cursor moved to the line below, or back to the name's start.
        assert places(await ask(client, left, 4, (2, 4), AUTOMATIC, "moved"))[:1] == [(2, 11, "req")]
        assert places(await ask(client, left, 4, (1, 4), AUTOMATIC, "home"))[:1] == [(2, 11, "req")]

        asked = "file:///tmp/next_edit/half_typed_asked.py"
        open_document(client, asked, SOURCE)
        await type_req(client, asked)
        # Asked for (a key, or the clients' ask after Esc ends the word): answered at once.
        assert places(await ask(client, asked, 4, (1, 7), INVOKED, "invoked"))[:1] == [(2, 11, "req")]


TWO_FUNCTIONS = (
    "def grow(size):\n"
    "    size = size + 1\n"
    "    return scale(size, 2)\n"
    "\n"
    "def shrink(size):\n"
    "    return scale(size, 2)\n"
)


async def test_a_walk_of_applied_next_edits_goes_on_at_once_and_stops_at_the_function_end(tiny_model_dir):
    """Item 5: the client applies each next edit (Tab) and asks at once, automatically, with the
    cursor at the end of the name it applied: no keystroke, so it is answered; the walk renames
    grow()'s uses and then stops, though shrink() has its own `size` right below."""
    async with running_server(tiny_model_dir) as client:
        uri = "file:///tmp/next_edit/walk.py"
        open_document(client, uri, TWO_FUNCTIONS)
        change_text(client, uri, 2, 0, 9, 13, "n")  # grow's parameter, renamed in one change
        await asyncio.sleep(PAUSE_S + 0.2)
        version, applied, cursor = 2, [], (0, 10)
        for step in range(4):
            edits = await ask(client, uri, version, cursor, AUTOMATIC, f"walk-{step}")
            if not edits:
                break
            first = edits[0]
            line, start, end = first["range"]["start"]["line"], first["range"]["start"]["character"], first["range"]["end"]["character"]
            version += 1
            change_text(client, uri, version, line, start, end, first["text"])  # Tab: applied as answered
            applied.append((line, start))
            cursor = (line, start + len(first["text"]))
        assert applied == [(1, 4), (1, 8), (2, 17)]  # every use in grow(), nearest first
        assert step == 3  # and then nothing: shrink()'s `size` is another function's
