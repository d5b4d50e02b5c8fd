"""Issue 35, part 3: the model path of next edits through the real server (the tiny random model):
drafts first as served, every edit for the version it names, a change during the run cancels it."""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import (
    _plain,
    change_text,
    changed_settings,
    open_document,
    send_raw_request,
    wait_for,
    wait_for_status,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")

METHOD = "textDocument/copilotInlineEdit"
SOURCE = "".join(f"def f{i}(width, height):\n    return width * height + {i}\n\n" for i in range(8))


# The asks are made past the comma after the renamed `w`: a cursor still at its end is a word
# that may be typed on, and an automatic ask there gets nothing (issue 63, typing.py).
def _params(uri: str, version: int, line: int, character: int) -> dict:
    return {"textDocument": {"uri": uri, "version": version}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 2}}  # fmt: skip


async def test_as_served_the_drafts_come_first_and_every_edit_names_the_version(client):
    uri = f"file:///tmp/next_edit/model_{client.profile}.py"
    open_document(client, uri, SOURCE)
    change_text(client, uri, 2, 0, 7, 12, "w")  # f0(width -> f0(w
    async with changed_settings(client, {"nextEdit": "drafts"}):
        drafts = _plain(
            await send_raw_request(client, METHOD, _params(uri, 2, 0, 9), f"ne-d-{client.profile}")
        )
    busy = len(client.statuses)
    async with changed_settings(client, {"nextEdit": "on"}):
        served = _plain(
            await send_raw_request(client, METHOD, _params(uri, 2, 0, 9), f"ne-on-{client.profile}")
        )
    assert drafts["edits"] and served["edits"][: len(drafts["edits"])] == drafts["edits"]
    assert all(e["textDocument"] == {"uri": uri, "version": 2} for e in served["edits"])
    await wait_for_status(client, "busy", after=busy)  # the model ran (on the worker), as `on` says


async def test_a_change_while_the_model_runs_cancels_it_and_the_answer_is_refused(client):
    uri = f"file:///tmp/next_edit/cancel_{client.profile}.py"
    open_document(client, uri, SOURCE)
    refused, version = None, 1
    async with changed_settings(client, {"nextEdit": "model", "steps": 1024}):
        # The tiny model's run takes a few hundred milliseconds: on a loaded machine it may end
        # before the user's next change reaches the server, and then its answer (for the version
        # it names) is right.  Each try renames another function's parameter, until a change
        # lands while the model runs; if none ever is refused, the test fails.
        for k in range(5):
            version += 1
            change_text(client, uri, version, 3 * k, 7, 12, "w")  # fk(width -> fk(w
            seen = len(client.statuses)
            pending = asyncio.ensure_future(
                send_raw_request(
                    client, METHOD, _params(uri, version, 3 * k, 9), f"ne-c-{client.profile}-{k}"
                )
            )
            await wait_for(
                lambda seen=seen: any(s.get("state") == "busy" for s in client.statuses[seen:]),
                30,
                "the model run",
            )
            version += 1
            change_text(client, uri, version, 3 * k + 1, 11, 16, "w")  # the user types on
            try:
                await asyncio.wait_for(pending, 30)
            except Exception as err:  # noqa: BLE001 - the refusal is what is looked for
                refused = err
                break
        assert refused is not None, "no change landed while the model ran in 5 tries"
        assert getattr(refused, "code", None) == -32801  # ContentModified: computed for an older version
        await wait_for_status(client, "ready", after=seen)  # the run stopped; the model is free
        # The new version is answered (a change of the user's own edit is never offered back).
        again = _plain(
            await send_raw_request(
                client, METHOD, _params(uri, version, 3 * k + 1, 12), f"ne-c2-{client.profile}"
            )
        )
    assert all(e["textDocument"]["version"] == version for e in again["edits"])
