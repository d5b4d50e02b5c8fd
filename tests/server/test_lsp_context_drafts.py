"""Drafts from the workspace reach ghost text through the real server: another file's text after
the same tokens is what a typist is shown (``contextDrafts`` "show"), or it seeds the canvas."""

from __future__ import annotations

import asyncio

import pytest
from lsp_helpers import inline_params, open_document, running_server
from lsprotocol import types

pytestmark = pytest.mark.slow

UTIL = (
    "def compute_total(items, tax):\n    return sum(items) * (1 + tax)\n\ntotal = compute_total(items, tax)\n"
)


async def test_a_workspace_file_drafts_the_ghost_text(tiny_model_dir, tmp_path):
    (tmp_path / "util.py").write_text(UTIL)
    # minTokenProb 1: the random model's own text never shows, so the draft does whatever its match.
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0}
    async with running_server(tiny_model_dir, init_options=options, root_uri=tmp_path.as_uri()) as client:
        uri = (tmp_path / "main.py").as_uri()
        open_document(client, uri, "from util import compute_total\n\nvalue = compute_")
        for _ in range(600):  # the index builds in the background; the server answers meanwhile
            result = await client.text_document_inline_completion_async(
                inline_params(uri, 2, 16, invoked=False)
            )
            if result.items:
                break
            await asyncio.sleep(0.1)  # the index and jedi (on import lines) answer in the background
        assert [item.insert_text for item in result.items] == ["total(items, tax)"]
        cursor = types.Position(line=2, character=16)
        assert result.items[0].range == types.Range(start=cursor, end=cursor)


async def test_off_shows_the_model_alone(tiny_model_dir, tmp_path):
    (tmp_path / "util.py").write_text(UTIL)
    options = {"workspaceIndex": True, "contextDrafts": "off", "minTokenProb": 1.0}  # no model text shows
    async with running_server(tiny_model_dir, init_options=options, root_uri=tmp_path.as_uri()) as client:
        uri = (tmp_path / "main.py").as_uri()
        open_document(client, uri, "from util import compute_total\n\nvalue = compute_")
        result = await client.text_document_inline_completion_async(inline_params(uri, 2, 16, invoked=False))
        assert not result.items


async def test_an_import_line_is_completed_with_the_names_the_file_lacks(tiny_model_dir, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "util.py").write_text(UTIL)
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0}
    async with running_server(tiny_model_dir, init_options=options, root_uri=tmp_path.as_uri()) as client:
        uri = (tmp_path / "pkg" / "main.py").as_uri()
        open_document(client, uri, "from pkg.u\n\nvalue = compute_total([1, 2], 0.2)\n")
        for _ in range(600):  # the index builds in the background
            result = await client.text_document_inline_completion_async(
                inline_params(uri, 0, 10, invoked=False)
            )
            if result.items:
                break
            await asyncio.sleep(0.1)  # the index and jedi (on import lines) answer in the background
        assert [item.insert_text for item in result.items] == ["til import compute_total"]


async def test_the_cursor_is_not_offered_the_code_below_it(tiny_model_dir, tmp_path):
    """The cursor's own place is no draft: at the start of a line, nothing repeats the code below
    it (the index once offered the line after the cursor's, as an 8-token "match")."""
    (tmp_path / "util.py").write_text(UTIL)  # a workspace for the index to build
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0}  # drafts only
    text = "import os\n\n\ndef main():\n    path = os.getcwd()\n    print(path)\n    return path\n"
    async with running_server(tiny_model_dir, init_options=options, root_uri=tmp_path.as_uri()) as client:
        uri = (tmp_path / "main.py").as_uri()
        open_document(client, uri, text)
        for _ in range(20):  # the index builds in the background meanwhile
            result = await client.text_document_inline_completion_async(
                inline_params(uri, 5, 0, invoked=False)
            )
            assert not [item for item in result.items if "return path" in str(item.insert_text)]


async def test_a_change_beyond_the_cache_window_or_in_another_file_changes_the_answer(
    tiny_model_dir, tmp_path
):
    # Issue 52, item 2: the cache keyed on 4 KB either side of the cursor; import drafts read the
    # whole document, so a use added 5 KB below still got the cached answer.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "util.py").write_text(UTIL + "\n\ndef compute_rate(x):\n    return x\n")
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 1.0}
    async with running_server(tiny_model_dir, init_options=options, root_uri=tmp_path.as_uri()) as client:
        uri = (tmp_path / "pkg" / "main.py").as_uri()
        filler = "\n" + "x = 1\n" * 1000  # 6 KB between the import line and the uses
        text = "from pkg.u" + filler + "value = compute_total([1, 2], 0.2)\n"
        open_document(client, uri, text)

        async def ask() -> list[str]:
            for _ in range(600):  # the index builds in the background
                result = await client.text_document_inline_completion_async(
                    inline_params(uri, 0, 10, invoked=False)
                )
                if result.items:
                    break
                await asyncio.sleep(0.1)
            return [item.insert_text for item in result.items]

        assert await ask() == ["til import compute_total"]
        last = text.count("\n")
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=last, character=0), end=types.Position(line=last, character=0)),
                text="rate = compute_rate(2)\n",
            )],
        ))  # fmt: skip
        assert await ask() == ["til import compute_rate, compute_total"]


async def test_an_import_line_never_shows_a_module_that_does_not_exist(tiny_model_dir, tmp_path):
    """Issue 52, item 3: on an import line the model's text shows only when it writes a name that
    exists (jedi's list: the workspace's and the environment's modules, a module's names).  The
    tiny random model writes noise: after a module that exists nowhere, nothing is shown, while
    the same server shows its text on other lines."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "util.py").write_text(UTIL)
    options = {"workspaceIndex": True, "contextDrafts": "show", "minTokenProb": 0.0}
    async with running_server(tiny_model_dir, init_options=options, root_uri=tmp_path.as_uri()) as client:
        uri = (tmp_path / "pkg" / "main.py").as_uri()
        open_document(client, uri, "from pkg.u\nfrom nowhere_pkg.wait import \nx = 1 + \ny = compute_total([1], 0)\n")
        for _ in range(600):  # the index builds, and jedi loads, in the background
            result = await client.text_document_inline_completion_async(inline_params(uri, 0, 10, invoked=False))
            if result.items:
                break
            await asyncio.sleep(0.1)  # the index and jedi (on import lines) answer in the background
        assert [item.insert_text for item in result.items] == ["til import compute_total"]
        for _ in range(3):
            nowhere = await client.text_document_inline_completion_async(inline_params(uri, 1, 29, invoked=True))
            assert len(nowhere.items) == 0
        elsewhere = await client.text_document_inline_completion_async(inline_params(uri, 2, 8, invoked=True))
        assert elsewhere.items  # the model's text, where no list applies
